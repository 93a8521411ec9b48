"""Commit fidelity on a real database: is the replay's commit PostgreSQL's commit on the candidate?

Per run and per direction SRC:DST (device kinds: `ram`, a loop device over a /dev/shm file; `disk`, a
`--direct-io=on` loop device over a file on the VM disk; lab-devices.md):

  source  PostgreSQL (Debian's, a fresh cluster on ext4 on a SRC loop device, unix socket only) runs
          pgbench at a fixed rate and client count while iofp captures the device (block I/O + sync
          calls);
  replay  `iofp replay` of that capture onto a raw DST loop device (its own capture measures it);
  real    the same pgbench on a fresh cluster on ext4 on a DST loop device, captured the same way.

The commit figure is the fdatasync latency (entry to return) in each capture's sync table, by iofp's
own code (replay.run.measure): PostgreSQL's WAL fdatasyncs in the source and real runs, fio's in the
replay. The claim: replay p50 and p99 within 25% of real's. Replay and real alternate their order from
run to run (identical runs drift about ±10% on this VM). Each cluster's page cache is warmed before its
capture (every file of the data directory read once) so that source and real start from the same
state (a cold source cache otherwise adds thousands of reads the real run never makes).

Every loop device's backing file is written whole (zeros) before use. A sparse one is a thin-provisioned
device: the first write to each block allocates it in the host's filesystem and the next flush commits
that allocation, so a replay onto a fresh sparse target paid that on every WAL write (which always
lands on blocks the target never saw) while the real run's WAL had been zero-filled by PostgreSQL when
it made the segment: measured, replay write p50 211 µs vs 144 µs for the same 16 KiB WAL writes on
the same kind of device, fdatasync p50 672 vs 567 µs.

Every device, mount and cluster is torn down on exit, on error and on SIGINT/SIGTERM/SIGHUP. Needs
root, PostgreSQL (postgresql-15: scripts/setup.sh installs it), fio and the capture's kernel support.

    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.commit_fidelity --runs 3 --directions ram:disk

Results: a table on stdout, and OUT/results.json (every run's figures; the traces and replay
directories stay under OUT for re-examination).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from tests import lab

PG_BIN = Path("/usr/lib/postgresql")
KINDS = ("ram", "disk")
TARGET = 0.25  # the claim: replay within 25% of the database's own


def pg_bin() -> Path:
    """The newest installed PostgreSQL's bin directory (Debian's layout)."""
    found = sorted(PG_BIN.glob("*/bin/pg_ctl"), key=lambda p: int(p.parent.parent.name))
    if not found:
        raise SystemExit("no PostgreSQL under /usr/lib/postgresql; run scripts/setup.sh as root")
    return found[-1].parent


def sh(*args: str | Path, user: str | None = None, **kw: Any) -> subprocess.CompletedProcess[str]:
    cmd = [str(a) for a in args]
    if user:
        cmd = ["runuser", "-u", user, "--", *cmd]
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {res.returncode}: {res.stderr.strip()[-2000:]}")
    return res


class Lab:
    """Loop devices, mounts and clusters made by this bench, undone on close (last made, first undone)."""

    def __init__(self, workdir: Path, ram_prefix: str) -> None:
        self.workdir = workdir
        self.ram_prefix = ram_prefix
        self.stack = contextlib.ExitStack()
        self.bin = pg_bin()
        # Mount points where the postgres user can reach them (a test's or the caller's directory may
        # be private to root): a fresh directory under /tmp, removed on close.
        self.mnt_root = Path(tempfile.mkdtemp(prefix="iofp-pg-"))
        self.mnt_root.chmod(0o755)
        self.stack.callback(shutil.rmtree, self.mnt_root, ignore_errors=True)

    def loop(self, kind: str, size_mib: int) -> str:
        """A lab loop device of `kind` (ram: its file named by ram_prefix; disk: in workdir), its file
        written whole: see the module docstring (thin provisioning)."""
        ram = Path(self.ram_prefix)
        where, prefix = (ram.parent, ram.name.rstrip("-")) if kind == "ram" else (self.workdir, "disk")
        device = lab.loop_device(size_mib, lab.RAM if kind == "ram" else lab.DISK, fill=True, where=where,
                                 prefix=prefix)  # fmt: skip
        return self.stack.enter_context(device)

    def cluster(self, kind: str, size_mib: int, scale: int) -> tuple[str, Path]:
        """A fresh PostgreSQL cluster on ext4 on a new `kind` loop device, pgbench tables loaded,
        checkpointed and its files in the page cache; returns (device, socket directory)."""
        dev = self.loop(kind, size_mib)
        sh("mkfs.ext4", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", dev)
        mnt = self.mnt_root / Path(dev).name
        mnt.mkdir()
        sh("mount", dev, mnt)
        self.stack.callback(subprocess.run, ["umount", str(mnt)], check=False, capture_output=True)
        shutil.chown(mnt, "postgres")
        data = mnt / "data"
        sh(self.bin / "initdb", "-D", data, "--auth=trust", user="postgres")
        opts = f"-c listen_addresses='' -c unix_socket_directories={mnt}"
        sh(self.bin / "pg_ctl", "-D", data, "-o", opts, "-l", mnt / "pg.log", "-w", "start", user="postgres")
        self.stack.callback(
            subprocess.run,
            ["runuser", "-u", "postgres", "--", str(self.bin / "pg_ctl"), "-D", str(data), "-m", "fast",
             "-w", "stop"],
            check=False, capture_output=True,
        )  # fmt: skip
        sh(self.bin / "pgbench", "-h", mnt, "-i", "-q", "-s", str(scale), "postgres", user="postgres")
        sh(self.bin / "psql", "-h", mnt, "-c", "CHECKPOINT", "postgres", user="postgres")
        for f in data.rglob("*"):  # the page cache warm, as a database in service has it
            if f.is_file():
                with open(f, "rb") as fh:
                    while fh.read(1 << 20):
                        pass
        return dev, mnt

    def close(self) -> None:
        self.stack.close()


def pgbench_captured(lab: Lab, dev: str, sock: Path, out: Path, args: argparse.Namespace) -> dict[str, Any]:
    """pgbench on the cluster at `sock` while iofp captures `dev` into `out`; pgbench's own summary."""
    import bpf

    cmd = [str(lab.bin / "pgbench"), "-h", str(sock), "-n", "-R", str(args.rate), "-c", str(args.clients),
           "-j", str(min(args.clients, 2)), "-T", str(args.seconds), "postgres"]  # fmt: skip
    opts = bpf.CaptureOptions(output=out, devices=[Path(dev).name], force=True)
    with bpf.start_capture(opts) as bg:
        res = sh("runuser", "-u", "postgres", "--", *cmd)
        bg.stop()
    (out.parent / f"{out.name}.pgbench.txt").write_text(res.stdout + res.stderr)
    tps = [ln for ln in res.stdout.splitlines() if ln.startswith("tps =")]
    return {"pgbench_tps": float(tps[0].split()[2]) if tps else None}


def commit_figures(trace_dir: Path, comm: str) -> dict[str, Any]:
    """fdatasync count and p50/p99 (µs) from a capture's sync table, and the p99 (µs) of the block
    flushes (the device's own state during the run), by iofp's own measurement (replay.run.measure)."""
    from iofp.contract import open_trace
    from replay.run import measure

    m = measure(open_trace(trace_dir), "capture", comm=comm)
    lat = m.syncs.get("fdatasync")
    flush = m.ops.get("flush")  # the device's own state during the run: its flush tail
    out = {"flush_p99_us": flush.p99 / 1e3 if flush and flush.p99 else None}
    if lat is None or not lat.count:
        return out | {"fdatasync": 0, "p50_us": None, "p99_us": None}
    return out | {"fdatasync": lat.count, "p50_us": lat.p50 / 1e3, "p99_us": lat.p99 / 1e3}


def one_run(out: Path, src: str, dst: str, replay_first: bool, args: argparse.Namespace) -> dict:
    from iofp.contract import open_trace
    from replay import run as runner

    out.mkdir(parents=True, exist_ok=True)
    row: dict[str, Any] = {"direction": f"{src}:{dst}", "replay_first": replay_first}
    with contextlib.closing(Lab(args.out, args.ram_prefix)) as src_lab:
        dev, sock = src_lab.cluster(src, args.size_mib, args.scale)
        row["source"] = pgbench_captured(src_lab, dev, sock, out / "source", args)
    row["source"] |= commit_figures(out / "source", "postgres")

    def replay() -> None:
        with contextlib.closing(Lab(args.out, args.ram_prefix)) as rl:
            target = rl.loop(dst, args.size_mib)
            opts = runner.ReplayOptions(
                target=Path(target), output=out / "replay", force=True, progress=False
            )
            _, res = runner.replay(open_trace(out / "source"), opts)
        row["replay"] = commit_figures(out / "replay" / "capture", "fio") | {
            "fidelity": res.fidelity.get("verdict"),
            "commit_jobs": [s["name"] for s in res.plan["streams"] if s["kind"] == "commit"],
        }

    def real() -> None:
        with contextlib.closing(Lab(args.out, args.ram_prefix)) as rl:
            dev, sock = rl.cluster(dst, args.size_mib, args.scale)
            row["real"] = pgbench_captured(rl, dev, sock, out / "real", args)
        row["real"] |= commit_figures(out / "real", "postgres")

    for step in (replay, real) if replay_first else (real, replay):
        step()
    for p in ("p50_us", "p99_us"):
        r, a = row["replay"][p], row["real"][p]
        row[f"{p[:3]}_replay_over_real"] = r / a if r and a else None
    return row


def render(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| run | direction | source p50 / p99 | replay p50 / p99 | real p50 / p99 | replay/real p50 | p99 "
        "| device flush p99 replay / real |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(rows, 1):
        s, rp, rl = r["source"], r["replay"], r["real"]
        lines.append(
            f"| {i} | {r['direction']} | {_us(s)} | {_us(rp)} | {_us(rl)} | "
            f"{r['p50_replay_over_real']:.2f} | {r['p99_replay_over_real']:.2f} | "
            f"{rp['flush_p99_us']:.0f} / {rl['flush_p99_us']:.0f} µs |"
        )
    for d in sorted({r["direction"] for r in rows}):
        rs = [r for r in rows if r["direction"] == d]
        for p in ("p50", "p99"):
            q = [r[f"{p}_replay_over_real"] for r in rs]
            ok = all(abs(x - 1) <= TARGET for x in q)
            lines.append(
                f"{d} replay/real {p} (µs over µs): median {statistics.median(q):.2f}, range "
                f"{min(q):.2f}-{max(q):.2f} over {len(q)} runs: {'within' if ok else 'NOT within'} ±25%"
            )
    return "\n".join(lines)


def _us(f: dict[str, Any]) -> str:
    return f"{f['p50_us']:.0f} / {f['p99_us']:.0f} µs ({f['fdatasync']:,})" if f["p50_us"] else "-"


def _stop(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)  # unwinds every open Lab: clusters, mounts, devices


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--directions", default="ram:disk", help="SRC:DST pairs, comma-separated (ram, disk)")
    ap.add_argument("--seconds", type=int, default=20, help="pgbench run time per run (default 20)")
    ap.add_argument("--rate", type=int, default=300, help="pgbench -R, transactions/s (default 300)")
    ap.add_argument("--clients", type=int, default=4, help="pgbench -c (default 4)")
    ap.add_argument("--scale", type=int, default=10, help="pgbench -i -s (default 10: ~160 MB)")
    ap.add_argument("--size-mib", type=int, default=1024, help="each loop device's size (default 1024)")
    ap.add_argument("--out", type=Path, default=Path("commit-fidelity"), help="results directory")
    ap.add_argument("--ram-prefix", default="/dev/shm/iofp-commit-", help="RAM loop backing files' prefix")
    args = ap.parse_args(argv)
    dirs = [tuple(d.split(":")) for d in args.directions.split(",")]
    if any(len(d) != 2 or not set(d) <= set(KINDS) for d in dirs):
        ap.error(f"--directions {args.directions}: SRC:DST pairs of {', '.join(KINDS)}")
    if os.geteuid() != 0:
        ap.error("needs root (loop devices, mounts, capture)")
    args.out.mkdir(parents=True, exist_ok=True)
    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, _stop)
    args.out = args.out.absolute()
    rows: list[dict[str, Any]] = []
    for i in range(args.runs):
        for src, dst in dirs:
            t0 = time.monotonic()
            row = one_run(args.out / f"run{i + 1}-{src}-{dst}", src, dst, i % 2 == 0, args)
            rows.append(row | {"wall_s": round(time.monotonic() - t0, 1)})
            print(json.dumps(rows[-1]), file=sys.stderr)
            doc = {"args": vars(args) | {"out": str(args.out)}, "runs": rows}
            (args.out / "results.json").write_text(json.dumps(doc, indent=2))
    print(render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
