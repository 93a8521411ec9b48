"""Capture: the eBPF program, its bcc loader and the Parquet writer."""
