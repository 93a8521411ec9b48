"""What a fingerprint is computed against: the options a user gave (`Options`), and what they resolve
to once the trace is read (`Frame`: its bounds, windows, regimes and --between span), with the one
rule for which rows each scope holds.

The scopes are written once, here (SCOPE_CLASSES): a scope is the rows of the windows of some regime
classes (iofp/regimes.py: 0 baseline, 1 steady, 2 spike), and for --between only those inside its
span. `Frame.windows` reads the rule in Python and `Frame.scope_map` gives it to the SQL as a table,
(rg, btw) -> scope: every per-scope query groups its rows or partials by the window's regime class rg
and whether the row lies inside --between (btw), joins this table and groups by scope, so a scope is
a union of (rg, btw) parts and one part may count in several.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pyarrow as pa

from iofp import fingerprint_doc as doc
from iofp import regimes
from iofp.contract import TraceMeta

# The biggest spike's windows are a class of their own in the fingerprint's tables (not a regime:
# iofp/regimes.py's classes stay those three), so that its own summary, `spike1`, comes from the same
# queries as every scope: the answer a reader looks for first is that spike's, not every spike's.
SPIKE1 = 3
ALL_CLASSES = (regimes.BASELINE, regimes.STEADY, regimes.SPIKE, SPIKE1)
# scope -> the classes of its windows (between also needs the row inside --between)
SCOPE_CLASSES: dict[str, tuple[int, ...]] = {
    "whole": ALL_CLASSES,  # every row
    "steady": (regimes.STEADY,),  # windows in a block passing the SNIA rule, in no spike
    "baseline": (regimes.BASELINE, regimes.STEADY),  # every window in no spike (steady ones included)
    "spike": (regimes.SPIKE, SPIKE1),  # windows of a kept spike
    "between": ALL_CLASSES,  # the rows inside the --between span
    "spike1": (SPIKE1,),  # the windows of the rank-1 (biggest) spike
}
assert tuple(SCOPE_CLASSES) == doc.SCOPES, "a scope's code sc is its place in the document's order"


@dataclass
class Options:
    window_ns: int | None = None  # None: the default rule (iofp/windows.py)
    device: str | None = None
    between: tuple[str, str] | None = None
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Frame:
    """What every scope is summarised against: the windows, their regimes and the spans."""

    meta: TraceMeta
    options: Options
    t0: int
    t1: int
    devices: list[str]
    reg: regimes.Regimes
    rate_ns: int  # the span the whole trace's rates are over (compute's _rate_span)
    basis: str
    step_ns: int  # the per-window table's step (window_table.sql): a window is `steps` of them
    lo: int | None = None  # --between, trace clock
    hi: int | None = None

    @property
    def window_ns(self) -> int:
        return self.reg.series.window_ns

    @property
    def steps(self) -> int:
        return self.window_ns // self.step_ns

    @property
    def baseline_is_steady(self) -> bool:
        """Every window in no spike is steady: the two scopes hold the same rows, so the baseline is
        not summarised twice (compute copies the steady summary; scope_map leaves it out)."""
        rg = self.reg.classes
        return bool((rg == regimes.STEADY).any() and not (rg == regimes.BASELINE).any())

    @property
    def spike1_is_spike(self) -> bool:
        """One spike: the biggest is every spike, so spike1 is not summarised twice (compute copies
        the spike summary; scope_map leaves it out)."""
        return len(self.reg.spikes) == 1

    @cached_property
    def classes(self) -> np.ndarray:
        """Each window's class: its regime (iofp/regimes.py), and SPIKE1 for the biggest spike's."""
        rg = self.reg.classes.copy()
        if self.reg.spikes:
            rg[self.reg.spikes[0].first : self.reg.spikes[0].last + 1] = SPIKE1
        return rg

    def regime_table(self) -> pa.Table:
        """(w, rg): each window's class, for the scope queries to join (registered as `regime_w`)."""
        w = pa.array(np.arange(len(self.classes)), pa.int64())
        return pa.table({"w": w, "rg": pa.array(self.classes, pa.uint8())})

    def windows(self, scope: str) -> np.ndarray:
        """The window indexes a scope covers."""
        rg = self.classes
        if scope == "between":
            if self.lo is None or self.hi is None:
                return np.arange(0)  # no --between asked for: the scope has no windows
            first = max(0, (self.lo - self.t0) // self.window_ns)
            last = min(len(rg) - 1, (self.hi - self.t0) // self.window_ns)
            return np.arange(first, last + 1)
        return np.flatnonzero(np.isin(rg, SCOPE_CLASSES[scope]))

    def scope_map(self) -> pa.Table:
        """The rule as the SQL reads it (registered as `scope_map`): one row per (rg, btw, scope) a
        row of regime class rg, inside --between or not (btw), counts in; sc is the scope's code (its
        place in doc.SCOPES), for queries that sort or partition many rows by scope: a small integer
        sorts far faster than a name."""
        rows = [
            (rg, btw, sc, scope)
            for sc, (scope, classes) in enumerate(SCOPE_CLASSES.items())
            for rg in ALL_CLASSES
            for btw in (False, True)
            if rg in classes
            and (btw or scope != "between")
            and not (scope == "baseline" and self.baseline_is_steady)
            and not (scope == "spike1" and self.spike1_is_spike)
        ]
        rg, btw, sc, scope = zip(*rows, strict=True)
        return pa.table({"rg": pa.array(rg, pa.uint8()), "btw": pa.array(btw), "sc": pa.array(sc, pa.uint8()),
                         "scope": pa.array(scope)})  # fmt: skip

    def span(self, scope: str) -> tuple[int, int]:
        """The part of the trace clock a scope's rows lie in: --between's span, clipped to the I/O,
        or first to last arrival."""
        if scope == "between" and self.lo is not None and self.hi is not None:
            return max(self.lo, self.t0), min(self.hi, self.t1)
        return self.t0, self.t1

    def seconds(self, scope: str) -> float:
        if scope == "whole":
            return self.rate_ns / 1e9  # capture window or I/O span: see compute's _rate_span
        if scope == "between":
            lo, hi = self.span(scope)
            return (hi - lo) / 1e9
        return len(self.windows(scope)) * self.window_ns / 1e9
