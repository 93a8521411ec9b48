"""An SLO's latency limits as a chart's reference lines: which terms apply to which kind of request."""

from __future__ import annotations

from iofp.slo import LatencyTerm, Slo

SLO_COLOR = "#e67e22"


def slo_lines(slo: Slo | None, kind: str) -> list[tuple[float, str, str]]:
    """The SLO's latency limits that apply to `kind` ("read", "write", "flush" or "sync calls", the
    commits), in µs, as (y, label, colour) reference lines."""
    out = []
    for t in slo.terms if slo else ():
        if not isinstance(t, LatencyTerm):
            continue
        applies = (
            (t.op is None and kind in ("read", "write"))
            or t.op == kind
            or (t.op in ("fsync", "commit") and kind == "sync calls")
            or (t.op == "all" and kind in ("read", "write"))
        )
        if applies:
            out.append((t.limit_ns / 1e3, f"SLO {t.text}", SLO_COLOR))
    return out
