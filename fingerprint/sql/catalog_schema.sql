-- The fingerprint catalog: one row per stored fingerprint of a service, the document kept whole
-- so that later iofp versions can re-read every field; headline figures are extracted on read.
CREATE SEQUENCE IF NOT EXISTS fingerprint_id START 1;
CREATE TABLE IF NOT EXISTS fingerprints (
    id          INTEGER PRIMARY KEY DEFAULT nextval('fingerprint_id'),
    service     VARCHAR NOT NULL,
    added_at    TIMESTAMP NOT NULL,          -- UTC
    captured_at TIMESTAMP,               -- UTC wall clock of the trace's start, when the source had one
    source_file VARCHAR,
    digest      VARCHAR NOT NULL,       -- sha256 of the document: the same fingerprint is stored once
    doc         JSON NOT NULL
);
