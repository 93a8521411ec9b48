"""The trace -> fio v3 iolog converter: exact lines on known traces, and fio accepting them."""

from __future__ import annotations

import json
import shutil
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, needs_fio
from helpers import blkreplay_records, io_lines, mysql_load, run_iofp, write_trace

from iofp.contract import open_trace
from iofp.fioversion import parse_version
from iofp.windows import parse_between
from replay import iolog
from replay.fio import installed
from replay.iolog import Selection, pacing, selection

# --------------------------------------------------------------------------------------------
# Format rules (fio 3.33's iolog.c, as replay/iolog/converter.py's docstring lists them)
# --------------------------------------------------------------------------------------------


@pytest.fixture
def mixed_trace(tmp_path) -> Path:
    # Out of order (completion order, as a capture writes rows), starting late, with a flush,
    # a discard, a zero-size write and a second device.
    return write_trace(
        tmp_path / "mixed",
        {
            "ts_ns": [5_000_000, 2_000_000, 2_000_000, 3_500_500, 4_000_000, 9_000_999, 7_000_000],
            "device": ["loop9", "loop9", "loop9", "loop9", "loop9", "loop9", "loop8"],
            "offset": [8192, 0, 4096, 0, 1 << 20, 12288, 0],
            "size": [4096, 4096, 8192, 0, 65536, 0, 4096],
            "op": ["write", "read", "write", "flush", "discard", "write", "read"],
        },
    )


def test_log_is_v3_with_add_open_first_sorted_and_timestamps_from_1(mixed_trace, tmp_path):
    out = tmp_path / "x.iolog"
    rep = iolog.convert(
        open_trace(mixed_trace), out, Selection(device="loop9"), iolog.Mapping(target="/dev/loop3")
    )
    assert io_lines(out) == [
        "fio version 3 iolog",
        "1 /dev/loop3 add",
        "1 /dev/loop3 open",
        "1 /dev/loop3 read 0 4096",
        "1 /dev/loop3 write 4096 8192",
        "1501 /dev/loop3 sync 0 0",
        "3001 /dev/loop3 write 8192 4096",
    ]
    # the discard (fio 3.33 cannot read trim from an iolog) and the zero-size write are counted
    assert rep.dropped == {"discard_unsupported": 1, "zero_size": 1}
    assert rep.kept == 4 and rep.rows_in == 6
    assert rep.ops == {"read": 1, "write": 2, "trim": 0, "sync": 1, "datasync": 0}
    assert rep.duration_us == 3000
    assert rep.sorted_by == "duckdb"  # rows were in completion order


def test_absolute_pacing_writes_v2_with_a_wait_before_each_millisecond(mixed_trace, tmp_path):
    """--pace absolute: fio 3.33's only absolute clock is the v2 `wait` (ms since fio started)."""
    out = tmp_path / "x.iolog"
    rep = iolog.convert(
        open_trace(mixed_trace),
        out,
        Selection(device="loop9"),
        iolog.Mapping(target="/dev/loop3"),
        pacing=pacing.Pacing(mode="absolute"),
    )
    start = pacing.START_MS
    assert io_lines(out) == [
        "fio version 2 iolog",
        "/dev/loop3 add",
        "/dev/loop3 open",
        f"/dev/loop3 wait {start} 0",
        "/dev/loop3 read 0 4096",
        "/dev/loop3 write 4096 8192",  # same millisecond: no second wait
        f"/dev/loop3 wait {start + 1} 0",  # the flush at 1.5005 ms belongs to millisecond 1
        "/dev/loop3 sync 0 0",
        f"/dev/loop3 wait {start + 3} 0",
        "/dev/loop3 write 8192 4096",
    ]
    assert rep.kept == 4 and rep.dropped == {"discard_unsupported": 1, "zero_size": 1}


def test_wait_clock_carries_the_last_millisecond_across_batches():
    t = np.array([0, 400_000, 999_999, 1_000_000, 1_000_001, 7_300_000], dtype=np.int64)
    whole = pacing.WaitClock(start_ms=10).waits(t)
    assert whole[0].tolist() == [10, 10, 10, 11, 11, 17]
    assert whole[1].tolist() == [True, False, False, True, False, True]
    c = pacing.WaitClock(start_ms=10)
    parts = [c.waits(t[:4]), c.waits(t[4:])]  # the batch boundary falls inside millisecond 11
    assert np.concatenate([m for _, m in parts]).tolist() == whole[1].tolist()


def test_trim_is_written_only_when_fio_reads_it(mixed_trace, tmp_path):
    out = tmp_path / "x.iolog"
    rep = iolog.convert(
        open_trace(mixed_trace), out, Selection(device="loop9"), iolog.Mapping(target="/dev/loop3", trim=True)
    )
    assert "2001 /dev/loop3 trim 1048576 65536" in io_lines(out)
    assert rep.ops["trim"] == 1 and "discard_unsupported" not in rep.dropped


def test_installed_fio_decides_trim():
    caps = installed() if shutil.which("fio") else None
    if caps is None:
        pytest.skip("needs fio (apt install fio)")
    assert caps.iolog_trim == (parse_version(caps.version) >= (3, 34))
    assert parse_version("fio-3.33") == (3, 33)
    assert parse_version("fio-3.42-135-gf5344384") == (3, 42)


def test_all_devices_go_to_the_one_target_and_default_target_needs_one_device(mixed_trace, tmp_path):
    rep = iolog.convert(
        open_trace(mixed_trace), tmp_path / "a.iolog", Selection(), iolog.Mapping(target="/x/t")
    )
    assert rep.kept == 5
    code, _, err = run_iofp("iolog", str(mixed_trace), "-o", str(tmp_path / "b.iolog"))
    assert code == 2
    assert err.strip() == (
        "iofp: the selection spans devices loop8, loop9; pass --device to pick one "
        "or --target to name the file the log should use"
    )
    code, out, _ = run_iofp("iolog", str(mixed_trace), "-o", str(tmp_path / "b.iolog"), "--device", "loop8")
    assert code == 0
    assert io_lines(tmp_path / "b.iolog")[1:] == [  # a placeholder: the trace never chooses where to write
        "1 /iofp-no-target/loop8 add",
        "1 /iofp-no-target/loop8 open",
        "1 /iofp-no-target/loop8 read 0 4096",
    ]
    # the next step goes through replay's safety checks, never around them with a bare fio command
    assert out.splitlines()[-2:] == [
        "next: the same selection through iofp replay, which checks that the target is safe to write before "
        "fio writes to it, and measures the replay",
        f"Wrote {tmp_path / 'b.iolog'}. Next: iofp replay {mixed_trace} --device loop8 --target DEVICE",
    ]


def test_reads_only_keeps_the_reads_at_their_original_times(tmp_path):
    t = write_trace(
        tmp_path / "t",
        {
            "ts_ns": [1_000_000, 2_000_000, 3_000_000, 4_000_000],
            "offset": [0, 4096, 8192, 12288],
            "size": [4096] * 4,
            "op": ["write", "read", "flush", "read"],
        },
    )
    out = tmp_path / "r.iolog"
    rep = iolog.convert(open_trace(t), out, Selection(reads_only=True), iolog.Mapping(target="/dev/loop3"))
    # the gap between the two reads survives: the writes and flush are filtered here, not by fio
    assert io_lines(out)[3:] == ["1 /dev/loop3 read 4096 4096", "2001 /dev/loop3 read 12288 4096"]
    assert rep.dropped == {"not_read": 2}


def test_folding_and_alignment_are_exact_and_counted(tmp_path):
    t = write_trace(
        tmp_path / "t",
        {
            "ts_ns": [0, 10, 20, 30, 40],
            "offset": [0, 1 << 30, (1 << 30) + 512, 5000 * 512, 7],
            "size": [4096, 8192, 1024, 512, 100],
            "op": ["read", "write", "write", "read", "read"],
        },
    )
    out = tmp_path / "f.iolog"
    m = iolog.Mapping(target="/dev/loop3", fold_size=1 << 20, align=4096)
    rep = iolog.convert(open_trace(t), out, Selection(), m)
    modulus = (1 << 20) - 8192  # fold size minus the largest I/O, aligned
    assert rep.fold_modulus == modulus
    expect = [
        (0, 4096),
        ((1 << 30) % modulus // 4096 * 4096, 8192),
        (((1 << 30) + 512) % modulus // 4096 * 4096, 4096),
        (5000 * 512 % modulus // 4096 * 4096, 4096),
        (0, 4096),
    ]
    got = [(int(x.split()[3]), int(x.split()[4])) for x in io_lines(out)[3:]]
    assert got == expect
    assert all(off + size <= 1 << 20 for off, size in got)
    assert (rep.folded, rep.realigned, rep.resized) == (3, 2, 3)


def test_fold_is_identity_when_the_selection_fits(tmp_path):
    t = write_trace(tmp_path / "t", {"ts_ns": [0], "offset": [4096], "size": [4096], "op": ["read"]})
    rep = iolog.convert(
        open_trace(t), tmp_path / "f.iolog", Selection(), iolog.Mapping("/t", fold_size=1 << 20)
    )
    assert rep.fold_modulus is None and rep.folded == 0


def test_time_scale_divides_the_schedule(tmp_path):
    t = write_trace(
        tmp_path / "t",
        {"ts_ns": [10_000, 1_010_000, 3_010_000], "offset": [0, 0, 0], "size": [512] * 3, "op": ["read"] * 3},
    )
    out = tmp_path / "s.iolog"
    iolog.convert(open_trace(t), out, Selection(), iolog.Mapping("/dev/loop3", time_scale=2.0))
    assert [x.split()[0] for x in io_lines(out)[3:]] == ["1", "501", "1501"]


def test_existing_output_needs_force_and_is_left_intact(mixed_trace, tmp_path):
    out = tmp_path / "x.iolog"
    out.write_text("precious\n")
    code, _, err = run_iofp("iolog", str(mixed_trace), "-o", str(out), "--device", "loop9")
    assert (code, err.strip()) == (2, f"iofp: {out} already exists; pass --force to overwrite it")
    assert out.read_text() == "precious\n"
    code, _, _ = run_iofp("iolog", str(mixed_trace), "-o", str(out), "--device", "loop9", "--force")
    assert code == 0 and io_lines(out)[0] == "fio version 3 iolog"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--between", "1", "2", "--regime", "spike"],
            "--between and --regime both choose the time span; pass only one of them",
        ),
        (
            ["--between", "2", "1"],
            "--between 2 1: need 0 <= T1 < T2 <= 360,000,000 (seconds on the trace's clock)",
        ),
        (["--regime", "busy"], "--regime busy: choose one of steady, spike, baseline"),
        (["--align", "1000"], "--align 1000: must be a power of two >= 512"),
        (["--align", "0"], "--align '0' is not a size; use e.g. 4KiB or 512"),  # not the default in disguise
        (["--align", "3KiB"], "--align 3072: must be a power of two >= 512"),
        (["--target-size", "256 MB"], "--target-size '256 MB' is not a size; use e.g. 64MiB, 512KiB or 1GiB"),
        (["--device", "sdz"], "no device 'sdz' in the trace (it has: loop8, loop9)"),
        (["--target", "/tmp/a b"], "'/tmp/a b': fio iologs need a path without blanks or control characters; "
                                   "rename it, or link it to a plain name"),
        (["--target", "x.img"], f"need an absolute path, e.g. {Path.cwd() / 'x.img'}"),
    ],
)
def test_bad_options_are_one_line_exit_2(mixed_trace, tmp_path, args, message):
    code, _, err = run_iofp(
        "iolog", str(mixed_trace), "-o", str(tmp_path / "o.iolog"), "--target", "/dev/x", *args
    )
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("iofp: ") and err.strip().endswith(message)
    assert not (tmp_path / "o.iolog").exists()


# --------------------------------------------------------------------------------------------
# Selections on the shared real traces
# --------------------------------------------------------------------------------------------


def test_between_selects_exactly_the_window(mysql_trace, tmp_path):
    recs = blkreplay_records(mysql_load())
    lo, hi = 1640 * 10**9, 1650 * 10**9
    want = [r for r in recs if lo <= r[0] < hi]
    out = tmp_path / "w.iolog"
    rep = iolog.convert(
        open_trace(mysql_trace),
        out,
        Selection(between=parse_between("1640", "1650")),
        iolog.Mapping("/dev/loop3", fold_size=1 << 28),
    )
    assert rep.kept == len(want)
    assert rep.sorted_by.startswith("none")  # an import is in issue order: streamed, not sorted
    assert rep.ops["read"] == sum(op == "read" for _, op in want)
    lines = io_lines(out)[3:]
    assert len(lines) == len(want)
    ts = [int(x.split()[0]) for x in lines]
    assert ts[0] == 1 and ts == sorted(ts)
    assert ts[-1] == (want[-1][0] - want[0][0]) // 1000 + 1  # µs from the first I/O, plus 1
    assert all(int(x.split()[3]) + int(x.split()[4]) <= 1 << 28 for x in lines)


def test_spike_regime_is_the_busiest_run_of_spike_windows(mysql_trace, tmp_path):
    rep = iolog.convert(
        open_trace(mysql_trace),
        tmp_path / "s.iolog",
        Selection(regime="spike"),
        iolog.Mapping("/dev/loop3", fold_size=1 << 28),
    )
    # Recompute the busiest 1 s window independently: the spike span must contain it.
    recs = blkreplay_records(mysql_load())
    counts: dict[int, int] = {}
    for ts, _ in recs:
        counts[ts // 10**9] = counts.get(ts // 10**9, 0) + 1
    busiest = max(counts, key=lambda w: (counts[w], -w))
    sel = rep.selection
    assert sel["t_lo_ns"] <= busiest * 10**9 < sel["t_hi_ns"]
    assert rep.kept == sum(1 for ts, _ in recs if sel["t_lo_ns"] <= ts < sel["t_hi_ns"])


def test_steady_regime_picks_the_longest_steady_run(tmp_path):
    # 1 s windows: 3 idle-ish, 8 steady at 100 IOPS, 2 at 1000 IOPS, 6 steady at 100 IOPS.
    rates = [5, 40, 5] + [100] * 8 + [1000, 1000] + [100] * 6
    ts = [w * 10**9 + i * (10**9 // r) for w, r in enumerate(rates) for i in range(r)]
    t = write_trace(
        tmp_path / "t",
        {"ts_ns": ts, "offset": [0] * len(ts), "size": [512] * len(ts), "op": ["read"] * len(ts)},
    )
    rep = iolog.convert(open_trace(t), tmp_path / "s.iolog", Selection(regime="steady"), iolog.Mapping("/d"))
    assert (rep.selection["t_lo_ns"], rep.selection["t_hi_ns"]) == (3 * 10**9, 11 * 10**9)
    assert rep.kept == 800
    rep = iolog.convert(
        open_trace(t), tmp_path / "p.iolog", Selection(regime="spike"), iolog.Mapping("/d"), force=True
    )
    assert (rep.selection["t_lo_ns"], rep.selection["t_hi_ns"]) == (11 * 10**9, 13 * 10**9)


def test_no_steady_windows_is_a_clear_error(tpcc_trace, tmp_path):
    code, _, err = run_iofp(
        "iolog", str(tpcc_trace), "-o", str(tmp_path / "o"), "--target", "/d", "--regime", "steady",
        "--window", "100ms",
    )  # fmt: skip
    assert code == 2
    assert err == (
        f"iofp: {tpcc_trace}: no steady windows among its 2 windows of 100ms; pass --regime baseline "
        "(the longest stretch with no spike), another --window, or --between T1 T2\n"
    )


# --------------------------------------------------------------------------------------------
# fio accepts what we write
# --------------------------------------------------------------------------------------------


@needs_fio
@pytest.mark.parametrize("pace", ["off", "absolute"])
@pytest.mark.parametrize("which", ["mysql", "tpcc"])
def test_fio_parses_every_line_of_the_generated_logs(which, pace, mysql_trace, tpcc_trace, tmp_path):
    """The whole log through fio's parser (null engine, no pacing): no line rejected, every I/O issued."""
    trace = mysql_trace if which == "mysql" else tpcc_trace
    target = tmp_path / "target.bin"
    out = tmp_path / "all.iolog"
    rep = iolog.convert(
        open_trace(trace),
        out,
        Selection(),
        iolog.Mapping(str(target), fold_size=1 << 28),
        pacing=pacing.Pacing(mode=pace),
    )
    assert out.read_text().startswith(f"fio version {2 if pace == 'absolute' else 3} iolog\n")
    res = subprocess.run(
        [
            "fio",
            "--name=parse",
            "--ioengine=null",
            "--replay_no_stall=1",
            f"--read_iolog={out}",
            "--output-format=json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    assert "bad iolog" not in res.stderr + res.stdout and "bad ddir" not in res.stderr + res.stdout
    from replay.fio import fio_json

    job = fio_json(res.stdout)["jobs"][0]
    assert (job["read"]["total_ios"], job["write"]["total_ios"]) == (rep.ops["read"], rep.ops["write"])
    assert rep.kept == open_trace(trace).num_rows()


@needs_fio
def test_a_replay_resolves_its_selection_once(tmp_path, monkeypatch):
    """The regime rule and the stream plan run once per command (plan.resolve), not again in the
    converter: counted on a real `iofp replay` of a spike onto a new file."""
    from helpers import synthetic_steady_with_spike

    from iofp import regimes
    from replay import iolog as iolog_stage
    from replay.iolog import plan

    trace = synthetic_steady_with_spike(tmp_path, seconds=8, spike=(4, 6))
    calls = {"classify": 0, "resolve": 0}

    def counted(name, real):
        def call(*a, **kw):
            calls[name] += 1
            return real(*a, **kw)

        return call

    # counters around the real plan and the real rule, not stand-ins
    monkeypatch.setattr(regimes, "classify", counted("classify", regimes.classify))
    # the runner calls it by the stage's public name, the converter by its module's
    monkeypatch.setattr(iolog_stage, "resolve", counted("resolve", iolog_stage.resolve))
    monkeypatch.setattr(plan, "resolve", counted("resolve", plan.resolve))
    target = Path("/dev/shm") / f"iofp-once-{tmp_path.name}.dat"
    try:
        code, _, err = run_iofp(
            "replay",
            "--repeat",
            "1",
            trace,
            "--target",
            target,
            "--regime",
            "spike",
            "--no-fidelity",
            "--output",
            tmp_path / "r",
        )
    finally:
        target.unlink(missing_ok=True)
    assert code == 0, err
    assert calls == {"classify": 1, "resolve": 1}


@pytest.mark.slow
def test_an_iolog_into_a_new_directory_is_written_like_every_artifact(tmp_path):
    """The directory is made, as for a report or a fio job (it was a FileNotFoundError traceback)."""
    out = tmp_path / "new" / "dir" / "x.iolog"
    code, stdout, err = run_iofp("iolog", REPO / "samples/traces/commit-heavy", "-o", out)
    assert code == 0, err
    assert io_lines(out)[0] == "fio version 3 iolog" and f"Wrote {out}." in stdout


def test_between_takes_durations_as_every_time_does(tmp_path):
    """--between 2s 8s (or 2000ms 8000ms) selects what --between 2 8 does; a word is one line."""
    trace = REPO / "samples/traces/commit-heavy"
    logs = []
    for i, span in enumerate((("2", "8"), ("2s", "8s"), ("2000ms", "8000ms"))):
        out = tmp_path / f"{i}.iolog"
        code, _, err = run_iofp("iolog", trace, "-o", out, "--between", *span)
        assert code == 0, err
        logs.append(io_lines(out))
    assert logs[0] == logs[1] == logs[2] and len(logs[0]) > 1000
    code, _, err = run_iofp("iolog", trace, "-o", tmp_path / "x.iolog", "--between", "soon", "8")
    assert code == 2 and err.startswith("iofp: --between soon 8: give seconds from the trace's start")


def test_between_takes_the_wall_clock_as_iofp_fingerprint_does(mysql_trace, tmp_path):
    """--between HH:MM:SS.ffffff HH:MM:SS.ffffff (times of day on the capture's date, local time) selects
    what the same span in seconds from the start does: one parser (iofp/windows.py) for every command."""
    trace = REPO / "samples/traces/commit-heavy"
    start_ns = open_trace(trace).meta.capture_start_ns
    start = datetime.fromtimestamp(start_ns / 1e9)
    wall = [(start + timedelta(seconds=s)).strftime("%H:%M:%S.%f") for s in (2, 8)]  # to the µs
    logs = []
    for i, span in enumerate((("2", "8"), wall)):
        out = tmp_path / f"{i}.iolog"
        code, _, err = run_iofp("iolog", trace, "-o", out, "--between", *span)
        assert code == 0, err
        logs.append(io_lines(out))
    assert logs[0] == logs[1] and len(logs[0]) > 1000
    con = selection.connect(open_trace(trace))
    stats = selection.resolve(con, open_trace(trace), Selection(between=parse_between(*wall)))
    cut = start_ns % 1000  # the ns of the start that a time of day to the µs leaves out
    assert (stats.t_lo_ns, stats.t_hi_ns) == (2 * 10**9 - cut, 8 * 10**9 - cut)
    assert stats.how == f"between {wall[0]} and {wall[1]} (2.000 s to 8.000 s)"
    code, _, err = run_iofp("iolog", mysql_trace, "-o", tmp_path / "n.iolog", "--between", "09:15", "09:30")
    assert code == 2 and err.startswith("iofp: --between 09:15 09:30: this trace has no wall clock"), err


def test_a_log_naming_no_device_here_says_so(mysql_trace, tmp_path):
    """Without --target a log names a placeholder fio cannot open (the trace's device is where it
    was recorded, not where to write); a note says what to pass, and the hint replays the selection
    onto a device the user names, through replay's checks. fio's own command is in --json."""
    args = ("-o", tmp_path / "m.iolog", "--between", "0", "60", "--json", tmp_path / "m.json")
    code, out, err = run_iofp("iolog", mysql_trace, *args)
    assert code == 0, err
    assert "note: no --target: the log names /iofp-no-target/linux-mysql, which fio cannot open" in out
    assert out.splitlines()[-1].endswith(f"Next: iofp replay {mysql_trace} --between 0 60 --target DEVICE")
    fio_alone = json.loads((tmp_path / "m.json").read_text())["fio_command"]
    assert fio_alone.startswith("fio --direct=1 --replay_redirect=/dev/sdX ")
    code, out, err = run_iofp("iolog", mysql_trace, "-o", tmp_path / "f.iolog", "--between", "0", "60",
                              "--target", tmp_path / "new.img")  # fmt: skip
    assert code == 0 and "note:" not in out  # a file fio creates


def test_streams_pid_on_a_trace_without_submitters_is_one_line(mysql_trace, tmp_path):
    """OUT.0.iolog, ... were promised and one log was written; fio-job refuses the same case."""
    args = ("-o", tmp_path / "m.iolog", "--streams", "pid", "--target", tmp_path / "x.img")
    code, _, err = run_iofp("iolog", mysql_trace, *args)
    assert (code, err) == (2, "iofp: --streams pid: the selection has no per-process streams (an imported "
                              "trace records no submitter); use --streams single\n")  # fmt: skip
    assert list(tmp_path.iterdir()) == []


def test_reads_only_on_a_trace_without_reads_says_to_drop_it(tmp_path):
    """'widen it' cannot help the commit-heavy sample (appends and fdatasyncs only)."""
    trace = REPO / "samples/traces/commit-heavy"
    for span in ((), ("--between", "2", "4")):
        code, _, err = run_iofp("iolog", trace, "-o", tmp_path / "r.iolog", "--reads-only", *span)
        assert (code, err) == (2, f"iofp: {trace}: the trace holds no reads; drop --reads-only\n")
