-- Remove one stored fingerprint (iofp catalog rm): what it was, for the message.
DELETE FROM fingerprints WHERE id = $id RETURNING id, service, source_file;
