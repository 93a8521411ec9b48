"""The package layout the README's Development section describes: the contracts at the bottom import
no stage, a stage uses another only through its public API, the reports sit above the stages whose
documents they draw, and the CLI assembly sits on top."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from conftest import REPO

STAGES = ("bpf", "fingerprint", "replay", "store", "fleet")
REPORT = "report"  # draws what the stages wrote: above them, below the CLI
TOP = "cli"
# Stages whose package __init__ is their public API: another stage imports `from store import X`,
# never a module inside (store.ship), so that the room can be rearranged behind its door.
DOORS = ("store", "fleet")


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
    above = {*STAGES, REPORT, TOP}
    offenders = {m: sorted(n & above) for m, n in imported_packages("iofp").items() if n & above}
    assert offenders == {}


@pytest.mark.parametrize("stage", STAGES)
def test_no_stage_imports_the_reports_or_the_cli(stage):
    above = {REPORT, TOP}
    offenders = {m: sorted(n & above) for m, n in imported_packages(stage).items() if n & above}
    assert offenders == {}


def test_the_reports_do_not_import_the_cli():
    offenders = [m for m, n in imported_packages(REPORT).items() if TOP in n]
    assert offenders == []


# What reads a file or a directory. The reports take documents (a fingerprint, records, relations) and
# never open a path: `iofp report` (cli/report.py) reads them. Their own page template is package data.
READS = {"open", "read_text", "read_bytes", "iterdir", "glob", "rglob", "is_file", "is_dir", "exists",
         "open_trace", "load", "read_parquet", "read_json", "read_csv"}  # fmt: skip


def path_reads(path: Path) -> list[str]:
    """`line: call` for each call in `path` that reads a file, but for package data (importlib.resources)."""
    tree = ast.parse(path.read_text())
    data = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and "resources.files" in ast.unparse(c)]
    package_data = {id(n) for c in data for n in ast.walk(c)}
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and id(n) not in package_data:
            name = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
            if name in READS:
                out.append(f"{n.lineno}: {ast.unparse(n.func)}")
    return out


def test_the_reports_open_no_path():
    modules = sorted((REPO / REPORT).rglob("*.py"))
    offenders = {str(p.relative_to(REPO)): reads for p in modules if (reads := path_reads(p))}
    assert offenders == {}


def test_the_path_check_finds_a_read(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from importlib import resources\n"
                   "T = resources.files('report').joinpath('page.html').read_text()\n"
                   "def f(p):\n    return open_trace(p), (p / 'x.json').read_text()\n")  # fmt: skip
    assert sorted(path_reads(bad)) == ["4: (p / 'x.json').read_text", "4: open_trace"]


def modules_imported(package: str) -> dict[str, set[str]]:
    """module path -> the full module names it imports from packages other than its own."""
    out = {}
    for path in sorted((REPO / package).rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
        out[str(path.relative_to(REPO))] = {n for n in names if n.split(".")[0] != package}
    return out


@pytest.mark.parametrize("door", DOORS)
def test_other_stages_enter_the_new_stages_through_their_package(door):
    offenders = {
        m: sorted(bad)
        for package in (*STAGES, REPORT, TOP, "bench")
        if package != door
        for m, names in modules_imported(package).items()
        if (bad := {n for n in names if n.startswith(f"{door}.") and n != f"{door}.commands"})
    }
    assert offenders == {}



PRODUCT = ("iofp", *STAGES, REPORT, TOP)
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
