"""What every file of a trace is checked for when the trace is opened, and what a read that failed
later is explained by. The rules themselves (columns, types, values no row can hold) are the trace
contract's (iofp/contract.py); this module applies them to one Parquet file at a time.

A file's footer (a few KB) is read whole; its rows are judged from the footer's statistics where
every row group has them (null count, minimum), and otherwise by reading just that column: a
trace written by the contract's writer costs a read of `op` alone, a capture (statistics only on
ts_ns and device) a read of four columns (~0.15 s per 10 M rows here).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from iofp.errors import BadInput, SchemaMismatch
from iofp.terminal import has_control, one_line


@dataclass(frozen=True)
class RowRules:
    """What no row of a table can hold: a null in `not_null`, a value below 0 in `not_negative`,
    and in column `closed` anything but `allowed`."""

    not_null: tuple[str, ...]
    not_negative: tuple[str, ...]
    closed: str
    allowed: tuple[str, ...]
    names: tuple[str, ...] = ()  # columns whose every value is a name (name_problem), never a path


def name_problem(name: str) -> str | None:
    """Why `name` (a device's, from an artifact) cannot be a name, or None: iofp builds paths from
    device names (/sys/block/NAME, /dev/NAME), so a name is one path component of printable text."""
    if not name or name in (".", ".."):
        return "an empty or dot name"
    if "/" in name:
        return "a path, not a name (it holds '/')"
    if has_control(name) or name != name.strip():
        return "it holds control characters or surrounding blanks"
    if len(name.encode()) > 255:
        return "longer than 255 bytes"
    return None


AGAIN = "not a valid iofp trace (import or capture it again)"


MAX_FOOTER = 64 << 20  # a trace file's footer is a few KB per row group; a reader holds it whole


def read_schema(path: Path) -> pa.Schema:
    """A file's schema, from its footer, whose length (the file's last 8 bytes) is checked first: a
    footer is read whole, and one of GBs would be a reader's memory."""
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            if f.tell() >= 12:
                f.seek(-8, 2)
                tail = f.read(8)
                length = int.from_bytes(tail[:4], "little")
                if tail[4:] == b"PAR1" and length > MAX_FOOTER:
                    raise BadInput(f"{path}: a Parquet footer of {length:,} bytes, more than a trace file's "
                                   f"({MAX_FOOTER:,}); {AGAIN}")  # fmt: skip
        return pq.read_schema(path)
    except (OSError, pa.ArrowInvalid) as e:
        raise BadInput(f"{path}: not a readable Parquet file ({e})") from None


def extent(path: Path) -> tuple[int, int | None, int | None]:
    """(rows, first ts_ns, last ts_ns) of a trace file: from its footer (row counts, and ts_ns's
    statistics, which iofp's writers keep), else the ts_ns column read a row group at a time."""
    try:
        pf = pq.ParquetFile(path)
        md = pf.metadata
        idx = md.schema.names.index("ts_ns")
        lo = hi = None
        for i in range(md.num_row_groups):
            st = md.row_group(i).column(idx).statistics
            if st is not None and st.has_min_max:
                a, b = st.min, st.max
            else:
                got = pc.min_max(pf.read_row_group(i, columns=["ts_ns"]).column("ts_ns"))
                a, b = got["min"].as_py(), got["max"].as_py()
            if a is not None:
                lo, hi = (a, b) if lo is None else (min(lo, a), max(hi, b))
        return md.num_rows, lo, hi
    except (OSError, pa.ArrowException) as e:
        raise damage_in([path], e) or BadInput(f"{path}: cannot read it ({_first_line(e)})") from None


def plain_type(t: pa.DataType) -> pa.DataType:
    """A column's logical type: dictionary encoding and large offsets are how it is stored."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    return pa.string() if pa.types.is_large_string(t) else t


def check_columns(path: Path, got: pa.Schema, schema: pa.Schema, version: int) -> None:
    """Every column of `schema` is there, of its type (extra columns are another tool's business)."""
    missing = [n for n in schema.names if n not in got.names]
    if len(missing) == len(schema):
        has = ", ".join(got.names[:5]) + (", ..." if len(got.names) > 5 else "")
        raise SchemaMismatch(f"{path}: none of the trace's columns (it has {has}); not an iofp trace file")
    if missing:
        raise SchemaMismatch(f"{path}: missing columns {missing}; not a v{version} iofp trace")
    for f in schema:
        have, want = plain_type(got.field(f.name).type), plain_type(f.type)
        if not have.equals(want):
            why = f"column {f.name} is {have}, the trace contract's is {want}"
            raise SchemaMismatch(f"{path}: {why}; not a v{version} iofp trace")


MAX_TEXT = 255  # bytes of one string value: a device's name at most (name_problem); comm, rwbs, op far less
TEXT_SLACK = 1 << 20  # a column chunk's page headers and statistics, beside its values


def check_text(path: Path, schema: pa.Schema) -> None:
    """Refuse, from the footer alone, a file whose string columns hold more text than values of at
    most MAX_TEXT bytes can: a 30 KB file of 4 rows held a 400 MB device name, and reading the column
    to refuse the name took 2.5 GB. Each column chunk's decoded size is in the footer; what passes
    costs no more to read than a row group of the longest names would."""
    try:
        md = pq.ParquetFile(path).metadata
    except (OSError, pa.ArrowException) as e:
        raise BadInput(f"{path}: not a readable Parquet file ({_first_line(e)})") from None
    names = md.schema.names
    for f in schema:
        if not pa.types.is_string(plain_type(f.type)) or f.name not in names:
            continue
        idx = names.index(f.name)
        for i in range(md.num_row_groups):
            col = md.row_group(i).column(idx)
            most = col.num_values * (4 + MAX_TEXT) + TEXT_SLACK  # each value: a 4-byte length, its bytes
            if col.total_uncompressed_size > most:
                raise BadInput(f"{path}: column {f.name} holds {col.total_uncompressed_size:,} bytes of text "
                               f"in {col.num_values:,} rows (row group {i}), more than values of at most "
                               f"{MAX_TEXT} bytes can; {AGAIN}")  # fmt: skip


def check_rows(path: Path, rules: RowRules) -> None:
    """Refuse a file holding a row that cannot be true, naming the file and the first such value."""
    try:
        pf = pq.ParquetFile(path)
        names = list(dict.fromkeys((*rules.not_null, *rules.not_negative)))
        found = {name: _from_footer(pf.metadata, name) for name in names}
        values = _from_rows(pf, [n for n, v in found.items() if v is None], rules.closed, found)
        for name in names:
            nulls, low = found[name]
            if nulls and name in rules.not_null:
                raise BadInput(f"{path}: {nulls:,} row{'s' if nulls > 1 else ''} with no {name}; {AGAIN}")
            if name in rules.not_negative and low is not None and low < 0:
                raise BadInput(f"{path}: {name} {low} is negative; {AGAIN}")
        unknown = sorted(values - set(rules.allowed), key=str)
        if unknown:
            raise BadInput(
                f"{path}: {rules.closed} {unknown[0]!r} is not one of {', '.join(rules.allowed)}; {AGAIN}"
            )
        for column in rules.names:
            for name in _names(pf, column):
                if (why := name_problem(name)) is not None:
                    raise BadInput(f"{path}: {column} {one_line(name)[:60]!r} is {why}; {AGAIN}")
    except (OSError, pa.ArrowException) as e:
        raise damage_in([path], e) or BadInput(f"{path}: cannot read it ({_first_line(e)})") from None


def _from_footer(md: pq.FileMetaData, name: str) -> tuple[int, int | None] | None:
    """(nulls, minimum) of a column from every row group's statistics; None if any lacks them."""
    idx = md.schema.names.index(name)
    nulls, low = 0, None
    for i in range(md.num_row_groups):
        col = md.row_group(i).column(idx)
        st = col.statistics
        if st is None or not st.has_null_count:
            return None
        nulls += st.null_count
        if st.null_count < col.num_values:
            if not st.has_min_max:
                return None
            low = st.min if low is None else min(low, st.min)
    return nulls, low


def _from_rows(pf: pq.ParquetFile, columns: list[str], closed: str, found: dict) -> set[str | None]:
    """Fill `found` with (nulls, minimum) of `columns` read from the rows, a row group at a time
    (memory bounded by one row group of them, its columns decoded in parallel); return the distinct
    values of the `closed` column, read the same way."""
    acc: dict[str, tuple[int, int | None]] = {n: (0, None) for n in columns}
    values: set[str | None] = set()
    for i in range(pf.metadata.num_row_groups):
        tbl = pf.read_row_group(i, columns=list(dict.fromkeys([*columns, closed])))
        for name, (nulls, low) in acc.items():
            col = tbl.column(name)
            got = pc.min(col).as_py() if pa.types.is_integer(col.type) else None
            lo = got if low is None else low if got is None else min(low, got)
            acc[name] = (nulls + col.null_count, lo)
        values |= _values(tbl.column(closed))
    found.update(acc)
    return values


def _names(pf: pq.ParquetFile, column: str) -> set[str]:
    """The distinct values of a string column: from the footer when every row group holds one value
    (a capture of one device: min == max), else read a row group at a time."""
    md = pf.metadata
    idx = md.schema.names.index(column)
    stats = [md.row_group(i).column(idx).statistics for i in range(md.num_row_groups)]
    if all(s is not None and s.has_min_max and s.min == s.max and not s.null_count for s in stats):
        return {_text(s.min) for s in stats if s is not None}
    found: set[str] = set()
    for i in range(md.num_row_groups):
        found |= {v for v in _values(pf.read_row_group(i, columns=[column]).column(column)) if v is not None}
    return found


def _text(v: object) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)


def _values(col: pa.ChunkedArray) -> set[str | None]:
    """The distinct values of a string column (from each chunk's dictionary indices when it has
    one: a byte per row instead of a string)."""
    found: set[str | None] = set()
    for chunk in col.chunks:
        if pa.types.is_dictionary(chunk.type):
            used = pc.unique(chunk.indices.drop_null())
            found |= set(chunk.dictionary.take(used).to_pylist())
        else:
            found |= set(pc.unique(chunk.drop_null()).to_pylist())
    return found


def damage_in(files: list[Path], error: BaseException) -> BadInput | None:
    """When reading a trace failed: the one-line error naming the damaged file behind it, or None
    if every file decodes whole and agrees with its footer (then the failure is not the trace's,
    and must not be called so)."""
    for p in files:
        try:
            why = _undecodable(p)
        except (OSError, pa.ArrowException) as e:
            why = _first_line(e)
        if why is not None:
            return BadInput(f"{p}: damaged data ({why}); capture or import the trace again")
    text = str(error)
    named = next((p for p in files if str(p) in text), None)
    if named is not None or "corrupt" in text.lower():
        why = _first_line(error)
        return BadInput(f"{named or 'a trace file'}: damaged data ({why}); capture or import the trace again")
    return None


def _undecodable(path: Path) -> str | None:
    """Decode every page of one file (a row group at a time) and hold each integer column's values
    to the footer's min/max: readers trust those (DuckDB sizes its aggregates by them), so a value
    outside them is damage even when the page decodes."""
    pf = pq.ParquetFile(path)
    for i in range(pf.metadata.num_row_groups):
        tbl = pf.read_row_group(i)
        tbl.validate(full=True)
        rg = pf.metadata.row_group(i)
        for j in range(rg.num_columns):
            name, stats = rg.column(j).path_in_schema, rg.column(j).statistics
            if stats is None or not stats.has_min_max or not pa.types.is_integer(tbl.schema.field(name).type):
                continue
            got = pc.min_max(tbl.column(name))
            lo, hi = got["min"].as_py(), got["max"].as_py()
            if lo is not None and (lo < stats.min or hi > stats.max):
                return f"{name} holds {lo}..{hi}, its footer says {stats.min}..{stats.max}"
    return None


def _first_line(e: BaseException) -> str:
    return str(e).splitlines()[0] if str(e) else type(e).__name__
