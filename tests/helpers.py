"""Helpers the tests share: the real `iofp` entry point in-process (the one CLI harness), small traces
written through the contract, and the shared real traces imported with `iofp import`."""

from __future__ import annotations

import gzip
import math
import os
import struct
import subprocess
import sys
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from conftest import SHARED_TRACES
from typer.testing import CliRunner

from cli.app import main
from iofp.contract import TraceMeta, TraceWriter


@contextmanager
def cpu_hogs() -> Iterator[None]:
    """A busy loop on every CPU (both CPUs busy, as on a loaded machine)."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        yield
    finally:
        for h in hogs:
            h.kill()
            h.wait()


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


SHARED = {"mysql": ("blkreplay", "linux-mysql.load.gz"), "tpcc": ("disksim", "tpcc-small.trace")}


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


def load_result(out: Path) -> dict:
    """A replay's results.json, read through the replay result contract, as the dict it writes."""
    from iofp.replay_result import load

    return load(out)[1].to_dict()


def close(a: object, b: object) -> bool:
    """Equal JSON values, floats to a relative 1e-12."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(close(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) or isinstance(b, float):
        return (
            isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=1e-12)
        )
    return a == b


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
