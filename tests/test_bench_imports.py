"""Every benchmark starts as BENCHMARKS.md runs it, `python -m bench.NAME` from the checkout: its
imports resolve without pytest's path (tests/ is not on sys.path there: `import lab` fails, `from tests
import lab` works). bench.record_trigger and bench.record_steady imported tests.helpers, which imports
lab, and failed at their first line under the heavy-run lock."""

from __future__ import annotations

import subprocess
import sys

from conftest import REPO

# One interpreter for all (one each takes seconds): before each import, sys.path as python -m has it
# and no test module cached, so that one benchmark putting tests/ on the path hides no other's fault.
EACH = """
import importlib, sys
path, failed = list(sys.path), []
for name in sys.argv[1:]:
    sys.path[:] = path
    for m in [m for m in sys.modules if m.split(".")[0] in ("tests", "lab", "helpers", "conftest")]:
        del sys.modules[m]
    try:
        importlib.import_module("bench." + name)
    except Exception as e:
        failed.append(f"bench.{name}: {type(e).__name__}: {e}")
sys.exit("\\n".join(failed) or None)
"""


def test_every_benchmark_module_imports_as_python_m_runs_it():
    names = sorted(p.stem for p in (REPO / "bench").glob("*.py") if p.stem != "__init__")
    res = subprocess.run([sys.executable, "-c", EACH, *names], cwd=REPO, capture_output=True, text=True,
                         env={"PATH": "/usr/bin:/bin"})  # fmt: skip
    assert res.returncode == 0, res.stderr
