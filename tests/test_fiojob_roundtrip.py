"""The proof of `iofp fio-job`: for every sample and shared trace, its job runs on a RAM loop device
while `iofp capture` records it, the capture is fingerprinted and `iofp diff --tolerances` compares
it with the original. Every demand metric must come back within its tolerance, except the ones
named below, each with the reason (docs/fio-job.md has the same table).

Runtimes (CI time): 20 s commit-heavy, 30 s each market-open phases, 60 s mysql, 90 s mssql, 5 s
tpcc-small: ~4 min of fio, ~6 min with the captures' start and stop and the fingerprints.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import REPO, SHARED_TRACES, is_root, needs_fio
from helpers import MEASURE_NICE, close, import_trace, run_iofp
from lab import RAM, loop_device

from bench.fiojob_roundtrip import RATE_KEYS, captured_fio, judge, round_trip
from fingerprint.tolerance import figures
from iofp import fingerprint_doc as fd
from iofp import host_evidence
from replay import fiojob

SAMPLES = REPO / "samples" / "fingerprints"
FOOTPRINT = "footprint"  # blocks touched grow with the I/Os issued: a short run of a long trace touches fewer
# (name, fingerprint source, regime, runtime, metrics that cannot be met at that runtime -> why)
CASES = {
    "commit-heavy": ("sample", "whole", "20s", {}),
    "market-open": ("sample", "phases", "30s", {}),
    "market-open-q2": ("sample", "phases", "30s", {}),
    "mysql-1and1": (
        "sample",
        "whole",
        "60s",
        {FOOTPRINT: "1,347 I/Os cannot touch the hour's 142,563 blocks"},
    ),
    "windows-mssql": (
        "blkreplay:windows-mssql.load.gz",
        "whole",
        "90s",
        {
            FOOTPRINT: "1,263 I/Os cannot touch the 51 minutes' 154,742 blocks",
            "peak_mean_1s": "a 90 s run holds at most 90x; the trace's busiest second is 222x its mean",
        },
    ),
    "tpcc-small": ("disksim:tpcc-small.trace", "whole", "5s", {}),
}
# Judged against 3 sampling errors of the job's mean size rather than the tolerance: fio draws each
# I/O's size at random, and mysql's sizes are heavy-tailed (27 KB sd on a 14.7 KB mean: 5.1% over
# the 1,347 I/Os of 60 s). `iofp fio-job` says so and names the runtime that meets 5% (561 s).
BY_CHANCE = {"mysql-1and1": ("mean_size", "mbps")}
# The sequential share is what the device sees of the streams interleaved: on a busy machine fio's
# paced streams bunch (a stream behind its rate issues its I/Os back to back), fewer of the
# sequential stream's I/Os are cut by another's, and the share rises. commit-heavy (a sequential
# commit stream at 1,500/s beside random writes at 300/s), run beside a CPU hog on one CPU: +0.5 to
# +5.6 points in 6 runs, +6.0 in one loaded CI run; with fio at nice -10, as here, +1.1 to +4.6 in 6
# (quiet: +0.9; the tolerance is 5). Judged against 8 points; docs/fio-job.md says so.
SEQ_SHARE_LOADED = 0.08


def fingerprint_of(name: str, source: str, tmp: Path) -> Path:
    if source == "sample":
        return SAMPLES / f"{name}.fp.json"
    fmt, file = source.split(":")
    if not (SHARED_TRACES / file).exists():
        pytest.skip(f"needs the shared traces at {SHARED_TRACES}")
    trace = import_trace(fmt, SHARED_TRACES / file, tmp / name)
    out = tmp / f"{name}.fp.json"
    code, _, stderr = run_iofp("fingerprint", str(trace), "--json", str(out))
    assert code == 0, stderr
    return out


@needs_fio
@pytest.mark.skipif(not is_root(), reason="needs root (eBPF capture, loop devices)")
@pytest.mark.parametrize("name", list(CASES))
def test_the_job_reproduces_the_fingerprint(name: str, tmp_path: Path) -> None:
    source, regime, runtime, cannot = CASES[name]
    fp_path = fingerprint_of(name, source, tmp_path)
    rt = round_trip(fp_path, regime, runtime, tmp_path / "rt", nice=MEASURE_NICE)
    assert rt.fio_exit == 0, (tmp_path / "rt" / "fio.stderr").read_text()
    rows = {r["key"]: r for r in rt.check["rows"]}
    # A host too busy to keep fio's rate is an honest "inconclusive", not a failed round trip: the
    # rate-bound rows are then not judged, the shape rows (read share, sizes, sequence) still are.
    host_limited = rt.verdict.startswith("inconclusive: the host")
    job = fiojob.plan(fd.load(fp_path), fiojob.JobOptions(regime=regime, runtime_s=float(runtime[:-1])))
    _, se = fiojob.sampling_error(job)
    for key, row in rows.items():
        if key in cannot:
            assert row["status"] == "FAIL", (key, row, cannot[key])
        elif host_limited and key in RATE_KEYS:
            continue
        elif key in BY_CHANCE.get(name, ()):
            assert abs(row["delta"]) <= 3 * se, (key, row, se)
        elif key == "seq_share":
            assert abs(row["delta"]) <= SEQ_SHARE_LOADED, (key, row)
        else:
            assert row["status"] in ("pass", "n/a"), (key, row)
    failed = bool(cannot) or rows.get("seq_share", {}).get("status") == "FAIL"
    failed = failed or (host_limited and any(rows[k]["status"] == "FAIL" for k in RATE_KEYS if k in rows))
    assert rt.check["passed"] == (not failed) and rt.diff_exit == (1 if failed else 0)
    assert host_limited or (rt.verdict == "reproduced") == (not failed), rt.verdict
    text = rt.job.read_text()
    gap = {FOOTPRINT: ";   footprint", "peak_mean_1s": ";   peak/mean IOPS at 1 s"}
    for key in cannot:
        assert gap[key] in text  # the job file said it could not


def test_the_mysql_sample_is_the_shared_linux_mysql(tmp_path: Path) -> None:
    """linux-mysql (shared) and mysql-1and1 (sample) are one trace: its round trip runs once."""
    fp = fingerprint_of("linux-mysql", "blkreplay:linux-mysql.load.gz", tmp_path)
    a, b = fd.load(fp), fd.load(SAMPLES / "mysql-1and1.fp.json")
    assert close(figures(a, a.whole), figures(b, b.whole))
    assert a.whole.size.hist.write == b.whole.size.hist.write


THREE_STREAMS = REPO / "samples" / "workloads" / "three-streams.fio"


def streams(fp: fd.Fingerprint) -> list[tuple[float, float]]:
    """(sequential share within the process, commits/s) of the whole trace's top three processes,
    most I/Os first: the WAL writer, the reader and the committer of the burst, whatever their pids."""
    w = fp.whole
    top = sorted(w.top_processes, key=lambda p: -p.ios)[:3]
    return [(p.sequential_share or 0.0, (p.sync_calls or 0) / fp.provenance.io_span_s) for p in top]


@needs_fio
@pytest.mark.slow
@pytest.mark.skipif(not is_root(), reason="needs root (eBPF capture, loop devices)")
def test_a_three_stream_capture_keeps_each_streams_shape(tmp_path: Path) -> None:
    """A WAL writer (sequential, a commit each), random reads and a burst of commits from a second
    process, captured, fingerprinted and replayed by `iofp fio-job --streams pid` under capture: each
    stream keeps its own sequentiality (within 5 points) and its commits per second (within 10%), the
    commit streams stay concurrent (a job each); one stream (--streams single) says what it loses."""
    orig = tmp_path / "orig"
    orig.mkdir()
    with loop_device(320, RAM, prefix="three-streams") as dev:
        assert captured_fio(dev, THREE_STREAMS, orig, MEASURE_NICE) == 0, (orig / "fio.stderr").read_text()
    fp_path = tmp_path / "orig.fp.json"
    code, _, err = run_iofp("fingerprint", orig / "lab", "--json", fp_path)
    assert code == 0, err
    want = streams(fd.load(fp_path))
    # the capture itself: the WAL writer is sequential in its process however the device saw it
    assert want[1][0] > 0.99 and fd.load(fp_path).whole.sequential.share < 0.5, want
    rt = round_trip(fp_path, "whole", "20s", tmp_path / "rt", extra=("--streams", "pid"), nice=MEASURE_NICE)
    assert rt.fio_exit == 0, (tmp_path / "rt" / "fio.stderr").read_text()
    text = rt.job.read_text()
    assert text.count("fdatasync=1") == 2  # two commit streams, two fio jobs: concurrent as they were
    got = streams(fd.load(tmp_path / "rt" / "lab.fp.json"))
    for (seq_a, commits_a), (seq_b, commits_b), name in zip(want, got, ("reader", "wal", "burst"),
                                                            strict=True):  # fmt: skip
        assert abs(seq_b - seq_a) <= 0.05, (name, want, got)
        assert commits_b == pytest.approx(commits_a, rel=0.10, abs=0.5), (name, want, got)
    job = fiojob.plan(fd.load(fp_path), fiojob.JobOptions(regime="whole", runtime_s=20.0))
    lost = {g.what for g in job.gaps}
    assert {"sequential per process", "concurrent commit streams"} <= lost, lost


def _evidence(pressure: float, busy: float) -> host_evidence.HostEvidence:
    dev = host_evidence.DeviceLoad("loop9", "target", 0.05, 0.1, 0.1, 1, 128)
    cpus = [busy, busy]
    return host_evidence.HostEvidence(20.0, 40, 2, pressure, pressure, 0.0, 0.0, cpus, [0.0, 0.0], [dev])


def test_a_rate_missed_on_a_busy_host_is_inconclusive_and_a_shape_miss_is_not() -> None:
    rows = [{"key": "iops", "status": "FAIL"}, {"key": "read_share", "status": "pass"}]
    busy, quiet = _evidence(0.67, 0.99), _evidence(0.01, 0.30)
    verdict = judge({"rows": rows}, busy)
    assert verdict.startswith("inconclusive: the host's CPU was busy (pressure 67%"), verdict
    assert "missed iops" in verdict
    assert judge({"rows": rows}, quiet) == "not reproduced: missed iops"  # a quiet host: the job's own miss
    shape = [{"key": "read_share", "status": "FAIL"}, {"key": "iops", "status": "pass"}]
    assert judge({"rows": shape}, busy) == "not reproduced: missed read_share"  # load does not mix ops
    assert judge({"rows": [{"key": "iops", "status": "pass"}]}, busy) == "reproduced"
