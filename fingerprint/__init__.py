"""Fingerprint: trace store, importers, DuckDB SQL, fingerprints, diff and the catalog."""
