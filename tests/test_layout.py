"""The package layout the README's Development section describes: the contracts at the bottom import
no stage, a stage uses another only through its public API, the reports sit above the stages whose
documents they draw, and the CLI assembly sits on top."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest
from conftest import REPO

STAGES = ("bpf", "fingerprint", "replay", "store", "fleet", "record")
REPORT = "report"  # draws what the stages wrote: above them, below the CLI
TOP = "cli"
# Stages whose package __init__ is their public API: another stage imports `from store import X`,
# never a module inside (store.ship), so that the room can be rearranged behind its door.
DOORS = ("store", "fleet", "record")


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


def module_graph(package: str) -> dict[str, set[str]]:
    """module -> the modules of the same package it imports (at any depth, TYPE_CHECKING included:
    a cycle hidden behind it is still a cycle in the design)."""
    out = {}
    for path in sorted((REPO / package).glob("*.py")):
        tree = ast.parse(path.read_text())
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == package:
                names |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(f"{package}."):
                names.add(node.module.split(".")[1])
        out[path.stem] = names & {p.stem for p in (REPO / package).glob("*.py")}
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import cycle of `graph`, each once (from its smallest module)."""
    found = []

    def walk(start: str, node: str, path: list[str]) -> None:
        for nxt in sorted(graph.get(node, ())):
            if nxt == start:
                found.append(path)
            elif nxt > start and nxt not in path:
                walk(start, nxt, [*path, nxt])

    for start in sorted(graph):
        walk(start, start, [start])
    return found


def test_the_fingerprint_stage_has_no_import_cycle():
    """Frame and Options live in fingerprint/frame.py, which the per-scope modules (noise, scope,
    timeline) and compute import: none of them imports compute back."""
    assert cycles(module_graph("fingerprint")) == []


def test_the_cycle_check_finds_a_cycle():
    graph = {"compute": {"noise"}, "noise": {"compute", "frame"}, "frame": set()}
    assert cycles(graph) == [["compute", "noise"]]


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


# replay/ is a stage of rooms: each family a subpackage whose __init__ names what the others may use.
REPLAY = REPO / "replay"
FAMILIES = sorted(p.parent.name for p in REPLAY.glob("*/__init__.py"))
# what may sit in replay/ itself, outside every room: the stage's CLI assembly
REPLAY_TOP = {"__init__.py", "commands.py", "options.py"}


def public_names(family: str) -> set[str]:
    """The names a family's __init__ exports (its __all__, read without importing it)."""
    tree = ast.parse((REPLAY / family / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return set()


def family_of(path: Path) -> str | None:
    rel = path.relative_to(REPO).parts
    return rel[1] if rel[0] == "replay" and len(rel) > 2 else None


def reaches_into(path: Path) -> list[str]:
    """What `path` uses of a replay family other than its own that is not among the family's public
    names: an import of one of its modules, or a name (or `family.name`) its __init__ does not export."""
    own, tree, bad = family_of(path), ast.parse(path.read_text()), []
    bound = {}  # local name -> the family it was imported as (`from replay import run as runner`)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            parts = [a.name.split(".") for a in node.names]
            bad += [".".join(p) for p in parts if len(p) > 2 and p[0] == "replay" and p[1] != own]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            parts = node.module.split(".")
            if parts[0] != "replay" or (len(parts) > 1 and parts[1] == own):
                continue
            if len(parts) > 2:
                bad.append(node.module)
            elif len(parts) == 2 and parts[1] in FAMILIES:
                bad += [f"{node.module}.{a.name}" for a in node.names if a.name not in public_names(parts[1])]
            else:
                bound |= {
                    a.asname or a.name: a.name for a in node.names if a.name in FAMILIES and a.name != own
                }
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            family = bound[node.value.id]
            if node.attr not in public_names(family):
                bad.append(f"replay.{family}.{node.attr}")
    return sorted(set(bad))


def test_replay_is_rooms_and_its_top_is_the_cli_assembly():
    assert {p.name for p in REPLAY.glob("*.py")} <= REPLAY_TOP
    assert {"compare", "fio", "fiojob", "headroom", "iolog", "probe", "run"} <= set(FAMILIES)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_room_says_what_it_holds_and_exports_names_it_has(family):
    pkg = importlib.import_module(f"replay.{family}")
    assert (pkg.__doc__ or "").strip(), f"replay/{family}/__init__.py needs a docstring caption"
    names = public_names(family)
    assert names and all(hasattr(pkg, n) for n in names)
    # an exported name that is also a module of the room would hide the module
    assert not names & {p.stem for p in (REPLAY / family).glob("*.py")}


def test_no_module_reaches_into_another_replay_family():
    """Outside its own room a module uses only a family's public names (its __init__'s __all__)."""
    offenders = {str(p.relative_to(REPO)): bad for p in product_modules() if (bad := reaches_into(p))}
    assert offenders == {}


def test_the_family_check_finds_a_reach(tmp_path):
    bad = REPLAY / "run" / f"_reach_{tmp_path.name}.py"  # inside run/: fio's internals are fio's own
    bad.write_text(
        "from replay.fio.launcher import stop\nfrom replay.fio import launch, _keep\n"
        "from replay import fio as f, run\nf.launch(); f.stop(); run.anything()\n"
    )
    try:
        assert reaches_into(bad) == ["replay.fio._keep", "replay.fio.launcher", "replay.fio.stop"]
    finally:
        bad.unlink()


# One fio launcher: replay/fio/launcher.py starts every fio run, iofp/fioversion.py reads its version.
FIO_STARTERS = {REPO / "replay" / "fio" / "launcher.py", REPO / "iofp" / "fioversion.py"}
SPAWNERS = {("subprocess", f) for f in ("run", "Popen", "call", "check_call", "check_output")}
SPAWNERS |= {("os", f) for f in ("system", "popen", "execv", "execvp", "execvpe", "spawnv", "spawnvp")}


def processes_started(path: Path) -> list[tuple[int, str]]:
    """(line, what it runs) of every process `path` starts: the argv's source and, for each name in
    it, the source of what the module assigns to that name."""
    tree = ast.parse(path.read_text())
    assigned: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for t in node.targets:
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        assigned.setdefault(n.id, []).append(ast.unparse(node.value))
    out = []
    for node in ast.walk(tree):
        f = node.func if isinstance(node, ast.Call) else None
        if (
            isinstance(f, ast.Attribute)
            and isinstance(f.value, ast.Name)
            and (f.value.id, f.attr) in SPAWNERS
        ):
            argv = ast.unparse(node.args[0]) if node.args else ""
            names = {n.id for n in ast.walk(node.args[0]) if isinstance(n, ast.Name)} if node.args else set()
            out.append(
                (node.lineno, " ".join([argv, *(v for n in sorted(names) for v in assigned.get(n, []))]))
            )
    return out


def test_fio_is_started_in_one_place():
    offenders = [
        f"{p.relative_to(REPO)}:{line}: {what}"
        for p in product_modules()
        if p not in FIO_STARTERS
        for line, what in processes_started(p)
        if "fio" in what
    ]
    assert offenders == []


def test_the_fio_check_finds_a_fio_started_elsewhere(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import shutil, subprocess\nexe = shutil.which('fio')\nsubprocess.run([exe, '--version'])\n"
        "subprocess.run(['blkid', '-p'])\n"
    )
    assert [(line, "fio" in what) for line, what in processes_started(bad)] == [(3, True), (4, False)]


# fio prints notes before its JSON: replay/fio/launcher.py's fio_json trims them, and nothing else does.
TRIMS = re.compile(r"""\.(r?find|r?index)\(\s*["'][{}]["']""")


def test_fios_output_is_trimmed_to_json_in_one_place():
    modules = [
        *product_modules(),
        *sorted((REPO / "tests").glob("*.py")),
        *sorted((REPO / "bench").glob("*.py")),
    ]
    offenders = [
        f"{p.relative_to(REPO)}:{i}"
        for p in modules
        if p not in (REPO / "replay" / "fio" / "launcher.py", Path(__file__))
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if TRIMS.search(line)
    ]
    assert offenders == []


def long_functions(path: Path, most: int = 80) -> list[str]:
    """Functions of `path` whose body (docstring to last line) runs past `most` lines; a command's
    typer option declarations sit in its signature, which is not counted."""
    kinds = (ast.FunctionDef, ast.AsyncFunctionDef)
    defs = [n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, kinds)]
    return [
        f"{path.relative_to(REPO)}:{n.lineno} {n.name} ({lines} lines)"
        for n in defs
        if (lines := n.end_lineno - n.body[0].lineno + 1) > most
    ]


def test_no_function_runs_over_80_lines():
    assert [f for p in product_modules() for f in long_functions(p)] == []
