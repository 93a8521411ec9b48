-- Fails unless the file is a catalog (has the fingerprints table): a read-only open checks this
-- instead of creating the table.
SELECT 1 FROM fingerprints LIMIT 0
