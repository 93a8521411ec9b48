"""The package layout the README's Development section describes: the contracts at the bottom import
no stage, a stage uses another only through its public API, and the CLI assembly sits on top."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from conftest import REPO

STAGES = ("bpf", "fingerprint", "replay")
TOP = "cli"


def imported_packages(package: str) -> dict[str, set[str]]:
    """module path -> the top-level packages it imports (at any depth of the module)."""
    out = {}
    for path in sorted((REPO / package).rglob("*.py")):
        tree = ast.parse(path.read_text())
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
        out[str(path.relative_to(REPO))] = names
    return out


def test_the_contracts_import_no_stage_and_not_the_cli():
    offenders = {
        m: sorted(n & {*STAGES, TOP}) for m, n in imported_packages("iofp").items() if n & {*STAGES, TOP}
    }
    assert offenders == {}


@pytest.mark.parametrize("stage", STAGES)
def test_no_stage_imports_the_cli(stage):
    offenders = [m for m, n in imported_packages(stage).items() if TOP in n]
    assert offenders == []


PRODUCT = ("iofp", *STAGES, TOP)
# A query in a Python string: the house style keeps every one in a .sql file, loaded with
# iofp.sqlfiles.load_sql and run with bound parameters.
SQL = re.compile(r"\b(SELECT|INSERT INTO|CREATE (OR REPLACE )?(TABLE|VIEW)|COPY|DELETE)\b[\s\S]*\bFROM\b")


def product_modules() -> list[Path]:
    return [p for package in PRODUCT for p in sorted((REPO / package).rglob("*.py"))]


def sql_strings(path: Path) -> list[int]:
    """Lines of `path` where a string constant holds a query."""
    tree = ast.parse(path.read_text())
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and SQL.search(n.value)]  # fmt: skip


def test_no_sql_in_python_strings():
    offenders = {str(p.relative_to(REPO)): lines for p in product_modules() if (lines := sql_strings(p))}
    assert offenders == {}


def test_the_sql_check_finds_a_query_in_a_string(tmp_path):
    bad = tmp_path / "bad.py"
    doc = '"""Docs that SELECT nothing."""\n'
    bad.write_text(doc + 'Q = f"""\nSELECT count(*)\nFROM io WHERE op = {1}\n"""\n')
    assert sql_strings(bad) == [2]


def test_duckdb_is_opened_one_way():
    """iofp/duck.py is the one DuckDB setup (memory limit, threads, temp directory): no other product
    module opens a connection of its own."""
    offenders = [
        f"{p.relative_to(REPO)}:{n.lineno}"
        for p in product_modules()
        if p != REPO / "iofp" / "duck.py"
        for n in ast.walk(ast.parse(p.read_text()))
        if isinstance(n, ast.Attribute) and n.attr in ("connect", "sql", "query", "execute")
        and isinstance(n.value, ast.Name) and n.value.id == "duckdb"
    ]  # fmt: skip
    assert offenders == []
