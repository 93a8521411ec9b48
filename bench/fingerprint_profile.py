"""Profile one fingerprint: wall time per query, the Python time between them, and (with --explain)
DuckDB's own profile of each query (EXPLAIN ANALYZE's operator tree, as JSON).

    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.fingerprint_profile [--trace DIR] [--explain OUT]

Every statement the fingerprint runs is timed from `execute` until its rows are fetched (a
statement's result is materialised by `execute`; the fetch of a few summary rows is included) and
named by the .sql file it came from (fingerprint/sql, iofp/sql). What is not inside a statement is
Python: the regime rule, the scopes' summaries, the noise batches. The trace defaults to
bench.fingerprint_scale's 50 M rows.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import time
from collections import defaultdict
from importlib import resources
from pathlib import Path
from typing import Any

from iofp import duck

PACKAGES = ("fingerprint.sql", "iofp.sql")


def sql_names() -> dict[str, str]:
    """Query text -> the name of its .sql file."""
    out = {}
    for package in PACKAGES:
        for f in resources.files(package).iterdir():
            if f.name.endswith(".sql"):
                out[f.read_text()] = f.name[:-4]
    return out


class Timed:
    """A DuckDB connection that times every `execute` under the name of its query."""

    def __init__(self, con: Any, explain: Path | None) -> None:
        self._con, self._explain, self._names = con, explain, sql_names()
        self.times: dict[str, list[float]] = defaultdict(list)
        self._last = "(relation)"
        if explain:
            explain.mkdir(parents=True, exist_ok=True)
            con.execute("PRAGMA enable_profiling = 'json'")
            con.execute(f"PRAGMA profiling_output = '{explain / 'last.json'}'")

    def execute(self, query: str, params: Any = None) -> Any:
        self.keep_profile()
        name = self._names.get(query, "(other) " + " ".join(query.split())[:40])
        t0 = time.perf_counter()
        cur = self._con.execute(query, params or {})
        self.times[name].append(time.perf_counter() - t0)
        self._last = f"{name}.{len(self.times[name])}"
        return cur

    def sql(self, query: str, **kw: Any) -> Any:
        """A query read as a stream of Arrow batches (fingerprint/device_order.py): timed until its
        first batch can be read (DuckDB's sort); reading its batches is Python, outside the queries."""
        rel, timed = self._con.sql(query, **kw), self
        name = self._names.get(query, "(other)")

        class Stream:
            def to_arrow_reader(self, rows: int) -> Any:
                t0 = time.perf_counter()
                reader = rel.to_arrow_reader(rows)
                timed.times[f"{name} (to the first batch)"].append(time.perf_counter() - t0)
                return reader

        return Stream()

    def keep_profile(self) -> None:
        """DuckDB writes a query's profile once its result is consumed: file it under its name."""
        if self._explain and (self._explain / "last.json").exists():
            shutil.move(self._explain / "last.json", self._explain / f"{self._last}.json")

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._con, attr)


def operators(node: dict[str, Any]) -> list[tuple[float, str, int]]:
    """(seconds, operator name, rows out) of every operator under `node`."""
    out = [(float(node.get("timing", 0.0)), node.get("name", ""), int(node.get("intermediate_rows", 0)))]
    for child in node.get("children", []):
        out += operators(child)
    return out


def explained(path: Path) -> str:
    """One line from a query's JSON profile: wall and CPU time, peak buffer memory, bytes spilled,
    and the three costliest operators."""
    d = json.loads(path.read_text())
    q, sysinfo = d.get("query", {}), d.get("system", {})
    ops = sorted((o for root in d.get("operator", []) for o in operators(root)), reverse=True)[:3]
    top = ", ".join(f"{name} {t:.2f} s ({rows / 1e6:.1f} M rows)" for t, name, rows in ops)
    return (
        f"{path.stem:24s} {q.get('total_time', 0):6.2f} s, CPU {q.get('cpu_time', 0):6.2f} s, "
        f"peak {sysinfo.get('peak_buffer_memory', 0) / 2**20:6.0f} MiB, "
        f"spilled {sysinfo.get('total_bytes_spilled', 0) / 2**20:5.0f} MiB; {top}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", default="/tmp/iofp-bench/fp50m")
    ap.add_argument("--explain", type=Path, help="write DuckDB's JSON profile of each query here")
    a = ap.parse_args()
    from fingerprint import api

    timed: list[Timed] = []
    connect = duck.connect

    def connect_timed(*args: Any, **kw: Any) -> Any:
        timed.append(Timed(connect(*args, **kw), a.explain))
        return timed[-1]

    api.duck.connect = connect_timed  # type: ignore[attr-defined]
    t0 = time.perf_counter()
    fp = api.fingerprint_trace(a.trace)
    wall = time.perf_counter() - t0
    [t] = timed
    t.keep_profile()
    in_sql = sum(sum(v) for v in t.times.values())
    for name, v in sorted(t.times.items(), key=lambda kv: -sum(kv[1])):
        runs = f" ({len(v)} runs)" if len(v) > 1 else ""
        print(f"{sum(v):8.2f} s  {name}{runs}")
    print(f"{in_sql:8.2f} s  in queries; {wall - in_sql:.2f} s outside them (Python, opening the trace)")
    print(f"{wall:8.2f} s  total; {fp.whole.requests:,} requests; "
          f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")  # fmt: skip
    if a.explain:
        profiles = {p: json.loads(p.read_text())["query"]["total_time"] for p in a.explain.glob("*.json")}
        for path in sorted(profiles, key=lambda p: -profiles[p]):
            print(explained(path))


if __name__ == "__main__":
    main()
