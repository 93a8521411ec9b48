"""Shared fixtures (small real artifacts; lab devices, thin over tests/lab.py) and the test tiers.

The tiers: `make test` runs every test; `make test-fast` (what a developer runs between edits) all but
those marked `device` or `slow`. A test is marked here, at collection, by what it uses, so that a new
test is marked without anyone remembering to:

- `device`: it makes a lab block device or throttled group (tests/lab.py), itself or through a fixture
  or helper it calls; it needs root and generates real I/O (run it under flock /tmp/iofp-heavy.lock);
- `root`: it needs root (a `device` test, or one marked `needs_root`); skipped, naming it, when not
  root (a test that only asks `is_root()` to choose what it checks is not marked);
- `slow`: it takes seconds on its own here: marked where it is written, from the per-test durations
  of a full run (the demo, a sweep of every field in turn, a wait on a lock), and here for every
  test that starts Spark (fleet.spark_session: seconds, and a heavy run).
"""

from __future__ import annotations

import inspect
import os
import shutil
import sys
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import lab
import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_TRACES = REPO.parent / "shared" / "traces"
COMMIT_HEAVY = REPO / "samples" / "traces" / "commit-heavy"


def is_root() -> bool:
    return os.geteuid() == 0


ROOT = "needs root (eBPF capture, loop devices)"
needs_root = pytest.mark.root
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio (apt install fio)")

# What a `device` test calls (tests/lab.py, imported by the tests as `lab` and by bench/ as `tests.lab`).
DEVICE = {"make_loop", "loop_device", "attach", "throttled"}
OURS = (str(REPO / "tests"), str(REPO / "bench"))  # whose functions are followed into


def _is_lab(obj: object) -> bool:
    return getattr(obj, "__file__", None) == lab.__file__


def _lab_device(name: str, obj: object, names: set[str]) -> bool:
    """One of lab's DEVICE functions: by name, resolved (`lab.loop_device`: the module, and the function
    among the same code's names; `from lab import ...` inside a function: the names)."""
    if name in DEVICE and (
        _is_lab(inspect.getmodule(obj))
        or (obj is None and any(n == "lab" or n.endswith(".lab") for n in names))
    ):
        return True
    return _is_lab(obj) and bool(DEVICE & names)


def _spark(name: str, obj: object, names: set[str]) -> bool:
    """A Spark session (fleet.spark_session): seconds to start, and heavy (the team runs Spark under
    the heavy-run lock)."""
    return name == "spark_session" and (obj is None or getattr(obj, "__module__", "").startswith("fleet"))


def _calls(fn: Callable, found: Callable[[str, object, set[str]], bool], seen: set[int]) -> bool:
    """Whether `fn`, or a function of tests/ or bench/ it names (a helper, a module's own wrapper,
    a benchmark's set-up), names what `found` looks for: each name its code (nested functions and
    lambdas included) reads, resolved in its module."""
    fn = inspect.unwrap(fn)
    code, names = getattr(fn, "__code__", None), getattr(fn, "__globals__", {})
    if code is None or id(fn) in seen:
        return False
    seen.add(id(fn))
    todo = [code]
    while todo:
        co = todo.pop()
        todo += [c for c in co.co_consts if isinstance(c, types.CodeType)]
        read = set(co.co_names)
        for name in co.co_names:
            obj = names.get(name)
            if found(name, obj, read) or any(_calls(f, found, seen) for f in _ours(obj)):
                return True
    return False


def _ours(obj: object) -> list[Callable]:
    """A function of tests/ or bench/, or a class's methods there (a benchmark's lab class)."""
    if isinstance(obj, types.FunctionType) and obj.__code__.co_filename.startswith(OURS):
        return [obj]
    where = getattr(sys.modules.get(getattr(obj, "__module__", "")), "__file__", None) or ""
    if isinstance(obj, type) and where.startswith(OURS):
        return [f for f in vars(obj).values() if isinstance(f, types.FunctionType)]
    return []


def _uses(item: pytest.Item, found: Callable[[str, object, set[str]], bool]) -> bool:
    """Whether the test or any fixture it gets (at any depth) calls what `found` looks for."""
    fixtures = getattr(item, "_fixtureinfo", None)
    funcs = [getattr(item, "function", None)]
    funcs += [d.func for defs in (fixtures.name2fixturedefs.values() if fixtures else ()) for d in defs]
    seen: set[int] = set()
    return any(f is not None and _calls(f, found, seen) for f in funcs)


# A test that takes longer than this on its own (setup and call) belongs in `slow` (or is a `device`
# test): the run's summary names any that is neither, so the fast tier stays fast. A report, not a
# failure: a test's time varies with the machine's load.
SLOW_S = 5.0
_tiered: set[str] = set()
_took: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when in ("setup", "call"):
        _took[report.nodeid] = _took.get(report.nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    untiered = sorted((t, n) for n, t in _took.items() if t > SLOW_S and n not in _tiered)
    if untiered:
        terminalreporter.section("tests over SLOW_S (tests/conftest.py) marked neither slow nor device")
        for t, n in reversed(untiered):
            terminalreporter.line(f"{t:6.1f} s  {n}: mark it @pytest.mark.slow (test-fast leaves it out)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _uses(item, _lab_device):
            item.add_marker(pytest.mark.device)
        if _uses(item, _spark):
            item.add_marker(pytest.mark.slow)
        says_root = any(m.name == "skipif" and str(m.kwargs.get("reason", "")).startswith("needs root")
                        for m in item.iter_markers())  # fmt: skip
        if item.get_closest_marker("device") or says_root:
            item.add_marker(pytest.mark.root)
        if item.get_closest_marker("root") and not is_root():
            item.add_marker(pytest.mark.skip(reason=ROOT))
        if item.get_closest_marker("slow") or item.get_closest_marker("device"):
            _tiered.add(item.nodeid)


def make_loop_device(size_mib: int, *, direct_io: bool = False, where: str = "/dev/shm") -> tuple[str, Path]:
    """lab.make_loop under the name tests written before tests/lab.py use (new tests use lab's)."""
    return lab.make_loop(size_mib, lab.DISK if direct_io else lab.RAM, where=Path(where), prefix="iofp-test")


destroy_loop_device = lab.destroy_loop


@pytest.fixture
def loop_device() -> Iterator[str]:
    """A 256 MiB RAM loop device (over a /dev/shm file), detached afterwards."""
    with lab.loop_device(256) as dev:
        yield dev


THROTTLE_IOPS = 3000  # the throttled lab device of ../shared/notes/lab-devices.md


@contextmanager
def blkio_throttle(
    dev: str, *, read_iops: int | None = None, write_iops: int | None = None
) -> Iterator[Path]:
    """lab.throttled, skipped (naming it) where there is no cgroup v1 blkio controller."""
    if not lab.has_blkio():
        pytest.skip(f"needs the cgroup v1 blkio controller at {lab.BLKIO}")
    with lab.throttled(dev, read_iops=read_iops, write_iops=write_iops) as group:
        yield group


@pytest.fixture
def throttled(loop_device):
    """`loop_device` with its reads capped at THROTTLE_IOPS; yields (device, cgroup dir)."""
    with blkio_throttle(loop_device, read_iops=THROTTLE_IOPS) as group:
        yield loop_device, group


@pytest.fixture
def shared_traces() -> Path:
    if not SHARED_TRACES.is_dir():
        pytest.skip(f"needs the shared traces at {SHARED_TRACES}")
    return SHARED_TRACES


def assert_tracer_lost_nothing(loss: dict[str, int], events: int) -> None:
    """The capture lost nothing, not even a latency.

    The kernel runs no BPF program for a completion processed on top of the VM agent's threads (1 in
    ~3,000-90,000 here, more on a busy machine: bench/completion_skips.py). Such a request is still
    recorded, and its completion time comes from iofp's tracefs witness of those threads, which in
    every run measured recorded each one: a completion neither saw (lost_completions) is a failure.
    `events` is kept for the message."""
    lost = {k: v for k, v in loss.items() if k.startswith("lost") and v}
    assert lost == {}, f"{lost} of {events} events"


@pytest.fixture(scope="module")
def mysql_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared 1&1 MySQL blkreplay trace, imported (skips without the shared files)."""
    from helpers import shared_trace

    return shared_trace("mysql", tmp_path_factory)


@pytest.fixture(scope="module")
def tpcc_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared TPC-C disksim trace, imported (skips without the shared files)."""
    from helpers import shared_trace

    return shared_trace("tpcc", tmp_path_factory)


# The read trace's rate. Replayed QD1 (one process, one read at a time), a step at 3x leaves each read
# 667 us: a slow CI host's QD1 path kept 2,785-2,985 of 3,000/s (a 1,000/s trace at 3x) and made the
# headroom 2.25x; at half the rate the throttle, not the host, is the limit a test finds.
DEMAND_IOPS = 500


@pytest.fixture(scope="session")
def reads_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2 s of 4 KiB random reads at DEMAND_IOPS from one process, one at a time (a psync QD1 job)."""
    from helpers import write_trace

    n = 2 * DEMAND_IOPS
    return write_trace(
        tmp_path_factory.mktemp("t") / "reads",
        {
            "ts_ns": [i * 1_000_000_000 // DEMAND_IOPS for i in range(n)],
            "offset": [(i * 7919 % 16000) * 4096 for i in range(n)],
            "size": [4096] * n,
            "op": ["read"] * n,
            "pid": [100] * n,
            "lat_ns": [100_000] * n,
        },
    )


@pytest.fixture(scope="session")
def comparison(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A comparison directory: a real replay of 2 s of the commit-heavy sample onto a RAM loop and a
    short real probe of the same device (reads only: cell 1 and a two-depth sweep)."""
    from helpers import run_iofp

    if shutil.which("fio") is None:
        pytest.skip("needs fio (apt install fio)")
    base = tmp_path_factory.mktemp("lab") / "cmp"
    with lab.loop_device(256) as dev:
        code, _, err = run_iofp("replay", "--repeat", "1",
                                str(COMMIT_HEAVY), "--between", "2", "4", "--target", dev,
                                "--label", "device=ram-loop", "-o", str(base / "ram"))  # fmt: skip
        assert code == 0, err
        probe = ["--cells", "randread,sweep", "--qd", "1,4", "--runtime", "1s", "--reads-only", "--label"]
        code, _, err = run_iofp("probe", dev, *probe, "device=ram-loop", "-o", str(base / "probe-ram"))
        assert code == 0, err
    return base
