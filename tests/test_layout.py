"""The package layout the README's Development section describes: the contracts at the bottom import
no stage, a stage uses another only through its public API, and the CLI assembly sits on top."""

from __future__ import annotations

import ast

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
