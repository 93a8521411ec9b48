"""A generated fleet lake: small host-day traces of known shape, written by iofp into a store.

Each trace is a database-like load (reads, writes, block flushes, fdatasync commits) over
`seconds` of wall clock from 09:15 UTC on its date, written through the trace contract's
TraceWriter and shipped to LAKE/host=/service=/date=/ by store's TraceShipping, as a capture to a
store is. `slow` multiplies the device's write, flush and commit latencies: a bad disk. Used by the
fleet tests and bench/fleet_scale.py.
"""

from __future__ import annotations

import calendar
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from iofp import objstore
from iofp.contract import TraceMeta, TraceWriter
from store import Shipper, TraceShipping

OPEN_UTC = (9, 15)


def day_start_ns(date: str) -> int:
    y, m, d = (int(x) for x in date.split("-"))
    return calendar.timegm((y, m, d, *OPEN_UTC, 0, 0, 0, 0)) * 1_000_000_000


def host_day(seed: int, *, rate: int = 200, seconds: int = 20, slow: float = 1.0) -> dict[str, pa.Table]:
    """The io and sync tables of one host-day: Poisson arrivals at `rate`/s, 70% reads of 4-16 KiB,
    a flush and an fdatasync per 10 writes; latencies log-normal around 200 us (reads), 400 us
    (writes), 1 ms (flush), 2 ms (commit), writes, flushes and commits times `slow`."""
    rng = np.random.default_rng(seed)
    n = rng.poisson(rate * seconds)
    ts = np.sort(rng.uniform(0, seconds * 1e9, n)).astype(np.int64)
    reads = rng.random(n) < 0.7
    flush = (~reads) & (rng.random(n) < 0.1)
    op = np.where(reads, "read", np.where(flush, "flush", "write"))
    base = np.where(reads, 200e3, np.where(flush, 1e6, 400e3)) * np.where(reads, 1.0, slow)
    lat = (base * rng.lognormal(0, 0.5, n)).astype(np.int64)
    size = np.where(flush, 0, rng.choice([4096, 8192, 16384], n)).astype(np.int32)
    io = pa.table({
        "ts_ns": ts, "queue_ns": ts - 1000, "lat_ns": lat, "device": ["nvme0n1"] * n,
        "offset": np.where(flush, 0, rng.integers(0, 1 << 22, n) * 4096), "size": size, "op": op,
        "pid": np.full(n, 4242, np.int32), "comm": ["postgres"] * n,
    })  # fmt: skip
    m = int((~reads & ~flush).sum() // 10)
    sts = np.sort(rng.uniform(0, seconds * 1e9, m)).astype(np.int64)
    sync = pa.table({
        "ts_ns": sts, "lat_ns": (2e6 * slow * rng.lognormal(0, 0.4, m)).astype(np.int64),
        "call": ["fdatasync"] * m, "pid": np.full(m, 4242, np.int32), "tid": np.full(m, 4243, np.int32),
        "comm": ["postgres"] * m, "fd": np.full(m, 7, np.int32), "ret": np.zeros(m, np.int64),
    })  # fmt: skip
    return {"io": io, "sync": sync}


def write_host_day(
    where: Path | objstore.Url, host: str, service: str, date: str, *, seed: int,
    shipper: Shipper | None = None, **shape: float,
) -> None:
    """Write one host-day trace: into the local lake directory `where` (host=/service=/date=/), or
    shipped by `shipper` to the lake at the store URL `where`."""
    tables = host_day(seed, **shape)  # type: ignore[arg-type]
    meta = TraceMeta(source="import:generated", host=host, kernel="6.1.0", labels={"service": service},
                     capture_start_ns=day_start_ns(date), duration_ns=int(shape.get("seconds", 20) * 1e9),
                     devices={"nvme0n1": {"model": "generated"}})  # fmt: skip
    if isinstance(where, Path):
        root = where / f"host={host}" / f"service={service}" / f"date={date}"
        with TraceWriter(root, meta) as w:
            for t, tbl in tables.items():
                w.write(t, tbl)
        return
    assert shipper is not None
    with tempfile.TemporaryDirectory(prefix="iofp-lake-") as tmp:
        w = TraceWriter(Path(tmp) / "t", meta, on_file=TraceShipping(where, shipper))
        for t, tbl in tables.items():
            w.write(t, tbl)
        w.close()  # the manifest, shipped last
        shipper.drain()


def fill_lake(
    where: Path | objstore.Url, services: list[str], hosts: int, dates: list[str], *,
    bad: tuple[str, int] | None = None, spool: Path | None = None, **shape: float,
) -> list[tuple[str, str, str]]:
    """Every service x host x date of a lake; `bad` = (service, host number) has a disk 6x slower (its
    commit p99, of ~30 commits a trace, then lands well clear of the view's 3x: 4x made 2.9x once).
    Returns the (host, service, date) written."""
    made = []
    remote = not isinstance(where, Path)
    shipper = Shipper(spool or Path(tempfile.mkdtemp(prefix="iofp-spool-"))) if remote else None
    try:
        for si, service in enumerate(services):
            for h in range(hosts):
                host = f"{service[:3]}-{h + 1:02d}"
                slow = 6.0 if bad == (service, h) else 1.0
                for di, date in enumerate(dates):
                    seed = hash((si, h, di)) & 0xFFFFFFFF
                    write_host_day(where, host, service, date, seed=seed, shipper=shipper, slow=slow, **shape)
                    made.append((host, service, date))
    finally:
        if shipper is not None:
            shipper.close()
    return made


def dates_from(first: str, n: int) -> list[str]:
    t0 = calendar.timegm(time.strptime(first, "%Y-%m-%d"))
    return [time.strftime("%Y-%m-%d", time.gmtime(t0 + 86400 * i)) for i in range(n)]
