"""Replay fidelity of `iofp replay` against fio's own write_iolog -> read_iolog round trip.

One original workload (fio randrw 70/30 at 3,000 IOPS, 4 KiB, libaio iodepth 8, on a RAM loop device)
is captured by iofp's capture while fio also writes its own iolog. Then, alternating and repeated,
the `--variants` (comma-separated, in this order each round):

  absolute  `iofp replay --pace absolute`: a v2 log with a `wait` (ms since fio's start) per millisecond;
  auto      `iofp replay --pace auto`: calibrated pacing compensation in a v3 log;
  off       `iofp replay --pace off --streams single`: the trace's own gaps in one job (the old way);
  fio       fio --read_iolog of fio's own iolog, captured by the same iofp capture;
  feedback  closed loop, measured here rather than built into iofp: an `auto` replay as the probe,
            then `--pace <c'>` with c' = c + (the probe's final drift / I/Os), i.e. the probe's
            systematic drift pre-paid; two rows (probe, corrected), twice the replay time.

Both are judged by the same code against the same reference, the capture of the original:
replay.run.fidelity.compare(original capture, replay capture). Targets (issue 4): per-second IOPS within
2% (MAPE), median lateness < 50 µs, p99 < 1 ms, duration stretch < 1%.

    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.replay_fidelity --seconds 20 --repeat 2 \
        --variants absolute,auto,fio

`--floor` measures instead what limits fio 3.33's relative (v3) pacing, on a synthetic log of 4 KiB
reads every 333 µs (3,000 IOPS, 3 s, libaio iodepth 8, RAM loop), per fio setting: the per-I/O
overhead c (mean of actual gap - demanded gap at the block layer), its spread, and the lateness left
after removing the best straight line from the lateness curve: the floor of any constant-c
compensation, even one computed in hindsight from this very run (= perfect closed-loop feedback).

    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.replay_fidelity --floor --repeat 2
"""

from __future__ import annotations

import argparse
import ctypes
import json
import tempfile
from pathlib import Path

import bpf
from iofp.contract import Trace, open_trace
from replay import run as runner
from replay.fio import fio_json
from replay.iolog import expected_of
from replay.run import fidelity
from tests import lab

IODEPTH = 8
VARIANTS = {
    "absolute": {"pace": "absolute"},
    "auto": {"pace": "auto"},
    "off": {"pace": "off", "streams": "single"},
    "fio": None,  # fio's own round trip
    "feedback": None,  # auto, then fixed c corrected by the auto run's drift
}


def loop_device(size_mib: int) -> tuple[str, Path]:
    return lab.make_loop(size_mib, lab.RAM, prefix="iofp-bench")


def captured_fio(dev: str, out: Path, args: list[str]) -> dict:
    """Run fio on `dev` while iofp captures it; returns fio's job JSON."""
    opts = bpf.CaptureOptions(output=out, devices=[Path(dev).name], force=True)
    with bpf.start_capture(opts) as bg:
        res = lab.fio("--output-format=json", *args, timeout=None, check=False)
        bg.stop()
    if res.returncode != 0:
        raise SystemExit(f"fio failed: {res.stderr}")
    return fio_json(res.stdout)["jobs"][0]


def row(name: str, f: fidelity.Fidelity, runtime_ms: float | None) -> dict:
    return {
        "run": name,
        "matched": f"{f.matched}/{f.expected}",
        "missing": f.missing,
        "extra": f.extra,
        "iops_mape_%": round(100 * (f.iops_mape or 0), 2),
        "iops_max_err_%": round(100 * (f.iops_max_error or 0), 2),
        "late_p50_us": round(f.late_p50_us or 0, 1),
        "late_p99_us": round(f.late_p99_us or 0, 1),
        "abs_late_p50_us": round(f.abs_late_p50_us or 0, 1),
        "abs_late_p99_us": round(f.abs_late_p99_us or 0, 1),
        "final_drift_ms": round((f.final_drift_us or 0) / 1e3, 2),
        "iat_err_p50_us": round(f.iat_err_p50_us or 0, 1),
        "iat_err_p99_us": round(f.iat_err_p99_us or 0, 1),
        "stretch_%": round(100 * (f.stretch or 0), 2),
        "inflight_mean_exp/rep": "/".join(
            f"{(f.inflight.get(k) or {}).get('inflight_mean') or 0:.2f}" for k in ("expected", "replayed")
        ),
        "fio_runtime_ms": runtime_ms,
        "verdict": f"{f.verdict}, {f.timing}",
    }


def roundtrip(dev: str, d: Path, i: int) -> dict:
    """fio's own write_iolog -> read_iolog round trip, captured and scored like iofp's replays."""
    job = captured_fio(dev, d / f"fio-{i}", [
        "--name=roundtrip", "--direct=1", "--ioengine=libaio", f"--iodepth={IODEPTH}",
        f"--read_iolog={d / 'orig.iolog'}",
    ])  # fmt: skip
    f = fidelity.compare(expected_of(open_trace(d / "orig")), open_trace(d / f"fio-{i}"))
    return row(f"fio read_iolog #{i + 1}", f, job["job_runtime"])


def replay_row(orig: Trace, dev: str, out: Path, extra: dict, i: int) -> tuple[dict, fidelity.Fidelity]:
    """`iofp replay` (the library call) of the original with `extra` options, scored against it."""
    opts = runner.ReplayOptions(
        target=Path(dev), output=out, iodepth=IODEPTH, progress=False, allow_destructive=True, **extra
    )
    _, res = runner.replay(orig, opts)
    f = fidelity.compare(expected_of(orig), open_trace(out / "capture"))
    tag = "iofp " + " ".join(f"--{k} {v}" for k, v in extra.items())
    r = row(f"{tag} #{i + 1}", f, res.fio["summary"].get("job_runtime_ms"))
    r["pace_us"] = res.settings["pacing"].get("overhead_us")
    return r, f


FLOOR_SETTINGS = {
    "default": ((), False),
    "timer slack 1 ns": ((), True),
    "--thread": (("--thread",), False),
    "--cpus_allowed=1 + slack 1 ns": (("--cpus_allowed=1",), True),
}


def _timer_slack_1ns() -> None:
    """preexec_fn: PR_SET_TIMERSLACK (29) to 1 ns; inherited by fio's forked job processes."""
    ctypes.CDLL(None, use_errno=True).prctl(29, 1, 0, 0, 0)


def floor(repeat: int) -> list[dict]:
    import duckdb
    import numpy as np

    gap_us, n = 333, 9000
    dev, backing = loop_device(256)
    rows = []
    try:
        with tempfile.TemporaryDirectory(dir="/tmp", prefix="iofp-bench-") as d:
            log = Path(d) / "reads.iolog"
            rng = np.random.default_rng(0)
            offs = rng.integers(0, (256 << 20) // 4096, n) * 4096
            lines = ["fio version 3 iolog", f"1 {dev} add", f"1 {dev} open"]
            lines += [f"{1 + (i + 1) * gap_us} {dev} read {o} 4096" for i, o in enumerate(offs)]
            log.write_text("\n".join(lines) + "\n")
            for i in range(repeat):
                for name, (extra, slack) in FLOOR_SETTINGS.items():
                    out = Path(d) / f"cap-{len(rows)}"
                    opts = bpf.CaptureOptions(output=out, devices=[Path(dev).name], force=True)
                    cmd = ["--name=floor", "--ioengine=libaio", "--direct=1", "--iodepth=8",
                           f"--read_iolog={log}", *extra]  # fmt: skip
                    with bpf.start_capture(opts) as bg:
                        fine_timer = _timer_slack_1ns if slack else None
                        res = lab.fio(*cmd, setup=fine_timer, timeout=None, check=False)
                        bg.stop()
                    if res.returncode != 0:
                        raise SystemExit(f"fio failed: {res.stderr}")
                    con = duckdb.connect()
                    open_trace(out).relation(con).create_view("t")
                    ts = np.array(
                        con.execute("SELECT ts_ns FROM t WHERE comm = 'fio' ORDER BY ts_ns").fetchnumpy()[
                            "ts_ns"
                        ]
                    )
                    err = (
                        np.diff(ts) / 1e3 - gap_us
                    )  # µs each I/O came after the previous one, beyond its gap
                    k = np.arange(len(ts))
                    late = (ts - ts[0]) / 1e3 - k * gap_us
                    resid = np.abs(late - np.polyval(np.polyfit(k, late, 1), k))
                    half = len(err) // 2
                    rows.append({
                        "run": f"{name} #{i + 1}",
                        "ios": len(ts),
                        "c_mean_us": round(float(err.mean()), 1),
                        "c_1st/2nd_half_us": f"{err[:half].mean():.1f}/{err[half:].mean():.1f}",
                        "c_std_us": round(float(err.std()), 1),
                        "stretch_%": round(100 * float(late[-1]) / (gap_us * (len(ts) - 1)), 2),
                        "best_line_abs_late_p50_us": round(float(np.median(resid))),
                        "best_line_abs_late_p99_us": round(float(np.percentile(resid, 99))),
                    })  # fmt: skip
                    print(json.dumps(rows[-1]), flush=True)
    finally:
        lab.destroy_loop(dev, backing)
    return rows


def table(rows: list[dict]) -> None:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for x in rows:
        print("| " + " | ".join(str(x.get(k, "")) for k in keys) + " |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--iops", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--variants", default="absolute,auto,fio", help=f"comma-separated: {', '.join(VARIANTS)}")
    ap.add_argument(
        "--floor", action="store_true", help="measure relative pacing's floor instead (see above)"
    )
    a = ap.parse_args()
    if a.floor:
        table(floor(a.repeat))
        return
    variants = a.variants.split(",")
    if unknown := set(variants) - set(VARIANTS):
        raise SystemExit(f"--variants: unknown {', '.join(sorted(unknown))}; choose from {list(VARIANTS)}")
    dev, backing = loop_device(1024)
    rows = []
    try:
        with tempfile.TemporaryDirectory(dir="/tmp", prefix="iofp-bench-") as d:
            d = Path(d)
            r, w = round(a.iops * 0.7), a.iops - round(a.iops * 0.7)
            orig_job = captured_fio(dev, d / "orig", [
                "--name=orig", f"--filename={dev}", "--direct=1", "--ioengine=libaio", f"--iodepth={IODEPTH}",
                "--rw=randrw", "--rwmixread=70", "--bs=4k", "--size=1g", f"--rate_iops={r},{w}",
                f"--runtime={a.seconds}", "--time_based", f"--write_iolog={d / 'orig.iolog'}",
            ])  # fmt: skip
            orig = open_trace(d / "orig")
            print(
                f"original: {orig.num_rows()} I/Os captured, fio runtime {orig_job['job_runtime']} ms",
                flush=True,
            )
            for i in range(a.repeat):
                for name in variants:
                    if name == "fio":
                        rows.append(roundtrip(dev, d, i))
                        print(json.dumps(rows[-1]), flush=True)
                    elif name == "feedback":
                        probe, f = replay_row(orig, dev, d / f"iofp-{len(rows)}", {"pace": "auto"}, i)
                        probe["run"] = f"feedback probe (--pace auto) #{i + 1}"
                        rows.append(probe)
                        print(json.dumps(rows[-1]), flush=True)
                        c_us = probe["pace_us"]["libaio"] + (f.final_drift_us or 0) / f.matched
                        pace = {"pace": f"{max(c_us, 0):.2f}us"}
                        rows.append(replay_row(orig, dev, d / f"iofp-{len(rows)}", pace, i)[0])
                        rows[-1]["run"] = f"feedback corrected (--pace {pace['pace']}) #{i + 1}"
                        print(json.dumps(rows[-1]), flush=True)
                    else:
                        rows.append(replay_row(orig, dev, d / f"iofp-{len(rows)}", VARIANTS[name], i)[0])
                        print(json.dumps(rows[-1]), flush=True)
    finally:
        lab.destroy_loop(dev, backing)
    table(rows)


if __name__ == "__main__":
    main()
