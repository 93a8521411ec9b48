"""`iofp capture --at HH:MM[:SS]`: start recording at a wall-clock time (e.g. just before a market open)."""

from __future__ import annotations

import re
import threading
from datetime import datetime, timedelta

from iofp.errors import BadInput


def next_occurrence(at: str, now: datetime) -> datetime:
    """The next local time `at` ("09:14", "09:14:30") at or after `now` (today, else tomorrow)."""
    m = re.fullmatch(r"\s*([01]?\d|2[0-3]):([0-5]\d)(?::([0-5]\d))?\s*", at)
    if not m:
        raise BadInput(f"--at {at!r} is not a time of day; use HH:MM or HH:MM:SS, e.g. --at 09:14")
    h, mi, s = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    when = now.replace(hour=h, minute=mi, second=s, microsecond=0)
    return when if when >= now else when + timedelta(days=1)


def wait_until(when: datetime, stop: threading.Event) -> bool:
    """Sleep until `when` (local time); False if `stop` was set first."""
    while (left := (when - datetime.now()).total_seconds()) > 0:
        if stop.wait(min(left, 1.0)):
            return False
    return True
