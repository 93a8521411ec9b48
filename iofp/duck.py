"""One way to open DuckDB, for every stage, and one way to read a named query's rows.

Two cores and several engineers share a machine: DuckDB gets a bounded share of memory and threads,
and spills the sorts of a large trace to a scratch directory instead of growing past the limit. The
spill goes to this process's private scratch directory (iofp/scratch.py: removed on every exit, a
killed process's leftovers by the next run) and is bounded too (`max_temp_directory_size`:
$IOFP_DUCKDB_TEMP, else TEMP_LIMIT or half the free space there, whichever is less): a query that
needs more fails in one line instead of filling the disk.

DuckDB expands glob characters (`*`, `?`, `[`) in every path it reads: a trace directory named `tr*`
read every sibling trace. `literal` gives it paths it reads as they are.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import duckdb

from iofp import scratch
from iofp.sqlfiles import load_sql

MEMORY_LIMIT = os.environ.get("IOFP_DUCKDB_MEMORY", "3GB")
THREADS = int(os.environ.get("IOFP_DUCKDB_THREADS", str(min(os.cpu_count() or 1, 4))))
TEMP_LIMIT = 16 << 30  # bytes a query may spill, unless $IOFP_DUCKDB_TEMP says otherwise
GLOB = frozenset("*?[")  # what DuckDB's file system takes for a pattern (FileSystem::HasGlob)
_connections = itertools.count()


def connect(database: str | Path = ":memory:", *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with iofp's limits (memory, threads, where sorts spill and how much)."""
    spill = scratch.directory() / f"duckdb-{next(_connections)}"  # DuckDB makes it, and removes it
    config = {
        "memory_limit": MEMORY_LIMIT,
        "threads": THREADS,
        "temp_directory": str(spill),
        "max_temp_directory_size": os.environ.get("IOFP_DUCKDB_TEMP") or f"{_temp_limit(spill.parent)}B",
    }
    return duckdb.connect(str(database), read_only=read_only, config=config)


def _temp_limit(where: Path) -> int:
    free = shutil.disk_usage(where).free
    return max(1 << 20, min(TEMP_LIMIT, free // 2))


def literal(paths: list[Path]) -> list[str]:
    """`paths` as DuckDB reads them literally: when any holds a glob character, each is given as a link
    of a plain name in the scratch directory (in the same order), which DuckDB reads as it is."""
    if not any(GLOB & set(str(p)) for p in paths):
        return [str(p) for p in paths]
    links = Path(tempfile.mkdtemp(prefix="links-", dir=scratch.directory()))
    out = []
    for i, p in enumerate(paths):
        link = links / f"{i:06d}{p.suffix}"
        link.symlink_to(Path(p).absolute())
        out.append(str(link))
    return out


def dicts(cur: Any) -> list[dict[str, Any]]:
    """The rows of an executed query as dicts keyed by column name."""
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def run(
    con: duckdb.DuckDBPyConnection, package: str, name: str, params: dict[str, Any] | None = None
) -> None:
    """Run the named .sql file of `package` for its effect (a table made, rows inserted), with bound
    parameters; its result drained, as DuckDB requires."""
    con.execute(load_sql(package, name), params or {}).fetchall()


def query(
    con: duckdb.DuckDBPyConnection, package: str, name: str, params: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Run the named .sql file of `package` with bound parameters; its rows as dicts."""
    return dicts(con.execute(load_sql(package, name), params or {}))
