-- The rows' own first and last times, from the per-window table (window_table.sql), which
-- fingerprint/compute.py checks against the bounds the io files' footers gave.
SELECT min(ts_first) AS first, max(ts_last) AS last FROM fp_windows
