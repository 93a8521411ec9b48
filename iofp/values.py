"""The values every stage takes from its options and prints back: durations, sizes and key=value
labels, parsed by one rule each and written as a user would type them."""

from __future__ import annotations

import re
from collections.abc import Iterable

from iofp.errors import BadInput

_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 10**9, "m": 60 * 10**9, "min": 60 * 10**9,
       "h": 3600 * 10**9}  # fmt: skip


# The longest duration any option takes: every time is int64 ns, and a window or a span is added
# to times and multiplied by window counts, so the bound leaves room below 2**63 ns (292 years).
MAX_DURATION_NS = 100_000 * 3600 * 10**9  # 100000h, 11.4 years


def parse_duration_ns(text: str, flag: str, *, allow_zero: bool = False) -> int:
    """'30s', '500ms', '250us', '5m', '1h', '0.5s' or a bare number of seconds -> nanoseconds.
    `allow_zero` for the times where 0 means something (the start of a span, not waiting at all);
    elsewhere 0 is refused (a window, an interval or a runtime of nothing)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ns|us|µs|ms|s|min|m|h)?\s*", text)
    if not m:
        raise BadInput(f"{flag} {text!r} is not a duration; use e.g. 30s, 100ms, 250us, 5m or 1h")
    if float(m.group(1)) == 0:
        if allow_zero:
            return 0
        raise BadInput(f"{flag} {text!r}: a duration must be longer than 0; use e.g. 30s, 100ms or 250us")
    ns = float(m.group(1)) * _NS[m.group(2) or "s"]
    if ns > MAX_DURATION_NS:
        raise BadInput(f"{flag} {text!r} is too long; at most 100000h (11 years)")
    return max(1, round(ns))


_BYTES = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kib": 1 << 10,
    "m": 1 << 20,
    "mib": 1 << 20,
    "g": 1 << 30,
    "gib": 1 << 30,
    "t": 1 << 40,
    "tib": 1 << 40,
}


def parse_size_bytes(text: str, flag: str, examples: str = "64MiB, 512KiB or 1GiB") -> int:
    """'64MiB', '64M', '512k', '1GiB' or a bare number of bytes -> bytes (binary units: storage
    people mean 2**20 by "M" for buffers)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", text)
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _BYTES or float(m.group(1)) <= 0:
        raise BadInput(f"{flag} {text!r} is not a size; use e.g. {examples}")
    n = float(m.group(1)) * _BYTES[unit]
    if n > MAX_SIZE_BYTES:  # offsets are int64 bytes; each stage bounds its own option below this
        raise BadInput(f"{flag} {text!r} is too large; at most 1048576TiB (1 EiB)")
    return max(1, round(n))


MAX_SIZE_BYTES = 1 << 60


def parse_labels(items: list[str], flag: str = "--label") -> dict[str, str]:
    """['service=orders', 'quarter=Q3'] -> {'service': 'orders', 'quarter': 'Q3'}."""
    labels = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BadInput(f"{flag} {item!r} is not key=value; use e.g. {flag} service=order-router")
        labels[key.strip()] = value
    return labels


def device_list(names: Iterable[str]) -> str:
    """Device names as a person counts them, 2 before 10 (DiskSim's numbered devices sorted as text
    read 0, 1, 10, 11, ..., 2; a trace's manifest keeps them as text sorts them)."""

    def key(name: str) -> tuple[tuple[int, int | str], ...]:
        return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"(\d+)", name) if p)

    return ", ".join(sorted(names, key=key)) or "-"


def duration_text(ns: int) -> str:
    """1_500_000 -> '1.5ms': a window as the user would type it."""
    for unit, size in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if ns >= size:
            return f"{ns / size:g}{unit}"
    return f"{ns}ns"


def share_text(v: float, limit: float | None = None) -> str:
    """A share as a percentage, with a decimal where whole percent would print it as `limit` (the
    threshold it is judged against) while it is on the other side: 19.6% beside a 20% limit, never
    "20% ... under the 20%"."""
    if limit is None or v == limit:
        return f"{v:.0%}"
    return next(f"{v:.{d}%}" for d in (0, 1, 2, 3, 6) if f"{v:.{d}%}" != f"{limit:.{d}%}" or d == 6)
