"""One way to open DuckDB, for every stage, and one way to read a named query's rows.

Two cores and several engineers share a machine: DuckDB gets a bounded share of memory and threads,
and spills the sorts of a large trace to a scratch directory instead of growing past the limit.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import duckdb

from iofp.sqlfiles import load_sql

MEMORY_LIMIT = os.environ.get("IOFP_DUCKDB_MEMORY", "3GB")
THREADS = int(os.environ.get("IOFP_DUCKDB_THREADS", str(min(os.cpu_count() or 1, 4))))


def connect(database: str | Path = ":memory:", *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with iofp's limits (memory, threads, where sorts spill)."""
    config = {
        "memory_limit": MEMORY_LIMIT,
        "threads": THREADS,
        "temp_directory": str(Path(tempfile.gettempdir()) / f"iofp-duckdb-{os.getpid()}"),
    }
    return duckdb.connect(str(database), read_only=read_only, config=config)


def dicts(cur: Any) -> list[dict[str, Any]]:
    """The rows of an executed query as dicts keyed by column name."""
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def query(
    con: duckdb.DuckDBPyConnection, package: str, name: str, params: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Run the named .sql file of `package` with bound parameters; its rows as dicts."""
    return dicts(con.execute(load_sql(package, name), params or {}))
