-- Whether the catalog holds no fingerprint yet: one its maker may remove again if its add fails.
SELECT NOT EXISTS (SELECT 1 FROM fingerprints) AS empty
