"""The catalog kept in an object store: many hosts add to it at once, with no lock and no server.

The store is the source of truth: one fingerprint document per trace, beside it in the lake
(LAKE/host=H/service=S/date=D/fingerprint.json, where `iofp fleet` writes them too). Adding is one
conditional PUT of a key no other host writes (its own host and day), so eight hosts adding at once
cannot lose each other's; the same document added twice is found there. Reading lists the lake and
builds the catalog's DuckDB tables in memory (the same queries as a local catalog's), a cache
rebuilt on every open.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from iofp import artifact_json, fingerprint_doc, objstore
from iofp.contract import FINGERPRINT, TraceMeta, hive_parts, hive_path
from iofp.errors import BadInput

FETCH_THREADS = 16  # a lake of 2,400 documents is 2,400 GETs: in parallel


def place(lake: objstore.Url, doc: fingerprint_doc.Fingerprint, service: str) -> objstore.Url:
    """Where a fingerprint goes in the lake: beside its trace (its host, service and UTC day; the
    day of a trace without a wall clock from its `date` label, as an import to the lake files it)."""
    p = doc.provenance
    labels = {"service": service} | ({"date": p.labels["date"]} if p.labels.get("date") else {})
    meta = TraceMeta(host=p.host or "", labels=labels, capture_start_ns=p.capture_start_ns)
    try:
        return lake.join(hive_path(hive_parts(meta)), FINGERPRINT)
    except BadInput as e:
        raise BadInput(f"a catalog in a store files a fingerprint by host, service and day: {e}") from None


def put(url: objstore.Url, text: str) -> bool:
    """Store the document at `url` unless one is there; False when the same one already was.
    Another document at the same place (the same host and day) is refused, not overwritten."""
    try:
        objstore.put_bytes(url, text.encode(), overwrite=False)
        return True
    except BadInput:
        there = objstore.head(url)
        if there is None:
            raise
    if objstore.sha256_b64(text.encode()) == there.get("sha256") or _same(url, text):
        return False
    raise BadInput(f"{url} holds another fingerprint of that host and day; the catalog keeps one per trace")


def _same(url: objstore.Url, text: str) -> bool:
    there = artifact_json.load(str(url), "fingerprint", "remove it with iofp catalog rm")
    return there == artifact_json.parse(text, "this fingerprint", "fingerprint", "fingerprint it again")


def documents(lake: objstore.Url) -> list[tuple[str, str, dict[str, Any] | None, str | None]]:
    """(url, service, document, None) of every fingerprint in the lake, in key order; for one that
    cannot be read (too large, not JSON, not a fingerprint), (url, service, None, why): one stored
    object, put there by anyone who can write the lake, must not stop the catalog for every service
    (a 17 MiB one made list, trend and rm all fail), and it must stay listed to be removed."""
    keys = [k for k, _ in objstore.listing(lake) if k.endswith("/" + FINGERPRINT)]

    def fetch(key: str) -> tuple[str, str, dict[str, Any] | None, str | None]:
        url = objstore.Url(lake.bucket, key)
        parts = dict(p.split("=", 1) for p in key.split("/") if "=" in p)
        try:
            doc = fingerprint_doc.load(str(url)).to_dict()
        except BadInput as e:
            why = str(e).removeprefix(f"{url}: ").split("; ")[0]
            return str(url), parts.get("service") or "unknown", None, why
        service = parts.get("service") or doc["provenance"]["labels"].get("service") or "unknown"
        return str(url), service, doc, None

    with ThreadPoolExecutor(FETCH_THREADS) as pool:
        return list(pool.map(fetch, keys))
