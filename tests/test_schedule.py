"""`iofp capture --at`: the start time is the next occurrence of a local time of day."""

from datetime import datetime

import pytest

from bpf.schedule import next_occurrence
from iofp.errors import BadInput


@pytest.mark.parametrize(
    ("at", "now", "expected"),
    [
        ("09:14", datetime(2026, 11, 23, 8, 0, 5), datetime(2026, 11, 23, 9, 14)),  # later today
        ("09:14", datetime(2026, 11, 23, 9, 14), datetime(2026, 11, 23, 9, 14)),  # exactly now
        ("09:14:30", datetime(2026, 11, 23, 9, 15), datetime(2026, 11, 24, 9, 14, 30)),  # missed: tomorrow
        ("23:59:59", datetime(2026, 12, 31, 23, 59, 59, 1), datetime(2027, 1, 1, 23, 59, 59)),  # year end
    ],
)
def test_next_occurrence(at, now, expected):
    assert next_occurrence(at, now) == expected


@pytest.mark.parametrize("at", ["25:00", "9", "09:60", "9:14pm", ""])
def test_bad_time_is_refused(at):
    with pytest.raises(BadInput, match="is not a time of day; use HH:MM"):
        next_occurrence(at, datetime(2026, 11, 23))
