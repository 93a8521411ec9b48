"""The recorder's sink (record/recorder.py) fed the capture's intervals made here, no kernel: a steady
stream with a latency step saves exactly one incident (an ordinary trace of the step and the history
before it, every record once), the summary holds every record once; a trigger inside --after extends
the incident, --cooldown and --max-incidents refuse the next ones (counted); --dump's signal, --at and a
full ring are handled as a running recorder meets them."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta

import numpy as np
import pytest
from helpers import raw_io, raw_sync, run_iofp

from bpf.btf import kernel_btf
from bpf.record import InflightFixes, ReqBits
from iofp import slo
from iofp.contract import TraceMeta, open_trace
from record import RecordOptions, read_summary
from record.incident import Incidents
from record.recorder import Recorder
from record.ring import Ring

NS = 10**9
T0 = 50 * NS  # the capture's monotonic start
DEV = (7 << 20) | 9


@pytest.fixture(scope="module")
def bits() -> ReqBits:
    return ReqBits.from_btf(kernel_btf())


def second(s: int, slow: bool, n: int = 200):
    """One second of reads (2 ms each in the step, 50 µs otherwise) and a commit, issued in second s."""
    issue = T0 + s * NS + np.arange(n) * (NS // n // 2)
    io = raw_io(issue, [2_000_000 if slow else 50_000] * n, ["read"] * n)
    return io, raw_sync([T0 + s * NS + 7], [80_000]), ({"lost_io_ringbuf": 0}, {"completed_unissued": s})


def recorder(tmp_path, wall0, **opts) -> Recorder:
    o = RecordOptions(output=tmp_path, devices=["loop9"], history_ns=20 * NS, after_ns=5 * NS,
                      cooldown_ns=0, **opts)  # fmt: skip
    ring = Ring(tmp_path, o.keep_bytes, o.history_ns)
    incidents = Incidents(tmp_path, ring, history_ns=o.history_ns, after_ns=o.after_ns,
                          cooldown_ns=o.cooldown_ns, max_incidents=o.max_incidents)  # fmt: skip
    return Recorder(o, ring, incidents)


def test_a_latency_step_saves_one_incident_of_the_step_and_its_history(tmp_path, bits):
    wall0 = 1_800_000_000 * NS - T0  # wall clock = monotonic + this
    rec = recorder(tmp_path, wall0, trigger=slo.parse("read.p99<=1ms"), for_ns=2 * NS)
    names = {DEV: "loop9", DEV + 1: "loop10"}  # the capture names every block device; loop9 is recorded
    rec.start(T0, bits, names, TraceMeta(capture_start_ns=T0 + wall0, devices={"loop9": {}}))
    for s in range(40):
        io, sync, counts = second(s, slow=15 <= s < 18)
        rec.put((io, sync, counts, InflightFixes()), T0 + (s + 1) * NS + 1000, last=s == 39)
    summary = rec.finish("")
    (incident,) = rec.incidents.written
    trace = open_trace(incident)
    inc = trace.meta.extra["incident"]
    # fired at the end of the second slow window (held 2 s), the failure in compare's words
    assert inc["window_end_ns"] == T0 + wall0 + 17 * NS and inc["failures"] == ["read p99 2.00 ms > 1.00 ms"]
    # history: every second before it (seconds 0-16: the ring holds 20 s), and the 5 s after (17-21)
    assert trace.num_rows("io") == 22 * 200 and trace.num_rows("sync") == 22
    assert trace.meta.capture_start_ns == T0 + wall0
    assert trace.meta.counts["completed_unissued"] == 21  # the counter's growth over those 22 seconds
    rows = read_summary(tmp_path).to_pylist()
    assert sum(r["count"] for r in rows if r["op"] == "read") == 40 * 200 == summary.io_events
    assert sum(r["count"] for r in rows if r["op"] == "write") == 39  # the unissued barriers, as writes
    assert summary.seconds == 40 and summary.late == 0 and summary.suppressed == {}


def test_a_request_to_save_now_and_a_full_disk_are_met_as_a_running_recorder_meets_them(tmp_path, bits):
    wall0 = 1_800_000_000 * NS - T0
    rec = recorder(tmp_path, wall0)
    rec.start(T0, bits, {DEV: "loop9"}, TraceMeta(capture_start_ns=T0 + wall0, devices={"loop9": {}}))
    io, sync, counts = second(0, slow=False)
    rec.put((io, sync, counts, InflightFixes()), T0 + NS)
    rec.dump_asked.set()  # SIGUSR1
    rec.put((io, sync, counts, InflightFixes()), T0 + 2 * NS)
    assert rec.incidents.open is not None and rec.incidents.open.doc.reason == "SIGUSR1"
    rec.ring._spool.dir = tmp_path / "gone" / "nowhere"  # the disk refuses the next segment
    rec.put((io, sync, counts, InflightFixes()), T0 + 3 * NS, last=True)
    summary = rec.finish("SIGTERM")
    assert summary.ring["dropped_segments"] == 1 and summary.ring["dropped_records"] == 201
    assert rec.incidents.written and open_trace(rec.incidents.written[0]).meta.extra["incident"]["cut"] == (
        "stopped by SIGTERM before --after ended"
    )


def run(rec: Recorder, bits: ReqBits, wall0: int, slow: set[int], seconds: int = 40) -> None:
    """`seconds` of second() into the recorder, those in `slow` slow."""
    rec.start(T0, bits, {DEV: "loop9"}, TraceMeta(capture_start_ns=T0 + wall0, devices={"loop9": {}}))
    for s in range(seconds):
        io, sync, counts = second(s, slow=s in slow)
        rec.put((io, sync, counts, InflightFixes()), T0 + (s + 1) * NS + 1000, last=s == seconds - 1)


def test_a_trigger_inside_after_extends_it_and_cooldown_and_max_incidents_bound_the_next(tmp_path, bits):
    # the recorder's clock: wall = now at second 0 (windows fall on whole seconds), so that --cooldown
    # (counted from the real time of the close) applies
    wall0 = time.time_ns() // NS * NS - T0
    rec = recorder(tmp_path / "a", wall0, trigger=slo.parse("read.p99<=1ms"))
    rec.incidents.cooldown_ns = 120 * NS
    run(rec, bits, wall0, slow={10, 13, 30})
    summary = rec.finish("")
    (incident,) = rec.incidents.written
    inc = open_trace(incident).meta.extra["incident"]
    # fired at the end of second 10, extended by second 13's window (inside --after 5 s) to 19 s
    assert inc["window_end_ns"] == T0 + wall0 + 11 * NS and inc["end_ns"] == T0 + wall0 + 19 * NS
    assert [t["window_end_ns"] for t in inc["triggers"]] == [T0 + wall0 + 14 * NS]
    assert open_trace(incident).num_rows("io") == 19 * 200  # seconds 0-18: history, step, after, step, after
    # second 30's step came within --cooldown of the close: counted, not saved
    assert summary.suppressed == {"within --cooldown 120s of the last incident": 1}
    rec = recorder(tmp_path / "b", wall0, trigger=slo.parse("read.p99<=1ms"), max_incidents=1)
    run(rec, bits, wall0, slow={10, 30})
    full = f"--max-incidents 1 reached in {tmp_path / 'b' / 'incidents'}; move some away"
    assert rec.finish("").suppressed == {full: 1}
    assert len(rec.incidents.written) == 1


def test_an_at_time_saves_an_incident_when_it_comes(tmp_path, bits):
    now = datetime.now()
    if (now + timedelta(seconds=8)).date() != now.date():
        time.sleep(9)  # --at is a time of day: not across midnight
        now = datetime.now()
    at = (now + timedelta(seconds=6)).replace(microsecond=0)
    wall0 = int(now.timestamp()) * NS - T0
    rec = recorder(tmp_path, wall0, at=[f"{at:%H:%M:%S}"])
    run(rec, bits, wall0, slow=set(), seconds=20)
    rec.finish("")
    (incident,) = rec.incidents.written
    inc = open_trace(incident).meta.extra["incident"]
    assert inc["reason"] == f"at {at:%H:%M:%S}" and inc["failures"] == []
    # saved from the end of the first interval at or past the time (the sink's intervals end 1 µs past
    # each second here), with --after (5 s) after it
    assert inc["window_end_ns"] == int(at.timestamp()) * NS + 1000
    assert inc["end_ns"] == inc["window_end_ns"] + 5 * NS


def test_a_surge_incident_fingerprints_with_its_triggering_window_in_a_spike(tmp_path, bits):
    """An incident is an ordinary trace: `iofp fingerprint` of a surge's (iops<=N) finds the windows
    that fired it as its spike, by the project's one regime rule (iofp/regimes.py: a rate rule; a
    latency step with no change of rate is no spike there, and the report's timeline draws it)."""
    wall0 = 1_800_000_000 * NS - T0
    rec = recorder(tmp_path, wall0, trigger=slo.parse("iops<=1000"), for_ns=2 * NS)
    rec.start(T0, bits, {DEV: "loop9"}, TraceMeta(capture_start_ns=T0 + wall0, devices={"loop9": {}}))
    for s in range(40):
        io, sync, counts = second(s, slow=False, n=2000 if 15 <= s < 18 else 200)
        rec.put((io, sync, counts, InflightFixes()), T0 + (s + 1) * NS + 1000, last=s == 39)
    rec.finish("")
    (incident,) = rec.incidents.written
    inc = open_trace(incident).meta.extra["incident"]
    # 2,000 reads and the second's unissued barrier (a write), held 2 s: fired at the end of second 16
    assert inc["failures"] == ["2,001 IOPS > 1,000"] and inc["window_end_ns"] == T0 + wall0 + 17 * NS
    code, _, err = run_iofp("fingerprint", str(incident), "-o", str(tmp_path / "fp.json"))
    assert code == 0, err
    regimes = json.loads((tmp_path / "fp.json").read_text())["regimes"]
    (spike,) = regimes["spikes"]
    # windows from the first request (second 0, 50 s into the capture's clock): the surge is 15-18 s
    assert (spike["start_s"], spike["end_s"]) == (15.0, 18.0) and regimes["spike_windows"] == 3
