-- Headline figures of each stored fingerprint, oldest capture first, from the scope a quarterly
-- review compares like for like (Fingerprint.typical_scope, the same rule): the steady state when
-- it covers at least half of the baseline (the windows in no spike), else the baseline, else the
-- whole trace. IOPS, MB/s and the read share count data requests (reads, writes, discards).
-- A document larger than $max_doc_bytes (stored by an iofp without that limit) is not parsed: its
-- figures and its document are null, its size says why (parsing it took the query past its memory).
WITH sized AS (
    SELECT *, strlen(doc::VARCHAR) AS doc_bytes FROM fingerprints
    WHERE ($service IS NULL OR service = $service) AND ($id IS NULL OR id = $id)
), scoped AS (
    SELECT id, service, added_at, captured_at, source_file, doc_bytes,
           CASE WHEN doc_bytes > $max_doc_bytes THEN NULL ELSE doc END AS doc,
           CASE WHEN doc_bytes > $max_doc_bytes THEN 'whole'
                WHEN json_type(doc, '$.steady') = 'OBJECT'
                     AND (coalesce(json_type(doc, '$.baseline'), 'NULL') <> 'OBJECT'
                          OR 2 * (doc ->> '$.steady.windows')::BIGINT >= (doc ->> '$.baseline.windows')::BIGINT)
                     THEN 'steady'
                WHEN json_type(doc, '$.baseline') = 'OBJECT' THEN 'baseline'
                ELSE 'whole' END AS scope
    FROM sized
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
    json_extract(doc, '$.' || scope || '.intensity.iops')::DOUBLE          AS iops,
    json_extract(doc, '$.' || scope || '.intensity.mbps')::DOUBLE          AS mbps,
    json_extract(doc, '$.' || scope || '.mix.read_share')::DOUBLE          AS read_share,
    json_extract(doc, '$.' || scope || '.latency.all.p99_us')::DOUBLE      AS p99_us,
    json_extract(doc, '$.' || scope || '.intensity.flushes_per_s')::DOUBLE AS flush_per_s,
    doc ->> '$.whole.shape.name'                                           AS shape,
    doc ->> '$.whole.bound.verdict'                                        AS bound,
    doc::VARCHAR                                                           AS doc,
    doc_bytes
FROM scoped
ORDER BY taken_at, id;
