"""The recorder's ring (record/ring.py) and incidents (record/incident.py, record/encode.py) on raw
records made here, no kernel needed: the ring never above --keep on disk as du counts it, aged by
--history, every drop counted, kept across a restart; an incident written by its encoder process as
an ordinary trace holding exactly the records of its span, across two recorder runs."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from helpers import raw_io, raw_sync

from bpf.btf import kernel_btf
from bpf.record import InflightFixes, ReqBits
from iofp.contract import TraceMeta, open_trace
from record.incident import PENDING, Fired, Incidents
from record.ring import Ring, disk_bytes

NS = 10**9
WALL0 = 1_800_000_000 * NS
DEV = (7 << 20) | 9


@pytest.fixture(scope="module")
def bits() -> ReqBits:
    return ReqBits.from_btf(kernel_btf())


def interval(t0: int, start_s: int, n: int, seed: int = 0):
    """`n` requests issued and completed within second `start_s` of a session whose monotonic clock
    started at t0 (random offsets: records that compress about as the kernel's do)."""
    rng = np.random.default_rng(seed + start_s)
    issue = t0 + start_s * NS + np.sort(rng.integers(0, NS // 2, n))
    io = raw_io(issue, rng.integers(10_000, 500_000, n), rng.choice(["read", "write"], n))
    io["sector"] = rng.integers(0, 1 << 30, n)
    sync = raw_sync(issue[:2], [50_000, 60_000])
    return io, sync, ({"lost_io_ringbuf": 0}, {"completed_unissued": 0}), InflightFixes()


def session(ring: Ring, bits: ReqBits, name: str, t0: int, wall0: int):
    meta = TraceMeta(capture_start_ns=wall0, devices={"loop9": {}})
    return ring.begin(name, t0, bits, {DEV: "loop9"}, meta)


def test_the_ring_stays_within_keep_on_disk_and_counts_every_drop(tmp_path, bits):
    keep = 300 << 10
    ring = Ring(tmp_path, keep, 3600 * NS)
    session(ring, bits, "s1", 5 * NS, WALL0)
    seen, most = set(), 0
    for s in range(40):
        ring.add(interval(5 * NS, s, 2000), WALL0 + s * NS, WALL0 + (s + 1) * NS, {})
        seen |= {p.name for p in (ring.dir / "s1" / "spool").glob("0*")}
        most = max(most, disk_bytes(ring.dir))
        assert disk_bytes(ring.dir) == ring.bytes <= keep
    left = {p.name for p in (ring.dir / "s1" / "spool").glob("0*")}
    assert ring.dropped_segments == len(seen - left) > 20 and most > keep * 0.7
    assert ring.dropped_records == (len(seen) - len(left)) * 2002


def test_the_ring_keeps_history_and_a_restart_keeps_the_ring(tmp_path, bits):
    ring = Ring(tmp_path, 1 << 30, 10 * NS)
    session(ring, bits, "s1", 5 * NS, WALL0)
    for s in range(25):
        ring.add(interval(5 * NS, s, 100), WALL0 + s * NS, WALL0 + (s + 1) * NS, {})
    assert [seg.end_ns - WALL0 for seg in ring.segments] == [s * NS for s in range(15, 26)]
    (ring.dir / "s1" / "spool" / ".000026.tmp").mkdir()  # a segment half-written when it was killed
    again = Ring(tmp_path, 1 << 30, 10 * NS)
    again.load()
    assert [s.path.name for s in again.segments] == [s.path.name for s in ring.segments]
    assert not (ring.dir / "s1" / "spool" / ".000026.tmp").exists() and again.bytes == disk_bytes(ring.dir)
    session(again, bits, "s2", 900 * NS, WALL0 + 30 * NS)
    for s in range(30, 45):
        again.add(interval(900 * NS, s - 30, 100), WALL0 + s * NS, WALL0 + (s + 1) * NS, {})
    assert not (ring.dir / "s1").exists() and {s.session.name for s in again.segments} == {"s2"}


def test_an_incident_across_two_recorder_runs_is_an_ordinary_trace_of_its_span(tmp_path, bits):
    ring = Ring(tmp_path, 1 << 30, 60 * NS)
    incidents = Incidents(tmp_path, ring, history_ns=60 * NS, after_ns=3 * NS, cooldown_ns=0, max_incidents=5)
    session(ring, bits, "s1", 5 * NS, WALL0)
    for s in range(4):
        ring.add(interval(5 * NS, s, 300), WALL0 + s * NS, WALL0 + (s + 1) * NS, {"loss": {"lost_x": 1}})
    session(ring, bits, "s2", 77 * NS, WALL0 + 10 * NS)  # restarted 10 s later, another monotonic origin
    segs = [ring.add(interval(77 * NS, s, 300), WALL0 + (10 + s) * NS, WALL0 + (11 + s) * NS, {})
            for s in range(2)]  # fmt: skip
    path = incidents.fire(Fired("trigger", WALL0 + 12 * NS, "read.p99<=1ms", ["read p99 2 ms > 1 ms"]), WALL0)
    for s in range(2, 6):  # --after: 3 s more, then it closes
        seg = ring.add(interval(77 * NS, s, 300), WALL0 + (10 + s) * NS, WALL0 + (11 + s) * NS, {})
        incidents.segment(seg, WALL0)
    assert incidents.open is None and segs
    incidents.reap(wait=True)
    assert incidents.written == [path] and not (path / PENDING).exists()
    trace = open_trace(path)
    assert trace.num_rows("io") == 9 * 300 and trace.num_rows("sync") == 9 * 2  # 4 + 2 history, 3 after
    meta = trace.meta
    assert meta.source == "record" and meta.capture_start_ns == WALL0 and meta.loss == {"lost_x": 4}
    assert meta.extra["incident"]["failures"] == ["read p99 2 ms > 1 ms"]
    assert meta.extra["incident"]["history_segments"] == 6
    ts = np.concatenate([b["ts_ns"].to_numpy() for b in trace.batches("io")])
    # each run's requests at their wall-clock place: s1's from 0 s, s2's from 10 s
    assert ts.min() >= 0 and ((ts // NS) == 10).sum() == 300 and ((ts // NS) == 4).sum() == 0


def test_an_encoder_killed_between_files_loses_no_request_and_encodes_none_twice(tmp_path, bits, monkeypatch):
    from record import encode, incident

    class NotStarted:  # the encoder is driven here, in this process, step by step
        def poll(self):
            return 0

    monkeypatch.setattr(incident, "start_encoder", lambda path: NotStarted())
    monkeypatch.setattr(encode, "FILE_ROWS", 700)
    ring = Ring(tmp_path, 1 << 30, 60 * NS)
    incidents = Incidents(tmp_path, ring, history_ns=60 * NS, after_ns=0, cooldown_ns=0, max_incidents=5)
    session(ring, bits, "s1", 5 * NS, WALL0)
    for s in range(6):
        ring.add(interval(5 * NS, s, 300), WALL0 + s * NS, WALL0 + (s + 1) * NS, {"loss": {"lost_x": 1}})
    path = incidents.fire(Fired("SIGUSR1", WALL0 + 6 * NS), WALL0)
    enc = encode._Encoder(path)
    todo = enc.pending()
    first = [seg for _, seg in todo[:3]]
    aside = tmp_path / "aside"
    for seg in first:  # kept aside: as if killed after the file was written, before these were removed
        shutil.copytree(seg, aside / seg.name)
    for name, seg in todo[:4]:
        enc.encode(name, seg)  # the third makes a file (900 rows >= 700); the fourth's rows are held
    assert not any(seg.exists() for seg in first) and todo[3][1].exists()
    for seg in first:
        shutil.copytree(aside / seg.name, seg)
    del enc  # killed: the fourth segment's rows were only in memory
    (path / PENDING / "closed").write_text("")
    again = encode._Encoder(path)
    left = again.pending()
    assert [seg.name for _, seg in left] == [seg.name for _, seg in todo[3:]]
    assert not any(seg.exists() for seg in first)  # in a file already: removed, not encoded again
    for name, seg in left:
        again.encode(name, seg)
    again.finish()
    trace = open_trace(path)
    assert trace.num_rows("io") == 6 * 300 and trace.num_rows("sync") == 6 * 2
    assert trace.meta.loss == {"lost_x": 6} and "encoder" not in trace.meta.extra
