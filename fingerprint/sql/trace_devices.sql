-- The sorted device names of the trace (trace_bounds.sql's devices, where the footers gave the rest:
-- fingerprint/compute.py): the device column alone read, a dictionary of a few names.
SELECT list_sort(list(DISTINCT device::VARCHAR)) AS devices FROM io
