"""Benchmarks: `python -m bench.<name>`; results in BENCHMARKS.md."""
