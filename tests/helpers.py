"""Helpers the tests share: the real `iofp` entry point in-process (the one CLI harness), small traces
written through the contract, and the shared real traces imported with `iofp import`."""

from __future__ import annotations

import functools
import gzip
import math
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

import lab
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from conftest import REPO, SHARED_TRACES
from typer.testing import CliRunner

from cli.app import main
from iofp import headroom_result as hr
from iofp import probe_result as pr
from iofp.contract import SCHEMAS, TraceMeta, TraceWriter, open_trace

# The real `iofp` as a child process (run with cwd=REPO): for signals, priorities, cgroups and
# anything else a test cannot do to the in-process run_iofp.
IOFP = [sys.executable, "-m", "cli.app"]
MEASURE_NICE = lab.MEASURE_NICE  # tests/lab.py says why (the benchmarks take it from there)


def iofp_in(
    group: Path | None, *args: object, nice: int = 0, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """`iofp ARGS` as a child process in the blkio group `group` if given (the fio it starts inherits
    it: a throttle applies to the process that submits the I/O), at `nice` (a negative value keeps a
    busy CI machine's other work off the replayer's CPU where a test measures the device: MEASURE_NICE)."""
    return subprocess.run([*IOFP, *map(str, args)], cwd=REPO, capture_output=True, text=True,
                          preexec_fn=lab.join(group, nice), timeout=timeout)  # fmt: skip


cpu_hogs = lab.cpu_hogs  # the tests' name for it


def run_iofp(*args: str) -> tuple[int, str, str]:
    """Run the real `iofp` entry point (with its error mapping) in-process: (exit code, stdout, stderr)."""
    runner = CliRunner()
    argv = sys.argv
    with runner.isolation() as (out, err, _):
        sys.argv = ["iofp", *map(str, args)]
        try:
            main()
            code = 0
        except SystemExit as e:
            code = int(e.code or 0)
        finally:
            sys.argv = argv
        stdout, stderr = out.getvalue().decode(), err.getvalue().decode()
    return code, stdout, stderr


def import_trace(fmt: str, src: Path, out: Path) -> Path:
    """Import a shared trace with the public `iofp import` (the fingerprint stage's importer)."""
    code, _, stderr = run_iofp("import", fmt, str(src), "-o", str(out))
    assert code == 0, stderr
    return out


def write_trace(root: Path, rows: dict, **meta) -> Path:
    """A small real trace written through the contract."""
    n = len(rows["ts_ns"])
    rows = {"device": ["loop9"] * n, **rows}
    with TraceWriter(root, TraceMeta(source="test", **meta)) as w:
        w.write("io", pa.table(rows))
    return root


def slowed_trace(src: Path, between_s: tuple[float, float], factor: int, root: Path) -> Path:
    """The slice `between_s` of the trace at `src`, its clock slowed `factor` times and started at 0:
    the same workload at 1/factor of its rate. Latencies are slowed too, so that a sync call's span
    still covers the writes it forced (replay/iolog/commits.py pairs them by time)."""
    src_trace = open_trace(src)
    lo, hi = (round(s * 1e9) for s in between_s)
    meta = dict(labels=src_trace.meta.labels, devices=src_trace.meta.devices, duration_ns=(hi - lo) * factor)
    with TraceWriter(root, TraceMeta(source="test", **meta)) as w:
        for table in SCHEMAS:
            rows = pa.Table.from_batches(list(src_trace.batches(table)), SCHEMAS[table])
            rows = rows.filter(pc.and_(pc.greater_equal(rows["ts_ns"], lo), pc.less(rows["ts_ns"], hi)))
            for col in ("ts_ns", "queue_ns", "lat_ns"):
                if col in rows.column_names:
                    shift = 0 if col == "lat_ns" else lo
                    slowed = pc.multiply(pc.subtract(rows[col], shift), factor)
                    rows = rows.set_column(rows.column_names.index(col), col, slowed)
            w.write(table, rows)
    return root


def blkreplay_records(src: Path) -> list[tuple[int, str]]:
    """(ts_ns, op) of every record of a blkreplay .load file, parsed independently of iofp."""
    out = []
    with gzip.open(src, "rt") as f:
        for line in f:
            p = [x.strip() for x in line.split(";")]
            try:
                t, op = float(p[0]), p[3]
                int(p[1]), int(p[2])
            except (ValueError, IndexError):
                continue
            out.append((round(t * 1e9), "read" if op.startswith("R") else "write"))
    return out


SHARED = {
    "mysql": ("blkreplay", "linux-mysql.load.gz"),
    "mssql": ("blkreplay", "windows-mssql.load.gz"),
    "tpcc": ("disksim", "tpcc-small.trace"),
}


def shared_trace(which: str, tmp_path_factory) -> Path:
    """One of the shared real traces, imported into a scratch trace (skips without the shared files)."""
    fmt, name = SHARED[which]
    if not (SHARED_TRACES / name).exists():
        pytest.skip(f"needs the shared traces at {SHARED_TRACES}")
    return import_trace(fmt, SHARED_TRACES / name, tmp_path_factory.mktemp("t") / which)


def mysql_load() -> Path:
    return SHARED_TRACES / "linux-mysql.load.gz"


def io_lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


def synthetic_steady_with_spike(
    tmp_path, rate=1000, seconds=60, spike=(30, 35), spike_rate=5000, spike_size=4096
):
    """Poisson arrivals at `rate`/s of 4 KiB, at `spike_rate`/s of `spike_size` during [spike) seconds."""
    rng = np.random.default_rng(7)
    ts = []
    for s in range(seconds):
        r = spike_rate if spike[0] <= s < spike[1] else rate
        ts.append(np.sort(rng.uniform(s, s + 1, rng.poisson(r))))
    t = (np.concatenate(ts) * 1e9).astype(np.int64)
    n = len(t)
    with TraceWriter(tmp_path / "syn", TraceMeta(source="import:synthetic")) as w:
        w.write("io", pa.table({
            "ts_ns": t, "device": ["d"] * n, "offset": rng.integers(0, 1 << 20, n) * 4096,
            "size": np.where((t >= spike[0] * 1e9) & (t < spike[1] * 1e9), spike_size, 4096).astype(np.int32),
            "op": np.where(rng.random(n) < 0.7, "read", "write"),
            "lat_ns": rng.integers(50_000, 150_000, n),
        }))  # fmt: skip
    return tmp_path / "syn"


# The commit burst's wall clock: its capture starts at 09:14:30 local time, its spike is 42-47 s.
COMMIT_BURST_START = (2026, 1, 5, 9, 14, 30)
COMMIT_BURST_SPIKE = ("09:15:12", "09:15:17")


def commit_burst_trace(root: Path, fsync_us: int = 130, seconds: int = 90, base_fsync_us: int = 60) -> Path:
    """A capture of an order router's database (source "capture", a wall clock from 09:14:30 local
    time) whose one spike is commit-bound: a WAL writer (pid 4101) appends 8 KiB and fdatasyncs 300
    times a second, a reader (4102) reads 8 KiB at random 500 times a second; from 42 to 47 s (09:15:12
    to 09:15:17) the WAL writer commits 2,400/s and a second committer (4103) 600/s, each fdatasync
    taking `fsync_us` (`base_fsync_us` before): 3,000 commits/s x 130 µs is 39% of wall time in fsync. Each
    commit is its write (40 µs) and the flush it causes (30 µs), issued by the committer."""
    from datetime import datetime

    rows: dict[str, list[Any]] = {k: [] for k in ("ts_ns", "lat_ns", "offset", "size", "op", "pid", "comm")}
    sync: dict[str, list[Any]] = {k: [] for k in ("ts_ns", "lat_ns", "pid", "tid", "comm")}
    end = {4101: 0, 4103: 1 << 30}  # each committer appends to a log of its own

    def add(t: int, lat: int, off: int, size: int, op: str, pid: int, comm: str) -> None:
        for k, v in zip(rows, (t, lat, off, size, op, pid, comm), strict=True):
            rows[k].append(v)

    def commits(t0_ns: int, rate: int, pid: int, comm: str, lat_us: int) -> None:
        for i in range(rate):
            t = t0_ns + (i * 10**9) // rate + pid % 7 * 1000  # the committers never start together
            sync_t, size = t, 8192
            for k, v in zip(sync, (sync_t, lat_us * 1000, pid, pid, comm), strict=True):
                sync[k].append(v)
            add(t + 5_000, 40_000, end[pid], size, "write", pid, comm)
            add(t + 50_000, 30_000, 0, 0, "flush", pid, comm)
            end[pid] += size

    rng = np.random.default_rng(27)
    for sec in range(seconds):
        t0 = sec * 10**9
        burst = 42 <= sec < 47
        commits(t0, 2400 if burst else 300, 4101, "walwriter", fsync_us if burst else base_fsync_us)
        if burst:
            commits(t0, 600, 4103, "backend", fsync_us)
        for i in range(500):
            add(t0 + i * 2_000_000 + 700_000, 80_000, int(rng.integers(0, 1 << 17)) * 8192, 8192, "read",
                4102, "reader")  # fmt: skip
    order = np.argsort(rows["ts_ns"], kind="stable")
    io = pa.table({k: pa.array(np.asarray(v)[order]) for k, v in rows.items()})
    io = io.append_column("device", pa.array(["nvme0n1"] * io.num_rows))
    sync["call"] = ["fdatasync"] * len(sync["ts_ns"])
    start = round(datetime(*COMMIT_BURST_START).timestamp() * 1e9)
    meta = TraceMeta(source="capture", capture_start_ns=start, duration_ns=seconds * 10**9,
                     labels={"service": "order-router"})  # fmt: skip
    with TraceWriter(root, meta) as w:
        w.write("io", io)
        w.write("sync", pa.table(sync))
    return root


def load_result(out: Path) -> dict:
    """A replay's results.json, read through the replay result contract, as the dict it writes."""
    from iofp.replay_result import load

    return load(out)[1].to_dict()


def differences(a: object, b: object, at: str = "") -> list[str]:
    """Where two JSON values differ, floats to a relative 1e-12: "regimes.spikes[0].p99_us: 1.0 != 2.0",
    so a failed comparison names its fields."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return [f"{at or '.'}: keys {sorted(a.keys() ^ b.keys())} in one only"]
        return [d for k in a for d in differences(a[k], b[k], f"{at}.{k}" if at else str(k))]
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{at}: {len(a)} != {len(b)} items"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{at}[{i}]")]
    if isinstance(a, float) or isinstance(b, float):
        numbers = isinstance(a, (int, float)) and isinstance(b, (int, float))
        same = numbers and math.isclose(a, b, rel_tol=1e-12)
    else:
        same = a == b
    return [] if same else [f"{at}: {a!r} != {b!r}"]


def close(a: object, b: object) -> bool:
    """Equal JSON values, floats to a relative 1e-12."""
    return not differences(a, b)


def png_pixels(path: Path) -> np.ndarray:
    """The pixels (height x width x channels, uint8) of an 8-bit PNG such as a Chromium screenshot,
    decoded here (zlib and the five PNG row filters), so a test can look at what was drawn."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    pos, idat = 8, []
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            assert depth == 8, f"{path}: {depth}-bit PNG"
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + n
    bpp = {0: 1, 2: 3, 4: 2, 6: 4}[ctype]
    raw, stride = zlib.decompress(b"".join(idat)), w * bpp
    out = np.zeros((h, stride), np.uint8)
    prev = np.zeros(stride, np.int64)
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = np.frombuffer(raw, np.uint8, stride, y * (stride + 1) + 1).astype(np.int64)
        if f == 1:  # Sub: a running sum along the row, per channel
            line = np.cumsum(line.reshape(w, bpp), axis=0).reshape(-1) & 255
        elif f == 2:  # Up
            line = (line + prev) & 255
        elif f in (3, 4):  # Average, Paeth: each byte depends on the one decoded before it
            cur, up = line.tolist(), prev.tolist()
            for i in range(stride):
                a = cur[i - bpp] if i >= bpp else 0
                if f == 3:
                    cur[i] = (cur[i] + ((a + up[i]) >> 1)) & 255
                    continue
                c = up[i - bpp] if i >= bpp else 0
                p = a + up[i] - c
                pa, pb, pc = abs(p - a), abs(p - up[i]), abs(p - c)
                cur[i] = (cur[i] + (a if pa <= pb and pa <= pc else up[i] if pb <= pc else c)) & 255
            line = np.array(cur, np.int64)
        out[y] = line
        prev = line
    return out.reshape(h, w, bpp)


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    pytest.skip("needs chromium (apt install chromium) to render the report")


def run_chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def screenshot(tmp_path: Path, page: Path, size: str = "1280,1400") -> np.ndarray:
    """Chromium's rendering of `page` (its PNG kept beside it in tmp_path): the pixels."""
    png = tmp_path / f"{page.stem}.png"
    shot = run_chromium(f"--screenshot={png}", f"--window-size={size}", page.as_uri())
    assert shot.returncode == 0, shot.stderr[-2000:]
    return png_pixels(png)


def keep_artifact(path: Path, test: str) -> Path:
    """An artifact a reviewer looks at (a report's screenshot): it stays where the test wrote it
    (pytest's tmp dir: /tmp/pytest-of-USER/pytest-N/...), and is copied to $IOFP_ARTIFACTS/TEST/
    when that is set (CI keeps that directory). Returns where it is kept."""
    where = os.environ.get("IOFP_ARTIFACTS")
    if not where:
        return path
    dest = Path(where) / test / path.name
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(path, dest)
    return dest


def assert_drawn(tmp_path: Path, page: Path, size: str = "1280,1400") -> np.ndarray:
    """Chromium renders the page and the screenshot shows a drawing: a blank page is one colour
    (standard deviation 0); text and charts on white spread the grey levels and cover some of it."""
    pixels = screenshot(tmp_path, page, size)
    keep_artifact(tmp_path / f"{page.stem}.png", tmp_path.name)
    grey = pixels[..., :3].mean(axis=2)
    assert grey.std() > 10, grey.std()
    assert 0.01 < (grey < 200).mean() < 0.6, (grey < 200).mean()  # inked (2-6% here), not a solid block
    return pixels


def interrupted_headroom(trace: Path, dev: str, out: Path, *args: str) -> tuple[int, str, str]:
    """`iofp headroom` (this checkout's, in a process of its own, at MEASURE_NICE like the other sweeps)
    sent SIGINT half a second into its 1.5x step, as a user at a terminal would: (exit status, stdout,
    stderr). The 1x step before it may have needed a confirming run on a busy machine."""

    def start() -> None:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # as a terminal starts it
        os.nice(MEASURE_NICE)

    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.app", "headroom", str(trace), "--target", dev, "--slo", "p99<=50ms",
         "-o", str(out), *args],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=start,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not list((out / "steps").glob("*-x1.5/fio.cmd")):
            assert time.monotonic() < deadline and proc.poll() is None, "the 1.5x step never started"
            time.sleep(0.02)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        stdout, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:  # the test failed: no sweep left running on a device about to go
            proc.kill()
            proc.wait()
    return proc.returncode, stdout, err


def headroom_record(steps: list[hr.Step], **fields: Any) -> hr.HeadroomResult:
    """A headroom record of `steps` (iofp/headroom_result.py) for the rules that read one: a candidate
    at 1,000 IOPS judged against p99<=2ms, its ceiling measured (no limit)."""
    base = dict(
        tool_version="t", host="h", kernel="k", started="s", trace={}, target={"path": "/dev/loop9"},
        labels={"device": "cand"}, slo="p99<=2ms", settings={"selection": {"regime": "spike"}},
        selection="spike", demand={"iops": 1000.0, "commits_per_s": None}, ceiling=hr.Ceiling("measured"),
        steps=steps,
    )  # fmt: skip
    return hr.HeadroomResult(**(base | fields))


def probe_record(**fields: Any) -> pr.ProbeResult:
    """A probe record (iofp/probe_result.py) of one run and one cell: 4 KiB random reads at QD1 on a
    RAM loop, its sweep of that one point (no knee)."""
    base = dict(
        kind=pr.KIND, version=pr.VERSION, tool_version="0", fio_version="fio-3.33", host="h", kernel="k",
        started="2026-11-24T00:00:00+00:00",
        target=pr.Target("/dev/loop9", "block", "loop9", 1 << 30, 1 << 30, 512, {"dev": "7:9"}),
        labels={"device": "ram-loop"}, settings={"qd": [1, 8]},
        workload=pr.Workload("defaults", 4096, 4096, [1, 32], [1, 8], {"read_size": "default 4KiB"}),
        runs_planned=2,
        runs=[pr.Run("01-randread-qd1", "runs/01-randread-qd1", "randread", "randread", 4096, 1, 1, None, 1.0,
                     0, 1, 2, fio=pr.FioFigures(10, 10.0, 0.04, 5.0, 9.0, 9.5, 1000),
                     steady=pr.Steadiness("steady", 0.1, 9, 0.05, 0.02))],
        cells=[pr.Cell(1, "rand read 4KiB QD1", "01-randread-qd1")],
        sweep=pr.Sweep(4096, [pr.SweepPoint(1, "01-randread-qd1", 10.0, 5.0, 9.0, 9.5)], None, "rule",
                       0.1, 0.5, "no knee"),
    )  # fmt: skip
    return pr.ProbeResult(**(base | fields))


def raw_io(issue_ns, lat_ns, ops, *, dev: int = (7 << 20) | 9, size: int = 4096) -> np.ndarray:
    """The capture's raw io records (bpf/record.py's IO_DTYPE) of requests with these issue times,
    latencies (None: a completion nobody saw, as the kernel marks it) and ops, for the recorder's
    tests that need no kernel: the op codes come from this kernel's BTF, as the capture's do."""
    from bpf.record import IO_DTYPE

    code = _op_codes()
    n = len(issue_ns)
    recs = np.zeros(n, IO_DTYPE)
    recs["issue_ns"] = issue_ns
    recs["queue_ns"] = np.asarray(issue_ns) - 1000
    lat = np.array([0 if x is None else x for x in lat_ns], np.uint64)
    recs["complete_ns"] = np.asarray(issue_ns, np.uint64) + lat
    unseen = np.array([x is None for x in lat_ns], bool)
    recs["complete_ns"][unseen] |= np.uint64(1 << 63)
    recs["cmd_flags"] = [code[o] for o in ops]
    recs["bytes"] = [0 if o == "flush" else size for o in ops]
    recs["sector"] = np.arange(n) * 8
    recs["dev"] = dev
    recs["pid"] = 4242
    recs["inflight"] = 1
    recs["comm"] = b"fio"
    return recs


@functools.cache
def _op_codes() -> dict[str, int]:
    """read, write, flush, discard -> this kernel's opcode (the lowest one of each op)."""
    from bpf.btf import kernel_btf
    from bpf.record import ReqBits

    return {op: c for c, op in sorted(ReqBits.from_btf(kernel_btf()).ops.items(), reverse=True)}


def raw_sync(enter_ns, lat_ns) -> np.ndarray:
    """The capture's raw sync-call records (fsync) entered and lasting as given."""
    from bpf.record import SYNC_DTYPE

    recs = np.zeros(len(enter_ns), SYNC_DTYPE)
    recs["enter_ns"] = enter_ns
    recs["exit_ns"] = np.asarray(enter_ns, np.uint64) + np.asarray(lat_ns, np.uint64)
    recs["pid"] = recs["tid"] = 4242
    recs["fd"] = 3
    recs["comm"] = b"fio"
    return recs
