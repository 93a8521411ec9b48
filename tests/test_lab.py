"""tests/lab.py is the one way the tests and benchmarks make devices, throttle them and run fio, and
what the test tiers read: a test that makes a lab device, however indirectly, is a `device` test."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import REPO, _calls, _lab_device, loop_device, make_loop_device
from lab import make_loop

# A loop device attached or listed, a cgroup joined or throttled, fio started with an argv of its own
# (a list that starts with fio and an option, or one handed to subprocess).
FIO_ARGV = r"""\[\s*["']fio["']\s*,\s*f?["']--|(run|Popen|call|check_output)\(\s*\[\s*["']?fio\b"""
OWN_WAY = re.compile(r"""["']losetup["']|cgroup\.procs|blkio\.throttle|""" + FIO_ARGV)


def own_ways(path: Path) -> list[int]:
    return [i for i, line in enumerate(path.read_text().splitlines(), 1) if OWN_WAY.search(line)]


def test_the_tests_and_benchmarks_make_devices_groups_and_fio_runs_through_the_lab():
    modules = sorted([*(REPO / "tests").glob("*.py"), *(REPO / "bench").glob("*.py")])
    mine = {REPO / "tests" / "lab.py", Path(__file__)}
    offenders = {str(p.relative_to(REPO)): lines for p in modules if p not in mine and (lines := own_ways(p))}
    assert offenders == {}


def test_the_check_finds_a_device_group_or_fio_made_another_way(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text('subprocess.run(["losetup", "-f", img])\n(g / "cgroup.procs").write_text(pid)\n'
                   'subprocess.Popen(["fio", job])\nargs = ["fio", f"--filename={dev}"]\n'
                   'subprocess.run([fio, job])\n'
                   'print("fio is fine in a sentence", ["fio", *args], Check("fio", True))\n')  # fmt: skip
    assert own_ways(bad) == [1, 2, 3, 4, 5]


# Never called: what the tier marking reads in a test's code.
def _makes_one():
    return make_loop(4)


def _through_a_helper():
    return _makes_one()


def _through_the_old_name():
    return make_loop_device(4)


def _nothing():
    return Path("/dev/shm")


def test_a_device_is_found_through_helpers_fixtures_and_old_names():
    assert _calls(_makes_one, _lab_device, set()) and _calls(_through_a_helper, _lab_device, set())
    assert _calls(_through_the_old_name, _lab_device, set()) and _calls(loop_device, _lab_device, set())
    assert not _calls(_nothing, _lab_device, set())
