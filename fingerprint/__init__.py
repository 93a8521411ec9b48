"""Fingerprint: trace store, importers, DuckDB SQL, fingerprints, diff and reports."""
