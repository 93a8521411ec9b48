"""How often iofp's decisions flip: the same headroom and compare decisions on the commit-heavy sample
(a RAM loop against a direct-io disk loop), run on a quiet host and beside CPU hogs, every verdict
recorded (issue 26's "what must be shown").

One *run* makes a fresh RAM loop (/dev/shm) and disk loop (`--direct-io=on` over /tmp), each over a
file written whole before use (tests/lab.py `fill`), and takes two decisions, each as a user would type
it (nice 0, the default options of this iofp). Not sparse: on a sparse file the first replay's writes
are the backing filesystem's block allocations, and a fdatasync then commits ext4's journal too. In
every disk-loop replay with repeats of sessions 3 and 4 (7, quiet and busy) the first of its repeats had a
commit p50 1.8x-21x its later repeats' (158 us-1.1 ms against 55-110 us), so the repeats disagreed by
construction ("inconclusive: the runs disagree"), and every sweep's first 1x step had a commit p50
2-30x its next step's, at twice the load (184 us-1.9 ms against 58-129 us): the first touch, measured
as the device's. The bench is to judge the devices, not the provisioning of the lab's files:

  compare   `iofp replay TRACE --between 2 8 --target DEV --label device=NAME` on each, then
            `iofp compare R-ram R-disk --slo SLO`: each candidate's pass/FAIL (and, from this iofp on,
            "inconclusive") and the exit status;
  headroom  `iofp headroom TRACE --between 5 7 --target DEV --slo SLO --scales 1,2,4 --budget 5` on
            each, then `iofp compare H-ram H-disk --slo SLO`: each factor, whether it holds today's
            load (1x), whose limit stopped it, the ranking and the exit statuses.

Each decision holds /tmp/iofp-heavy.lock for itself (its two devices' commands and the compare), so
other engineers' runs interleave; with `--hogs N` for a busy run, N `while True: pass` processes at
nice 0 run only while the lock is held. Runs alternate quiet and busy (and which device goes first),
so a drift of the shared machine falls on both. Every run's record (verdicts, the commands' output,
the CPU pressure over each command from /proc/pressure/cpu) is appended to
bench/out/verdict_flips/TAG.jsonl; `--summarize TAG` prints the flip table from it:

    .venv/bin/python -m bench.verdict_flips --tag before --runs 5 --hogs 2
    .venv/bin/python -m bench.verdict_flips --summarize before

(no outer flock: the script takes the lock per decision). A flip is a run whose verdict differs from
the verdict most quiet runs gave; an "inconclusive" is counted apart, as it is no verdict about the
device.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests import lab

OUT = Path("bench/out/verdict_flips")
TRACE = "samples/traces/commit-heavy"
SLO = "p99<=2ms,commit.p99<=1ms"
LOCK = "/tmp/iofp-heavy.lock"
IOFP = [sys.executable, "-c", "from cli.app import main; main()"]
DEVICES = {"ram-loop": lab.RAM, "disk-loop": lab.DISK}  # label -> the lab device (tests/lab.py)


@contextmanager
def heavy_lock() -> Iterator[None]:
    """The team's heavy-run lock (flock(1) on the same file takes the same lock)."""
    with open(LOCK, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def cpu_pressure_us() -> int:
    """/proc/pressure/cpu `some` total: microseconds some task waited for a CPU."""
    line = Path("/proc/pressure/cpu").read_text().splitlines()[0]
    return int(line.rsplit("total=", 1)[1])


def iofp(*args: object, log: list[dict]) -> subprocess.CompletedProcess[str]:
    """One iofp command; its exit status, output, wall time and CPU pressure share go into `log`."""
    p0, t0 = cpu_pressure_us(), time.monotonic()
    proc = subprocess.run([*IOFP, *map(str, args)], capture_output=True, text=True)
    wall = time.monotonic() - t0
    log.append({"cmd": " ".join(map(str, args[:1])), "args": list(map(str, args)), "rc": proc.returncode,
                "wall_s": round(wall, 1), "cpu_pressure": round((cpu_pressure_us() - p0) / 1e6 / wall, 3),
                "stdout": proc.stdout[-6000:], "stderr": proc.stderr[-3000:]})  # fmt: skip
    return proc


def decide_compare(run_dir: Path, order: list[str], log: list[dict]) -> dict:
    """Replay the 6 s on each device, compare them against the SLO: each candidate's verdict."""
    dirs = []
    for name in order:
        with lab.loop_device(256, DEVICES[name], prefix="iofp-bench", fill=True) as dev:
            out = run_dir / f"r-{name}"
            iofp("replay", TRACE, "--between", 2, 8, "--target", dev, "--label", f"device={name}",
                 "-o", out, "--force", log=log)  # fmt: skip
            dirs.append(out)
    doc_path = run_dir / "compare.json"
    proc = iofp("compare", *dirs, "--slo", SLO, "--json", doc_path, "--force", log=log)
    doc = json.loads(doc_path.read_text()) if doc_path.is_file() else {"rows": []}
    verdicts = {r["name"]: r.get("verdict") or r.get("slo") for r in doc["rows"]}
    return {"rc": proc.returncode, "slo": verdicts,
            "fidelity": {r["name"]: f"{r['fidelity']}, {r['timing']}" for r in doc["rows"]}}  # fmt: skip


def decide_headroom(run_dir: Path, order: list[str], log: list[dict]) -> dict:
    """Sweep each device, then rank them with compare: factors, 1x, whose limit, ranking."""
    from iofp import headroom_result as hr

    dirs, out = [], {"rc": {}, "factor": {}, "holds_1x": {}, "bound": {}, "finding": {}}
    for name in order:
        with lab.loop_device(256, DEVICES[name], prefix="iofp-bench", fill=True) as dev:
            d = run_dir / f"h-{name}"
            proc = iofp("headroom", TRACE, "--between", 5, 7, "--target", dev, "--slo", SLO,
                        "--scales", "1,2,4", "--budget", 5, "--label", f"device={name}", "-o", d,
                        "--force", log=log)  # fmt: skip
            dirs.append(d)
        out["rc"][name] = proc.returncode
        if not hr.is_result(d):
            continue
        h = hr.load(d)[1].headroom
        out["factor"][name] = h.factor if h else None
        if h is not None and h.bound in hr.NO_FAILURE_BOUNDS:  # a lower bound, nothing failed above it
            out["factor"][name] = f"inconclusive ({h.bound}) above {h.factor or 0:g}x"
        out["holds_1x"][name] = _holds_1x(h)
        out["bound"][name] = _whose(hr.load(d)[1])
        out["finding"][name] = h.finding if h else ""
    doc_path = run_dir / "rank.json"
    out["rank_rc"] = iofp("compare", *dirs, "--slo", SLO, "--json", doc_path, "--force", log=log).returncode
    doc = json.loads(doc_path.read_text()) if doc_path.is_file() else {"rows": []}
    out["ranking"] = doc.get("ranking") or " > ".join(r["name"] for r in doc["rows"])
    return out


def _holds_1x(h) -> str:
    if h is None:
        return "-"
    from iofp import headroom_result as hr

    if h.factor is None and h.bound in hr.NO_FAILURE_BOUNDS:  # not shown either way
        return f"inconclusive ({h.bound})"
    return "yes" if h.factor is not None else "no"


def _whose(res) -> str:
    """The bound and, for a rate bound, whose saturation stopped the sweep."""
    h = res.headroom
    if h is None:
        return "-"
    failed = next((s for s in res.steps if s.scale == h.failed_at and s.dir), None)
    who = getattr(failed, "saturation", None) if failed else None
    return f"{h.bound} ({who})" if who else h.bound


def one_run(tag: str, i: int, n_hogs: int) -> dict:
    run_dir = OUT / tag / f"run-{i:02d}-{'busy' if n_hogs else 'quiet'}"
    run_dir.mkdir(parents=True, exist_ok=True)
    order = list(DEVICES) if i % 2 == 0 else list(DEVICES)[::-1]
    rec: dict = {"tag": tag, "run": i, "hogs": n_hogs, "order": order, "filled": True,
                 "started": time.time(), "log": []}  # fmt: skip
    for name, decide in (("compare", decide_compare), ("headroom", decide_headroom)):
        with heavy_lock(), lab.cpu_hogs(n_hogs):
            rec[name] = decide(run_dir, order, rec["log"])
        print(f"run {i} ({n_hogs} hogs) {name}: {json.dumps(rec[name], default=str)}", flush=True)
    return rec


# ---- the summary -------------------------------------------------------------------------------


def verdicts(rec: dict) -> dict[str, str]:
    """The decisions a buyer acts on, one string each."""
    c, h = rec["compare"], rec["headroom"]
    out = {f"compare SLO {n}": str(v) for n, v in sorted(c["slo"].items())}
    out |= {f"headroom holds 1x {n}": str(v) for n, v in sorted(h["holds_1x"].items())}
    out |= {f"headroom factor {n}": _factor(v) for n, v in sorted(h["factor"].items())}
    out |= {f"headroom bound {n}": str(v) for n, v in sorted(h["bound"].items())}
    rank = h["ranking"]  # the order, not the reason given for it ("... (disk-loop's commit p50 ...)")
    out["headroom ranking"] = "inconclusive" if rank.startswith("inconclusive") else rank.split(" (", 1)[0]
    return out


BUSY_PRESSURE = 0.10  # iofp/host_evidence.py's HOST_PRESSURE: a host this busy cannot convict a device


def blamed(recs: list[dict], hogs: int) -> str:
    """How many verdicts named the device (a sweep's "device" bound, or a compare FAIL) while the
    CPU pressure over that command (for compare, the device's replay) was at least BUSY_PRESSURE: the
    bench's own reading of /proc/pressure/cpu, the same for the old iofp and the new."""
    named = busy = 0
    for r in (x for x in recs if x["hogs"] == hogs):
        for e in r["log"]:
            args = e["args"]
            if e["cmd"] == "headroom":
                name = args[args.index("--label") + 1].split("=", 1)[1]
                says = r["headroom"]["bound"].get(name, "")
                if "(device)" in says or says.startswith(("first step", "rate", "slo")):
                    named += 1
                    busy += e["cpu_pressure"] >= BUSY_PRESSURE
            elif e["cmd"] == "replay":  # compare's verdict on this device, from this replay's run
                name = args[args.index("--label") + 1].split("=", 1)[1]
                if r["compare"]["slo"].get(name) == "FAIL":
                    named += 1
                    busy += e["cpu_pressure"] >= BUSY_PRESSURE
    return (f"{hogs} hogs: {named} verdicts named the device (a FAIL or a device bound); {busy} of them "
            f"while the CPU pressure over the command was >= {BUSY_PRESSURE:.0%}")  # fmt: skip


def _interval(run_dir: Path, name: str) -> tuple[float, float] | None:
    """What a sweep stated about a device as (held, failed): it held `held`x (0: not even 1x) and
    failed by its own limit at `failed`x, where it stopped or at a scale above (inf: no such failure
    stated: the host, the budget, runs that disagreed, its limit). None when the sweep left no result."""
    from iofp import headroom_result as hr
    from replay.compare.table import _fails_at

    d = run_dir / f"h-{name}"
    if not hr.is_result(d) or (h := (res := hr.load(d)[1]).headroom) is None:
        return None
    stopped = h.failed_at if h.bound in ("rate", "slo", "first step") and h.failed_at else None
    above = _fails_at(res)  # a scale above the factor whose runs all failed: "it fails at 4x", said too
    return h.factor or 0.0, min((x for x in (stopped, above) if x is not None), default=float("inf"))


def contradictions(tag: str, recs: list[dict]) -> list[str]:
    """Headroom statements about one device that cannot both be true: one run held a load at which
    another said the device failed by its own limit. "At least 4x" and "at least 6x" do not contradict
    (the string flip count above counts them); "holds 3.5x, fails at 4x" and "holds 4x" do."""
    out = []
    for name in DEVICES:
        said = []
        for r in recs:
            kind = "busy" if r["hogs"] else "quiet"
            iv = _interval(OUT / tag / f"run-{r['run']:02d}-{kind}", name)
            if iv is not None:
                said.append((kind, r["run"], iv))
        pairs = {"quiet": 0, "busy vs quiet": 0}
        bad = []
        for i, (ka, ra, a) in enumerate(said):
            for kb, rb, b in said[i + 1 :]:
                if "quiet" not in (ka, kb) or not (a[0] >= b[1] or b[0] >= a[1]):
                    continue
                pairs["quiet" if ka == kb else "busy vs quiet"] += 1
                bad.append(f"run {ra} {_said(a)} / run {rb} {_said(b)}")
        which = f" ({'; '.join(bad)})" if bad else ""
        out.append(f"headroom {name}: contradicting statements: {pairs['quiet']} quiet pairs, "
                   f"{pairs['busy vs quiet']} busy-vs-quiet pairs{which}")  # fmt: skip
    return out


def _said(iv: tuple[float, float]) -> str:
    held = f"holds {iv[0]:g}x" if iv[0] else "misses 1x"
    return held + (f", fails at {iv[1]:g}x" if iv[1] != float("inf") else "")


def _unjudged(said: str) -> bool:
    """No verdict about the device: "inconclusive ...", or a sweep's bound "host" (its steps
    inconclusive because the host was busy: iofp.headroom_result.UNJUDGED_BOUNDS)."""
    return said.startswith(("inconclusive", "host"))


def _factor(v: float | str | None) -> str:
    if isinstance(v, str):
        return v
    return "<1x" if v is None else f"{v:g}x"


def summarize(tag: str) -> str:
    recs = [json.loads(x) for x in (OUT / f"{tag}.jsonl").read_text().splitlines() if x.strip()]
    quiet = [verdicts(r) for r in recs if not r["hogs"]]
    busy = [verdicts(r) for r in recs if r["hogs"]]
    keys = list(dict.fromkeys(k for v in quiet + busy for k in v))
    head = "| decision | quiet verdicts | busy verdicts | quiet flips | busy: opposite / inconclusive |"
    lines = [head, "|---|---|---|---|---|"]
    for k in keys:
        q = [v.get(k, "-") for v in quiet]
        b = [v.get(k, "-") for v in busy]
        ref = Counter(q).most_common(1)[0][0] if q else "-"
        qf = sum(x != ref for x in q)
        inc = sum(map(_unjudged, b))
        bf = sum(x != ref and not _unjudged(x) for x in b)
        flips = f"{qf}/{len(q)} | {bf}/{len(b)} / {inc}/{len(b)}"
        lines.append(f"| {k} | {', '.join(q)} | {', '.join(b)} | {flips} |")
    lines.append("")
    lines += [blamed(recs, hogs) for hogs in sorted({r["hogs"] for r in recs})]
    lines += contradictions(tag, recs)
    press = [(r["hogs"], e["cpu_pressure"]) for r in recs for e in r["log"]]
    for n in sorted({h for h, _ in press}):
        vals = sorted(p for h, p in press if h == n)
        lines.append(f"\nCPU pressure (some) over each command, {n} hogs: median {vals[len(vals) // 2]:.0%}, "
                     f"range {vals[0]:.0%}-{vals[-1]:.0%} ({len(vals)} commands)")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tag", default="run")
    ap.add_argument("--runs", type=int, default=5, help="runs of each kind (quiet and busy), alternating")
    ap.add_argument("--hogs", type=int, default=2, help="CPU hogs beside a busy run")
    ap.add_argument("--only", choices=("quiet", "busy"), help="only this kind of run")
    ap.add_argument("--summarize", metavar="TAG", help="print the flip table of TAG's runs and exit")
    a = ap.parse_args()
    if a.summarize:
        print(summarize(a.summarize))
        return
    if os.geteuid() != 0:
        raise SystemExit("verdict_flips: needs root (loop devices, iofp's capture)")
    OUT.mkdir(parents=True, exist_ok=True)
    kinds = {"quiet": [0], "busy": [a.hogs], None: [0, a.hogs]}[a.only]
    done = sum(1 for _ in (OUT / f"{a.tag}.jsonl").open()) if (OUT / f"{a.tag}.jsonl").exists() else 0
    for _ in range(a.runs):
        for n in kinds:
            rec = one_run(a.tag, done, n)
            done += 1
            with (OUT / f"{a.tag}.jsonl").open("a") as f:
                f.write(json.dumps(rec, default=str) + "\n")
    print(summarize(a.tag))


if __name__ == "__main__":
    main()
