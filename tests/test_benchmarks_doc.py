"""BENCHMARKS.md opens with where things stand: every row of its table names a command that exists,
every benchmark in bench/ has a section, and the table's links land on those sections."""

from __future__ import annotations

import re

import typer
from conftest import REPO

from cli.app import app

DOC = (REPO / "BENCHMARKS.md").read_text()
COLUMNS = ["figure", "value", "peer or limit", "ratio", "command", "date"]


def _cells(line: str) -> list[str]:
    # A cell may hold an escaped pipe (`\|lateness\|`): split only on the bare ones.
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def _headline_rows() -> list[list[str]]:
    section = DOC.split("\n## Where things stand\n", 1)[1].split("\n## ", 1)[0]
    lines = [x for x in section.splitlines() if x.startswith("|")]
    assert _cells(lines[0]) == COLUMNS
    return [_cells(x) for x in lines[2:]]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation but - and _ dropped, spaces to -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _iofp_commands() -> set[str]:
    return set(typer.main.get_command(app).commands)


def test_every_headline_row_names_a_command_that_exists_and_a_date():
    commands = _iofp_commands()
    rows = _headline_rows()
    assert len(rows) >= 30
    for row in rows:
        assert len(row) == len(COLUMNS), row[0]
        figure, command, date = row[0], row[4], row[5]
        benches = re.findall(r"\bbench\.(\w+)", command)
        iofps = re.findall(r"\biofp ([a-z][a-z-]*)", command)
        tests = re.findall(r"\b(tests/[\w/]+\.py)", command)
        assert benches or iofps or tests, f"{figure}: no bench module, iofp command or test named"
        for name in benches:
            assert (REPO / "bench" / f"{name}.py").is_file(), f"{figure}: no bench/{name}.py"
        for name in iofps:
            assert name in commands, f"{figure}: no command iofp {name}"
        for path in tests:
            assert (REPO / path).is_file(), f"{figure}: no {path}"
        assert re.search(r"\b2\d{3}-\d{2}-\d{2}\b", date), f"{figure}: no date"


def test_every_benchmark_has_a_section_and_every_link_lands():
    headings = re.findall(r"^## (.+)$", DOC, flags=re.M)
    for module in sorted((REPO / "bench").glob("*.py")):
        if module.stem != "__init__":
            assert any(f"(bench.{module.stem})" in h for h in headings), f"no section for bench.{module.stem}"
    anchors = {_slug(h) for h in headings}
    for link in re.findall(r"\]\(#([^)]+)\)", DOC):
        assert link in anchors, f"BENCHMARKS.md links to #{link}, which no section is"
    assert (REPO / "docs" / "benchmarks-history.md").is_file()
