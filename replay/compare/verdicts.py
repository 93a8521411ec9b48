"""compare's verdicts: a candidate's pass/FAIL stated only where its runs agree and the evidence allows.

* **Holding the SLO includes keeping the rate** (issue 26 §3): a run that achieved less than the
  demanded rate (IOPS, and commits per second where the selection has commits) by more than
  RATE_TOLERANCE fails, and says by how much: its latencies were measured at a lower load than the
  one asked for. The tolerance is the fidelity rule's (a replay within 5% of the demand is faithful).
* **A busy host is not a slow device** (§1): a run that missed while the host limited it
  (iofp/host_evidence.py `limit`) is inconclusive, never the device's FAIL.
* **One run is not a decision** (§2): results with the same label are one candidate (`group`), their
  figures the median and range of its runs, its verdict the runs' agreement (iofp/repeats.py);
  hyperfine's outliers are said.
* **A ranking by headroom** is stated only where the sweeps support it (`ranking`): one candidate
  above another when it held a load at which the other failed by its own limit.
* **A probe that contradicts a saturation** (`contradictions`): a sweep stopped by "the device's rate"
  at a fraction of what a probe of the same device reached.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from iofp.host_evidence import limit
from iofp.repeats import FAIL, INCONCLUSIVE, PASS, agree, outliers
from iofp.slo import IOPS_TOLERANCE, Slo

if TYPE_CHECKING:
    from replay.compare.table import Row

RATE_TOLERANCE = IOPS_TOLERANCE
RERUN = "rerun on a quiet host"
CONTRADICTION = 2.0  # a probe reaching this many times the rate a sweep "saturated" at contradicts it


def rate_failures(row: Row) -> list[str]:
    """Why a run did not keep the demanded rate, with by how much ([] = it kept it)."""
    out = []
    for what, demanded, achieved in (
        ("IOPS", row.demanded_iops, row.achieved_iops),
        ("commits/s", row.demanded_commits_per_s, row.commits_per_s),
    ):
        if demanded and achieved is not None and achieved < demanded * (1 - RATE_TOLERANCE):
            out.append(
                f"kept {achieved / demanded:.0%} of the demanded {what} ({achieved:,.0f} of {demanded:,.0f}; "
                f"tolerance {RATE_TOLERANCE:.0%})"
            )
    return out


def run_verdict(row: Row, slo: Slo) -> tuple[str, str]:
    """One run's verdict and why: pass, FAIL (the device's), or inconclusive (the host limited it)."""
    row.rate_failures = rate_failures(row)
    row.slo_failures = row.rate_failures + slo.failures(row)
    if not row.slo_failures:
        return PASS, ""
    lim = limit(row.host)
    if lim.who == "host":
        return INCONCLUSIVE, f"{lim.why}; {RERUN} (it missed: {'; '.join(row.slo_failures)})"
    return FAIL, ""


def judge(rows: list[Row], slo: Slo) -> None:
    """Each candidate's verdict: its own, or its runs' agreement; the baseline is shown, not judged."""
    for row in rows:
        if row.role != "candidate":
            row.slo_failures = slo.failures(row)
            row.slo = FAIL if row.slo_failures else PASS
            continue
        if not row.runs:
            row.slo, row.why = run_verdict(row, slo)
            continue
        said = [run_verdict(r, slo) for r in row.runs]
        for r, (v, why) in zip(row.runs, said, strict=True):
            r.slo, r.why = v, why
        a = agree([v for v, _ in said])
        row.slo = a.verdict
        row.rate_failures = rate_failures(row)
        row.slo_failures = row.rate_failures + slo.failures(row)  # on the runs' medians
        all_host = all(v == INCONCLUSIVE for v, _ in said)
        row.why = said[0][1] + f" ({a.why})" if all_host else a.why


# ---- repeats: one candidate per label ---------------------------------------------------------


def group(rows: list[Row]) -> list[Row]:
    """Rows of the same candidate (name) as one, in first-seen order: a single run stays itself; several
    become one row whose figures are their medians (Row.runs)."""
    by_name: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        if r.source not in {x.source for x in by_name[r.name]}:  # a directory given twice is one run
            by_name[r.name].append(r)
    out = []
    for runs in by_name.values():
        if len(runs) == 1:
            out.append(runs[0])
        else:
            first = runs[0]
            timing = {r.timing for r in runs}
            fidelity = {r.fidelity for r in runs}
            out.append(replace(
                first, source=", ".join(r.source for r in runs), runs=runs, host=None,
                fidelity=fidelity.pop() if len(fidelity) == 1 else f"{len(fidelity)} verdicts",
                timing=timing.pop() if len(timing) == 1 else "mixed",
            ))  # fmt: skip
    return out


def interference(row: Row) -> str | None:
    """hyperfine's habit: a run whose figures stand far from the others' suggests interference."""
    if len(row.runs) < 3:
        return None
    odd = set()
    for op, figure in (("all", "p99"), ("commit", "p99"), ("rate", "")):
        vals = [r.achieved_iops if op == "rate" else r.latency(op, figure) for r in row.runs]
        odd |= set(outliers(vals))
    if not odd:
        return None
    which = ", ".join(str(i + 1) for i in sorted(odd))
    return (
        f"{row.name}: run {which} of {len(row.runs)} stands far from the others (a statistical outlier): "
        "interference from other programs is likely; it shows in the range, not the median"
    )


# ---- ranking by headroom ------------------------------------------------------------------------


def _interval(h: dict[str, Any] | None) -> tuple[float, float] | None:
    """(held, failed): the load a sweep held and the one at which the device failed (inf: it did not
    fail by its own limit above the factor)."""
    if not h:
        return None
    held = h.get("factor") or 0.0
    failed = h.get("failed_at") if h.get("bound") in ("rate", "slo", "first step") else None
    return held, failed if failed is not None else float("inf")


def ranking(rows: list[Row]) -> str:
    """The order of the candidates (most headroom first, as the table shows them) where every step of
    it is supported: "a > b" when a held a load at which b failed by its own limit, "a = b" when both
    held and failed at the same scales; else inconclusive, with why."""
    cands = [(r.name, _interval(r.headroom)) for r in rows if r.role == "candidate" and r.headroom]
    if len(cands) < 2:
        return ""
    parts = [cands[0][0]]
    for (a, ia), (b, ib) in pairwise(cands):
        assert ia is not None and ib is not None
        if ia[0] >= ib[1] and ia[0] > 0:
            parts += [">", b]
        elif ia == ib and ia[1] != float("inf"):  # both held and failed by their own limit alike
            parts += ["=", b]
        else:
            return (f"inconclusive: {a} and {b} cannot be told apart (neither held a load at which the other "
                    "failed by its own limit: their headroom lines say why)")  # fmt: skip
    return " ".join(parts)


# ---- a probe against a saturation ---------------------------------------------------------------


def contradictions(rows: list[Row]) -> list[str]:
    """A sweep that blamed the device's rate at a load its own probe far exceeded: say so."""
    out = []
    for r in rows:
        h = r.headroom or {}
        fail = h.get("failed_step") or {}
        if h.get("bound") not in ("rate", "first step") or not r.probe or not fail:
            continue
        iops = max((c.get("iops") or 0 for c in r.probe), default=0)
        commits = max((c.get("commits_per_s") or 0 for c in r.probe), default=0)
        at_iops, at_commits = fail.get("achieved_iops") or 0, fail.get("commits_per_s") or 0
        far = iops >= CONTRADICTION * at_iops and (not at_commits or commits >= CONTRADICTION * at_commits)
        if at_iops and far:
            out.append(
                f"{r.name}: its sweep stopped at the device's rate ({at_iops:,.0f} IOPS"
                + (f", {at_commits:,.0f} commits/s" if at_commits else "")
                + f") while its probe reached {iops:,.0f} IOPS"
                + (f" and {commits:,.0f} commits/s" if at_commits else "")
                + ": the limit the sweep met may not be the device's (rerun both on a quiet host)"
            )
    return out


__all__ = ["contradictions", "group", "interference", "judge", "ranking", "rate_failures", "run_verdict"]
