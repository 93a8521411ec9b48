"""Every SQL block of the README runs as written, in DuckDB, on the files it names: a user's first
query is copied from there, and the trace's `offset` column is a reserved word that fails unquoted."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import duckdb
import pytest
from conftest import REPO

SAMPLE = REPO / "samples" / "traces" / "market-open"
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def sql_blocks() -> list[tuple[str, str]]:
    """(where, text) of every ```sql block of the README and docs/."""
    out = []
    for path in DOCS:
        text = path.read_text()
        for m in re.finditer(r"^```sql\n(.*?)^```", text, re.S | re.M):
            line = text[: m.start()].count("\n") + 1
            out.append((f"{path.name}:{line}", m.group(1)))
    return out


@pytest.fixture(scope="module")
def readme_dir(tmp_path_factory) -> Path:
    """Where the README's queries run: the walkthrough's `live` trace (the market-open sample, the
    same capture) and a lake of it as `iofp capture -o s3://...` files one (host=/service=/date=)."""
    root = tmp_path_factory.mktemp("readme")
    shutil.copytree(SAMPLE, root / "live")
    for host in ("or-07", "or-08"):
        part = root / "lake" / f"host={host}" / "service=order-router" / "date=2026-01-05"
        shutil.copytree(SAMPLE, part)
    return root


BLOCKS = sql_blocks()


def test_the_readme_shows_sql_and_quotes_offset_in_it():
    assert len(BLOCKS) >= 2
    uses = [text for _, text in BLOCKS if re.search(r"\boffset\b", text, re.I)]
    assert uses and all(re.search(r'(?<!")\boffset\b(?!")', u) is None for u in uses)


@pytest.mark.parametrize("where,text", BLOCKS, ids=[w for w, _ in BLOCKS])
def test_a_readme_sql_block_runs_as_written(readme_dir, monkeypatch, where, text):
    monkeypatch.chdir(readme_dir)
    con = duckdb.connect()
    rows = con.sql(text).fetchall()
    assert rows, f"{where}: no rows"


def test_offset_unquoted_is_a_syntax_error_in_duckdb(readme_dir):
    """Why the README quotes it: the reason a user's first ad-hoc query fails."""
    con = duckdb.connect()
    files = f"'{readme_dir}/live/io/*.parquet'"
    with pytest.raises(duckdb.ParserException):
        con.sql(f"SELECT max(offset) FROM read_parquet({files})")
    assert con.sql(f'SELECT max("offset") FROM read_parquet({files})').fetchall()[0][0] > 0
