INSERT INTO fingerprints (service, added_at, captured_at, source_file, digest, doc)
VALUES ($service, make_timestamp($added_us), make_timestamp($captured_us), $source_file, $digest, $doc)
RETURNING id;
