"""Load a stage's SQL by name from its package's .sql files (one query per file)."""

from functools import cache
from importlib import resources


@cache
def load_sql(package: str, name: str) -> str:
    """`load_sql("fingerprint.sql", "timeline")` -> the text of fingerprint/sql/timeline.sql."""
    return resources.files(package).joinpath(f"{name}.sql").read_text()
