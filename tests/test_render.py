"""replay's terminal summary: each count with its own noun, every line within 80 columns."""

from __future__ import annotations

from replay.run.render import content_counts, fidelity_line, fit

FID = {
    "verdict": "not faithful", "timing": "drifting",
    "reasons": ["IOPS MAPE 21.6% > 5%", "duration stretch +26.5% beyond ±5%"],
    "per_op": {"write": {"expected": 10_800, "replayed": 10_800, "matched": 10_800},
               "fdatasync": {"expected": 9_000, "replayed": 8_990, "matched": 8_990}},
    "matched": 19_790, "expected": 19_800, "syncs_by": "calls", "iops_mape": 0.2161, "stretch": 0.2648,
    "late_p50_us": 516_105.0, "late_p99_us": 1_605_763.0, "abs_late_p50_us": -40.0, "abs_late_p99_us": None,
}  # fmt: skip


def test_ios_and_sync_calls_are_counted_apart():
    assert content_counts(FID) == (
        "10,800/10,800 I/Os matched (0 missing, 0 extra); "
        "8,990/9,000 sync calls matched (10 missing, 0 extra)"
    )
    by_flushes = {**FID, "syncs_by": "block flushes", "per_op": {"flush": FID["per_op"]["fdatasync"]}}
    assert content_counts(by_flushes) == "8,990/9,000 block flushes matched (10 missing, 0 extra)"


def test_the_fidelity_lines_fit_80_columns_with_units():
    lines = [fit(line) for line in ("fidelity: " + fidelity_line(FID)).splitlines()]
    text = "\n".join(lines)
    assert max(len(x) for x in text.splitlines()) <= 80, text
    assert "lateness p50 516.11 ms, p99 1.61 s (|lateness| p50 -40 µs, p99 n/a)" in " ".join(text.split())
