-- fp_lat_buckets (latency_buckets.sql's table) from the one pass's counts per batch (fp_lat_parts:
-- fingerprint/pass_counts.py), summed over the batches, with the few rows whose 50 ln(lat_ns) lies
-- so close to a half that numpy's log could round it otherwise (fp_lat_near) bucketed here, by
-- DuckDB's own ln and round. The op from its place in $ops (0: none).
CREATE OR REPLACE TEMP TABLE fp_lat_buckets AS
SELECT w, btw, $ops[o] AS op, lb, sum(n)::BIGINT AS n
FROM (
    SELECT w, btw, o, lb::INTEGER AS lb, n FROM fp_lat_parts
    UNION ALL
    SELECT w, btw, o, round(ln(lat) * 50)::INTEGER, 1 FROM fp_lat_near
)
GROUP BY ALL
