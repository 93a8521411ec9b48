"""The time spans every stage selects by: --between (a span on a trace's clock) and --window (the
width of the per-window series and of the regimes), each with one rule for its limits."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

from iofp.errors import BadInput
from iofp.values import MAX_DURATION_NS, duration_text, parse_duration_ns


def check_between_s(t1: float, t2: float, flag: str = "--between") -> None:
    """The one rule for a span of seconds on a trace's clock (fingerprint and replay): 0 <= T1 < T2,
    both finite and within the longest duration any option takes. A negative start is a typo, not an
    earlier part of the trace."""
    most = MAX_DURATION_NS // 10**9
    if not (math.isfinite(t1) and math.isfinite(t2) and 0 <= t1 < t2 <= most):
        raise BadInput(f"{flag} {t1:g} {t2:g}: need 0 <= T1 < T2 <= {most:,} (seconds on the trace's clock)")


# The regime window (--window of iofp fingerprint, report, iolog and replay). Every window from the
# first arrival to the last is a row of the series and of the regime rule, empty or not: `--window
# 1us` over a 30 s trace is 30 M of them and minutes of CPU. Below 1 ms a window holds a handful of
# I/Os at most (noise, not a regime); 2 M windows take ~30 s (17 µs each). The default is the one
# every stage uses, so a fingerprint and a replay given no --window name the same windows.
DEFAULT_WINDOW_NS = 10**9
MIN_WINDOW_NS = 1_000_000
MAX_WINDOWS = 2_000_000


DEFAULT_WINDOW = duration_text(DEFAULT_WINDOW_NS)  # as the options' help shows it: "1s"


def _nice_windows() -> Iterator[int]:
    """1ms, 2ms, 5ms, 10ms, 20ms, ... in ns."""
    for exp in itertools.count(6):
        for m in (1, 2, 5):
            yield m * 10**exp


def check_window_ns(window_ns: int, span_ns: int | None = None, flag: str = "--window") -> None:
    """The one rule for a regime window, in every stage: at least MIN_WINDOW_NS, and, once the span
    from the first I/O to the last is known, at most MAX_WINDOWS windows over it (naming the
    narrowest window that fits)."""
    if window_ns < MIN_WINDOW_NS:
        raise BadInput(f"{flag} {duration_text(window_ns)}: the shortest window is 1ms; e.g. {flag} 100ms")
    if span_ns is None:
        return
    nwin = span_ns // window_ns + 1
    if nwin > MAX_WINDOWS:
        wide = next(w for w in _nice_windows() if span_ns // w + 1 <= MAX_WINDOWS)
        raise BadInput(
            f"{flag} {duration_text(window_ns)}: {nwin:,} windows over this trace's {span_ns / 1e9:,.3f} s, "
            f"more than {MAX_WINDOWS:,}; use {flag} {duration_text(wide)} or wider"
        )


def parse_window_ns(text: str, flag: str = "--window") -> int:
    """A --window value ('1s', '250ms', ...) -> nanoseconds, refused below the shortest window here,
    before any trace is read (the window count is checked once the trace's span is known)."""
    window_ns = parse_duration_ns(text, flag)
    check_window_ns(window_ns, flag=flag)
    return window_ns
