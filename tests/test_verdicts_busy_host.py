"""A busy host is not a slow device (issue 26): the same decision taken beside CPU hogs gives the quiet
verdict or says it is inconclusive because of the host, never the opposite verdict about a device.

Two candidates whose quiet verdicts are fixed by construction: a RAM loop replaying the commit-heavy
sample slowed 5x (300 fdatasync'd appends/s: it holds `commit.p99<=20ms` with room), and the same RAM
loop capped at 330 writes/s by a blkio throttle (the slice asks for 660 writes and flushes a second:
it cannot keep the rate, whatever the host). Each is replayed as a user would (nice 0, the default 3
runs of a short selection) with a busy loop on every CPU beside it, and compared (87 s here, the
compare's exit 1 being the capped candidate's FAIL or its inconclusive)."""

from __future__ import annotations

import json

import pytest
from conftest import COMMIT_HEAVY, needs_fio, needs_root
from helpers import cpu_hogs, iofp_in, run_iofp, slowed_trace
from lab import loop_device, throttled

pytestmark = [needs_root, needs_fio]

SLO = "commit.p99<=20ms"
CAPPED_WRITE_IOPS = 330  # half the slowed slice's writes and flushes a second


@pytest.mark.slow
def test_beside_cpu_hogs_a_verdict_is_the_quiet_one_or_the_hosts_never_the_opposite(tmp_path):
    trace = slowed_trace(COMMIT_HEAVY, (5, 6), 5, tmp_path / "trace")  # 5 s at 1x, 360 writes/s
    out = {}
    with cpu_hogs():
        for name, cap in (("ram", None), ("capped", CAPPED_WRITE_IOPS)):
            with loop_device(256) as dev, throttled(dev, write_iops=cap) if cap else _none() as group:
                proc = iofp_in(group, "replay", trace, "--target", dev, "--label", f"device={name}",
                               "-o", tmp_path / name)  # fmt: skip
                assert proc.returncode == 0, proc.stderr
            out[name] = tmp_path / name
    code, stdout, err = run_iofp("compare", out["ram"], out["capped"], "--slo", SLO, "--json", "-")
    doc = json.loads(stdout)
    rows = {r["name"]: r for r in doc["rows"]}
    print({n: (r["slo"], r["why"], [x["verdict"] for x in r["runs"]]) for n, r in rows.items()})
    assert code == 1 and {len(r["runs"]) for r in rows.values()} == {3}, err
    for name, quiet, opposite in (("ram", "pass", "FAIL"), ("capped", "FAIL", "pass")):
        row = rows[name]
        assert row["slo"] in (quiet, "inconclusive"), row  # never the opposite verdict
        for run in row["runs"]:  # each run: the quiet verdict, or inconclusive because of the host
            assert run["verdict"] != opposite, run
            if run["verdict"] == "inconclusive":
                assert "the host's CPU was busy" in run["why"], run
    capped = rows["capped"]
    if capped["slo"] == "FAIL":  # the cap: the rate, and by how much
        assert any("kept" in f and "of the demanded" in f for f in capped["slo_failures"]), capped


def _none():
    from contextlib import nullcontext

    return nullcontext()
