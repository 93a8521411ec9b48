-- Headline figures of each stored fingerprint, oldest capture first. The steady-state scope is the
-- like-for-like one for a quarterly review; traces with no steady windows fall back to the whole.
WITH scoped AS (
    SELECT id, service, added_at, captured_at, source_file, doc,
           CASE WHEN json_type(doc, '$.steady') = 'OBJECT' THEN 'steady' ELSE 'whole' END AS scope
    FROM fingerprints
    WHERE ($service IS NULL OR service = $service) AND ($id IS NULL OR id = $id)
)
SELECT
    id,
    service,
    coalesce(captured_at, added_at)                                        AS taken_at,
    captured_at IS NULL                                                    AS taken_is_added_time,
    source_file,
    doc ->> '$.provenance.source'                                          AS source,
    doc ->> '$.provenance.host'                                            AS host,
    scope,
    json_extract(doc, '$.' || scope || '.intensity.iops_mean')::DOUBLE     AS iops,
    json_extract(doc, '$.' || scope || '.intensity.mbps_mean')::DOUBLE     AS mbps,
    json_extract(doc, '$.' || scope || '.mix.read_share_count')::DOUBLE    AS read_share,
    json_extract(doc, '$.' || scope || '.latency.all.p99_us')::DOUBLE      AS p99_us,
    json_extract(doc, '$.' || scope || '.durability.flush_rate_per_s')::DOUBLE AS flush_per_s,
    doc ->> '$.shape.class'                                                AS shape,
    doc ->> '$.bound.verdict'                                                AS bound,
    doc::VARCHAR                                                           AS doc
FROM scoped
ORDER BY taken_at, id;
