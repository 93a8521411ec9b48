"""The time spans every stage selects by: --between (a span on a trace's clock) and --window (the
width of the per-window series and of the regimes), each with one rule for its limits, and the one
rule for the default window when no --window is given."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, time, timedelta

import numpy as np

from iofp.errors import BadInput
from iofp.values import MAX_DURATION_NS, duration_text, parse_duration_ns

WALL_CLOCK = ("%H:%M:%S.%f", "%H:%M:%S", "%H:%M")  # --between's times of day, as `date +%T` writes them
# what --between takes, after each command's own first words ("Only I/Os issued in [T1, T2): ")
BETWEEN_HELP = (
    "seconds from the trace's start (30, 1.5m) or times of day, HH:MM[:SS[.fff]] (local time; set TZ to "
    "read another's)."
)


@dataclass(frozen=True)
class Between:
    """--between T1 T2 as given, checked before any trace is read: both seconds on the trace's clock
    (`seconds`) or both wall-clock times of day (`seconds` None), which `span_ns` places on the
    trace's clock from its capture start. The one parser of --between, for every command."""

    t1: str
    t2: str
    seconds: tuple[float, float] | None

    @property
    def text(self) -> str:
        return f"{self.t1} {self.t2}"

    def span_ns(self, capture_start_ns: int | None, source: str) -> tuple[int, int]:
        """(lo, hi) in ns on the trace's clock. A time of day is on the capture's date in the local
        time zone; one more than 12 h before the capture started is the next day's."""
        if self.seconds is not None:
            return round(self.seconds[0] * 1e9), round(self.seconds[1] * 1e9)
        if capture_start_ns is None:
            raise BadInput(
                f"--between {self.text}: this trace has no wall clock (source {source}); "
                "give seconds from its start instead, e.g. --between 30 90"
            )
        start_s, start_ns = divmod(capture_start_ns, 10**9)
        start = datetime.fromtimestamp(start_s)

        def at(text: str) -> int:
            t = datetime.combine(start.date(), _time_of_day(text, self.text))
            if t < start - timedelta(hours=12):
                t += timedelta(days=1)
            # whole seconds through the time zone (exact in a float), the rest in integers: to the ns
            whole = int(t.replace(microsecond=0).timestamp())
            return (whole - start_s) * 10**9 + t.microsecond * 1000 - start_ns

        lo, hi = at(self.t1), at(self.t2)
        if hi <= lo:
            raise BadInput(f"--between {self.text}: the end must come after the start")
        return lo, hi


def parse_between(t1: str, t2: str) -> Between:
    """--between T1 T2 -> Between: both seconds (checked by check_between_s) or both times of day."""
    a, b = between_seconds(t1), between_seconds(t2)
    if a is not None and b is not None:
        check_between_s(a, b)
        return Between(t1, t2, (a, b))
    for text, secs in ((t1, a), (t2, b)):
        if secs is None:
            _time_of_day(text, f"{t1} {t2}")  # neither seconds nor a time of day: say what either is
    if a is not None or b is not None:
        raise BadInput(f"--between {t1} {t2}: give both as seconds from the start or both as HH:MM:SS")
    return Between(t1, t2, None)


def _time_of_day(text: str, given: str) -> time:
    for fmt in WALL_CLOCK:
        try:
            return datetime.strptime(text, fmt).time()
        except ValueError:
            continue
    raise BadInput(
        f"--between {given}: give seconds from the trace's start (30, 1.5m) or times of day "
        "(HH:MM[:SS[.fff]]), e.g. --between 09:15 09:30"
    )


def between_seconds(text: str) -> float | None:
    """One end of --between as seconds on the trace's clock: a number of seconds or a duration with
    its unit (30, 30s, 1500ms, 2m), as every other time is written; None when it is neither (it may
    be a wall-clock time)."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return parse_duration_ns(text, "--between", allow_zero=True) / 1e9  # a span may start at 0
    except BadInput:
        return None


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
# I/Os at most (noise, not a regime); 2 M windows take ~30 s (17 µs each).
MIN_WINDOW_NS = 1_000_000
MAX_WINDOWS = 2_000_000

# The default window, the same in every stage (so a fingerprint and a replay given no --window name
# the same windows), adapts to the trace's length and density. A window of N I/Os carries Poisson
# noise of sqrt(N): at N = 25 one standard deviation is 20% of the count, below that single windows
# of noise read as spikes and nothing is steady (the 1 h MySQL trace at 1 s has a median of 5 I/Os
# per window: 786 "spikes"). At least 20 windows give the baseline's median and MAD something to
# stand on. Whole seconds for traces of 20 s and more (30 and 60 s are the coarse steps monitoring
# uses); the 1-2-5 sub-second steps only for shorter traces (TPC-C's 0.136 s).
WINDOW_STEPS_NS = (
    *(m * 10**e for e in (6, 7, 8) for m in (1, 2, 5)),
    *(s * 10**9 for s in (1, 2, 5, 10, 30, 60)),
)
DEFAULT_MIN_WINDOWS = 20
DEFAULT_MIN_MEDIAN_IOS = 25
DEFAULT_WINDOW = "auto"  # as the options' help shows it
DEFAULT_WINDOW_RULE = (
    "default: the smallest of 1, 2, 5, 10, 30, 60 s (1 ms to 500 ms for a trace under 20 s) whose median "
    f"window holds >= {DEFAULT_MIN_MEDIAN_IOS} I/Os over >= {DEFAULT_MIN_WINDOWS} windows, else the "
    f"widest giving {DEFAULT_MIN_WINDOWS} windows"
)


def default_steps_ns(span_ns: int) -> list[int]:
    """The candidate default windows for a trace spanning `span_ns` (first to last arrival): whole
    seconds if it has DEFAULT_MIN_WINDOWS of them, else the sub-second steps. Each is a multiple of
    the first, so one series at the first width gives every candidate's counts."""
    seconds = [w for w in WINDOW_STEPS_NS if w >= 10**9]
    if span_ns // seconds[0] + 1 >= DEFAULT_MIN_WINDOWS:
        return seconds
    return [w for w in WINDOW_STEPS_NS if w < 10**9]


def default_window_ns(base_ios: np.ndarray, span_ns: int) -> int:
    """DEFAULT_WINDOW_RULE, from the I/Os per window of the first of `default_steps_ns(span_ns)`
    (every window from the first arrival to the last, empty ones included)."""
    steps = default_steps_ns(span_ns)
    base = steps[0]
    usable = [w for w in steps if span_ns // w + 1 >= DEFAULT_MIN_WINDOWS] or steps[:1]
    for w in usable:
        m = w // base
        counts = np.add.reduceat(base_ios, np.arange(0, len(base_ios), m)) if m > 1 else base_ios
        if len(counts) and np.median(counts) >= DEFAULT_MIN_MEDIAN_IOS:
            return w
    return usable[-1]


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


def parse_window_option(text: str | None, flag: str = "--window") -> int | None:
    """A --window value as parse_window_ns reads it, or None (the default rule) for none or 'auto'."""
    if text is None or text.strip().lower() == DEFAULT_WINDOW:
        return None
    return parse_window_ns(text, flag)
