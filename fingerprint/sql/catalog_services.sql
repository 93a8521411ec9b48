SELECT service, count(*) AS fingerprints, min(coalesce(captured_at, added_at)) AS first,
       max(coalesce(captured_at, added_at)) AS last
FROM fingerprints GROUP BY service ORDER BY service;
