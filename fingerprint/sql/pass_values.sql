-- fp_values' latency rows in [0, pass_counts.VALUE_LIMIT) from the one pass's counts
-- (fp_value_parts: fingerprint/pass_counts.py), added to those value_counts.sql counted outside it:
-- the op from its place in $ops (0: none).
INSERT INTO fp_values
SELECT rg, btw, $ops[o], 0::UTINYINT, v, n FROM fp_value_parts
