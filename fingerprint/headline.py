"""What a reader reads first about a fingerprint, in the terminal, the report and the catalog alike:
the biggest spike's answer in one line (its verdict, the reason in figures, and when it was, on the
wall clock where the trace has one), each scope's verdict with its reason, and when the busiest
second was.

A time on the trace's clock is seconds from its first arrival (as the windows and spikes count
them); on the wall clock it is local time, as --between reads it, so a time printed here can be
pasted into --between. Shares beside a threshold are printed so that they cannot read as the
threshold itself (iofp.values.share_text: 19.6%, never "20% ... under the 20%").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime

from fingerprint.classify import COMMIT_BUSY, SHAPE_NAMES
from iofp.fingerprint_doc import Bound, Fingerprint, Scope, Spike
from iofp.values import share_text

KIB = 1024

@dataclass(frozen=True)
class Clock:
    """Times of one trace: seconds from its first arrival, printed with the decimals its windows need,
    and on the wall clock (local time) when the trace has one."""

    first_ns: int | None  # the first arrival on the wall clock (ns since the epoch), or None
    decimals: int

    def seconds(self, s: float) -> str:
        return f"{s:,.{self.decimals}f}"

    def wall(self, s: float) -> str | None:
        """`s` on the wall clock, rounded to the decimals (the windows start wherever the first I/O
        fell within its second: 09:15:11.9 reads 09:15:12, as the spike's 5 s read 5 s)."""
        if self.first_ns is None or not math.isfinite(s):
            return None  # a fingerprint from elsewhere may hold NaN for a time: seconds only
        ns = self.first_ns + round(s * 1e9)
        step = 10 ** (9 - min(self.decimals, 9))
        whole, frac = divmod((ns + step // 2) // step * step, 10**9)
        try:
            text = datetime.fromtimestamp(whole).strftime("%H:%M:%S")
        except (OverflowError, OSError, ValueError):  # a time no clock shows
            return None
        return f"{text}.{frac // step:0{self.decimals}d}" if self.decimals else text

    def at(self, s: float) -> str:
        """A moment: "09:15:03 (16 s)", or "16 s" without a wall clock."""
        wall = self.wall(s)
        return f"{self.seconds(s)} s" if wall is None else f"{wall} ({self.seconds(s)} s)"

    def span(self, a: float, b: float) -> str:
        """An interval: "09:14:59-09:15:05 (12-18 s)", or "12-18 s"."""
        secs = f"{self.seconds(a)}-{self.seconds(b)} s"
        wa, wb = self.wall(a), self.wall(b)
        return secs if wa is None or wb is None else f"{wa}-{wb} ({secs})"

    def short_span(self, a: float, b: float) -> str:
        """An interval in a table column: wall clock when there is one, else seconds."""
        wa, wb = self.wall(a), self.wall(b)
        return f"{self.seconds(a)}-{self.seconds(b)}" if wa is None or wb is None else f"{wa}-{wb}"

def decimals_for(window_s: float) -> int:
    """The decimals a time needs at this window width (5 s: none; 250 ms: two)."""
    return next((d for d in range(10) if abs(window_s * 10**d - round(window_s * 10**d)) < 1e-9), 9)

def clock(fp: Fingerprint) -> Clock:
    prov = fp.provenance
    first = None if prov.capture_start_ns is None else prov.capture_start_ns + prov.capture_window_ns[0]
    return Clock(first, decimals_for(fp.params.window_ns / 1e9))

def started(fp: Fingerprint) -> str | None:
    """When the trace's first I/O was, with its date and time zone ("2026-11-22 09:14:47 IST")."""
    c = clock(fp)
    if c.first_ns is None:
        return None
    return datetime.fromtimestamp(c.first_ns / 1e9).astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")

def _us(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v / 1e3:,.2f} ms" if v >= 1000 else f"{v:,.0f} µs"

def commits_text(b: Bound) -> str | None:
    """The commits' share of wall time, beside the threshold at which they set the pace."""
    n = b.numbers
    rate, busy = n.get("commit_rate_per_s"), n.get("commit_busy_share")
    if rate is None or busy is None or rate < 1:
        return None
    side = "at or over" if busy >= COMMIT_BUSY else "under"
    return f"{rate:,.0f} commits/s, {busy_text(busy)} ({side} the {COMMIT_BUSY:.0%} that sets the pace)"


def busy_text(busy: float) -> str:
    """The commits' busy time (rate x mean fsync latency) as a share of wall time; past 100% the
    calls overlap (Little's law: that many committers wait at once, on average)."""
    if busy >= 1:
        return f"fsync busy {busy:,.1f}x wall time (calls overlap)"
    return f"{share_text(busy, COMMIT_BUSY)} of wall time in fsync"

def reason(b: Bound) -> str:
    """The figures behind a verdict, short: what a reader checks it by."""
    n = b.numbers
    size, seq = n.get("mean_size_bytes") or 0.0, n.get("sequential_share") or 0.0
    if b.verdict == "fsync-latency-bound":
        rate, busy = n.get("commit_rate_per_s") or 0.0, n.get("commit_busy_share")
        out = f"{rate:,.0f} commits/s"
        if busy is not None:
            out += f", {busy_text(busy)} (p99 {_us(n.get('fsync_p99_us'))})"
        else:
            share = n.get("durability_share")
            out += "" if share is None else f", flushes {share:.0%} of requests (no latency in the trace)"
        return out
    if b.verdict == "capped":  # a rate held while requests wait: how many, and for how much of the time
        waiting, share = n.get("waiting_requests"), n.get("waiting_share")
        out = f"held at {rate_text(n.get('iops') or 0)} IOPS"
        if waiting is not None and share is not None:
            out += f" with {waiting:,.1f} requests waiting, {share:.0%} of the application's time"
        return out
    if b.verdict == "throughput-bound":
        out = f"{n.get('mbps') or 0:,.1f} MB/s, mean size {size / KIB:,.0f} KiB, {seq:.0%} sequential"
    elif b.verdict == "IOPS-bound":
        out = f"{rate_text(n.get('iops') or 0)} IOPS, mean size {size / KIB:,.1f} KiB, {seq:.0%} sequential"
    else:  # a verdict this module does not know the figures of: the demand's
        mbps = n.get("mbps") or 0
        out = f"{rate_text(n.get('iops') or 0)} IOPS, {mbps:,.1f} MB/s, mean size {size / KIB:,.1f} KiB"
    if (commits := commits_text(b)) is not None:
        out += f"; {commits}"
    return out

def verdict_text(s: Scope, *, side: bool = True) -> str:
    """A scope's verdict and its reason: "IOPS-bound: 2,995 IOPS, mean size 4.8 KiB, ..."; `side`:
    say when the trace had no latency (the verdict is then the demand's alone)."""
    b = s.bound
    only = " (demand only)" if side and b.side == "demand-only" else ""
    return f"{verdict_name(b.verdict)}{only}: {reason(b)}"


# A document read from a file may hold anything: these lines print only iofp's own words (a verdict
# is one hyphenated word, a shape one of classify's), so that wrapping them can start no line with
# a stranger's text.
VERDICT = re.compile(r"[A-Za-z]+(-[A-Za-z]+)*")


def verdict_name(verdict: str) -> str:
    return verdict if VERDICT.fullmatch(verdict) else "an unrecognised bound"


def shape_name(shape: str) -> str:
    return shape if shape in SHAPE_NAMES else "an unrecognised shape"


def rate_text(v: float) -> str:
    """A rate with the digits it needs: 1.1, 20.0, 1,000."""
    return f"{v:,.1f}" if abs(v) < 100 else f"{v:,.0f}"

def spike_of(fp: Fingerprint, rank: int = 1) -> Spike | None:
    return next((sp for sp in fp.regimes.spikes if sp.rank == rank), None)

def lead(fp: Fingerprint) -> str | None:
    """The biggest spike's answer, when the trace has spikes: "spike #1 09:14:59-09:15:05 (12-18 s):
    IOPS-bound: 2,995 IOPS, ... (3.0x the baseline's 1,000 IOPS)"."""
    sp, scope = spike_of(fp), fp.spike1 or (fp.spike if fp.regimes.spikes_total == 1 else None)
    if sp is None or scope is None:
        return None
    c = clock(fp)
    level = f"{sp.peak_iops / sp.baseline_iops:,.1f}x" if sp.baseline_iops else "over"
    return (
        f"spike #1 {c.span(sp.start_s, sp.end_s)}: {verdict_text(scope)}; peak {rate_text(sp.peak_iops)} "
        f"IOPS, {level} the baseline's {rate_text(sp.baseline_iops)}"
    )

def scope_title(s: Scope, spikes: int = 2) -> str:
    """A scope as a column or a line names it: the spike scope is every spike's windows together."""
    if s.name == "spike":
        return "spike" if spikes == 1 else "spikes"
    return "spike #1" if s.name == "spike1" else s.name


def bound_by(b: Bound) -> str:
    return bound_words(b.verdict)


def bound_words(verdict: str) -> str:
    """The resource a bound verdict names, as words that wrap in a narrow column: "fsync latency",
    "IOPS", "throughput" (a verdict that names none, e.g. "capped", as it is)."""
    verdict = verdict_name(verdict)
    return verdict.removesuffix("-bound").replace("-", " ") if verdict.endswith("-bound") else verdict

def verdict_lines(fp: Fingerprint, scopes: list[Scope]) -> list[str]:
    """Each scope's verdict with its reason, named: the spikes' and the whole trace's can differ,
    and each says which it is (one spike's is the lead line's). A trace without latency says once
    that every verdict is the demand's alone."""
    shown = [s for s in scopes if not (s.name == "spike" and fp.regimes.spikes_total == 1)]
    n = fp.regimes.spikes_total
    out = [f"{scope_title(s, n)}: {shape_name(s.shape.name)}, {verdict_text(s, side=False)}" for s in shown]
    if fp.whole.bound.side == "demand-only":
        out.append("demand only: the trace has no latency, so whether the device set the pace is unknown")
    return out


def busiest(fp: Fingerprint, s: Scope) -> str:
    """The scope's busiest second: its I/Os and when it began ("3,001 at 09:15:03")."""
    b = s.burstiness.get("1s")
    if b is None or b.bins < 2:
        return "-"
    if b.peak_start_s is None:
        return f"{b.peak_ios:,}"
    c = clock(fp)
    return f"{b.peak_ios:,} at {c.wall(b.peak_start_s) or c.seconds(b.peak_start_s) + ' s'}"
