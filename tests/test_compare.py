"""`iofp compare` over real replay results on two lab candidates (RAM loop, direct-io loop on disk)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import destroy_loop_device, make_loop_device, needs_fio, needs_root
from helpers import run_iofp, write_trace

from iofp import slo
from replay import compare

pytestmark = [needs_root, needs_fio]


@pytest.fixture(scope="module")
def commit_trace(tmp_path_factory) -> Path:
    """An OLTP-like 0.5 s: 4 KiB reads and writes at 2,000 IOPS with a flush after every 8th write."""
    ts, off, size, op = [], [], [], []
    for i in range(1000):
        ts.append(i * 500_000)
        off.append((i * 7919 % 4000) * 4096)
        size.append(4096)
        op.append("write" if i % 3 == 0 else "read")
        if i % 24 == 0:
            ts.append(i * 500_000 + 50_000)
            off.append(0)
            size.append(0)
            op.append("flush")
    return write_trace(
        tmp_path_factory.mktemp("c") / "commit", {"ts_ns": ts, "offset": off, "size": size, "op": op}
    )


@pytest.fixture(scope="module")
def results(commit_trace, tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("results")
    out = {}
    for name, where, direct in (("ram-loop", "/dev/shm", False), ("disk-loop", "/tmp", True)):
        dev, backing = make_loop_device(32, direct_io=direct, where=where)
        try:
            code, _, err = run_iofp(
                "replay", commit_trace, "--target", dev, "--label", f"device={name}", "--output", base / name
            )
            assert code == 0, err
        finally:
            destroy_loop_device(dev, backing)
        out[name] = base / name
    dev, backing = make_loop_device(32)
    try:
        code, _, err = run_iofp(
            "replay", commit_trace, "--target", dev, "--no-fidelity", "--output", base / "nocap"
        )
        assert code == 0, err
    finally:
        destroy_loop_device(dev, backing)
    out["nocap"] = base / "nocap"
    return out


def test_rows_come_from_the_capture_of_each_replay(results):
    rows = compare.compare([results["ram-loop"], results["disk-loop"]], slo.parse([]))
    assert [r.device for r in rows] == ["ram-loop", "disk-loop"]
    for r in rows:
        assert r.latency_source == "capture"
        assert r.demanded_iops == pytest.approx(1042 / 0.49955, rel=1e-3)  # 1000 I/Os + 42 flushes
        assert set(r.latency_ns) == {"read", "write", "flush"}
        for op in ("read", "write"):
            lat = r.latency_ns[op]
            assert 0 < lat["p50"] <= lat["p99"] <= lat["p99.9"]
        # 42 of the 1,042 captured requests are flushes; the rate is over the replay's own span
        assert r.commits_per_s == pytest.approx(r.achieved_iops * 42 / 1042)
        assert r.fsync_p99_ns is not None and r.fsync_p99_ns > 0
        assert r.fidelity.split(",")[0] in ("faithful", "not faithful")
    # The direct-io loop goes through the VM disk: its flushes are far slower than the RAM loop's.
    assert rows[1].latency_ns["flush"]["p50"] > rows[0].latency_ns["flush"]["p50"]


def test_without_a_capture_latency_comes_from_fio(results):
    (row,) = compare.compare([results["nocap"]], slo.parse([]))
    assert row.latency_source == "fio" and row.fidelity == "not measured"
    assert set(row.latency_ns) == {"read", "write"} and row.latency_ns["read"]["p99"] > 0


def test_slo_verdicts_per_device(results):
    rows = compare.compare([results["ram-loop"], results["disk-loop"]], slo.parse("p99<=10s"))
    assert [r.slo for r in rows] == ["pass", "pass"]
    rows = compare.compare([results["ram-loop"]], slo.parse("p99<=10s,read.p99<=1ns"))
    v = rows[0].latency_ns["read"]["p99"]
    assert rows[0].slo == f"fail: read p99 {slo.format_ns(v)} > 1 ns"


def test_cli_formats(results):
    dirs = [results["ram-loop"], results["disk-loop"]]
    code, out, err = run_iofp("compare", *dirs, "--format", "json", "--slo", "p99<=10s")
    assert code == 0, err
    doc = json.loads(out)
    assert [d["device"] for d in doc] == ["ram-loop", "disk-loop"] and {d["slo"] for d in doc} == {"pass"}
    code, out, _ = run_iofp("compare", *dirs, "--format", "markdown")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("| device | IOPS demanded |") and len(lines) == 4
    code, out, _ = run_iofp("compare", *dirs)
    assert code == 0 and "ram-loop" in out and "disk-loop" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--slo", "p98<=2ms"], f"--slo term 'p98<=2ms': {slo.GRAMMAR}"),
        (["--format", "csv"], "--format csv: choose table, markdown or json"),
    ],
)
def test_bad_options_exit_2(results, args, message):
    code, _, err = run_iofp("compare", results["ram-loop"], *args)
    assert (code, err) == (2, f"iofp: {message}\n")


def test_not_a_result_exits_2(tmp_path):
    code, _, err = run_iofp("compare", tmp_path)
    assert (code, err) == (
        2,
        f"iofp: {tmp_path}: no results.json; pass a directory written by `iofp replay`\n",
    )


@pytest.fixture(scope="module")
def two_stream_results(tmp_path_factory) -> dict[str, Path]:
    """Replays without a capture of 0.5 s of two processes (1,000 reads/s and 1,000 writes/s), as two
    fio jobs (--streams pid) and as one, each onto a new file in /dev/shm."""
    base = tmp_path_factory.mktemp("streams")
    n = 1000
    trace = write_trace(
        base / "two-pids",
        {
            "ts_ns": [i * 500_000 for i in range(n)],
            "offset": [(i * 7919 % 4000) * 4096 for i in range(n)],
            "size": [4096] * n,
            "op": ["read", "write"] * (n // 2),
            "pid": [100, 200] * (n // 2),
        },
    )
    out = {}
    for mode in ("pid", "single"):
        target = Path("/dev/shm") / f"iofp-compare-{base.name}-{mode}.dat"
        try:
            code, _, err = run_iofp(
                "replay",
                trace,
                "--target",
                target,
                "--streams",
                mode,
                "--no-fidelity",
                "--output",
                base / mode,
            )
            assert code == 0, err
        finally:
            target.unlink(missing_ok=True)
        out[mode] = base / mode
    return out


def test_achieved_iops_of_a_multi_stream_replay_is_over_its_wall_clock_span(two_stream_results):
    from replay.results import load

    _, rec = load(two_stream_results["pid"])
    assert len(rec["settings"]["jobs"]) == 2
    wall_s = rec["timing"]["wall_s"]
    # fio 3.33 sums job_runtime over the jobs group_reporting merges: more than the run's wall time
    assert rec["fio"]["summary"]["job_runtime_ms"] / 1e3 > wall_s
    pid, single = compare.compare([two_stream_results["pid"], two_stream_results["single"]], slo.parse([]))
    assert pid.latency_source == "fio"
    assert pid.achieved_iops >= 1000 / wall_s  # a rate over no more time than fio ran
    # the same I/Os on the same schedule: two jobs or one, about the same rate (405 vs 804 before)
    assert pid.achieved_iops == pytest.approx(single.achieved_iops, rel=0.2)
