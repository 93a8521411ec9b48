"""The fingerprint document's definition (iofp/fingerprint_doc.py): docs/fingerprint-schema.md names
exactly its fields, a document reads back as written, and a fingerprint that travels is kilobytes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import REPO
from helpers import close

from fingerprint.api import fingerprint_trace
from iofp import fingerprint_doc
from iofp.fingerprint_doc import dumps, field_paths, from_dict, load

SAMPLES = REPO / "samples"
MAX_BYTES = 64 * 1024  # the size bound docs/fingerprint-schema.md states


def documented() -> dict[str, list[str]]:
    """`### Name` sections of the schema doc -> the keys (first column, in backticks) of its table."""
    out: dict[str, list[str]] = {}
    current = None
    for line in (REPO / "docs" / "fingerprint-schema.md").read_text().splitlines():
        if m := re.fullmatch(r"### `(\w+)`", line):
            current = m.group(1)
            out[current] = []
        elif line.startswith("## "):
            current = None
        elif current and (m := re.match(r"\| `(\w+)` \|", line)):
            out[current].append(m.group(1))
    return out


def test_the_schema_doc_and_the_definition_name_the_same_fields():
    doc, code = documented(), field_paths()
    assert sorted(doc) == sorted(code)  # every part documented, and nothing documented that is not one
    for name, keys in code.items():
        assert doc[name] == keys, name  # the same fields, in the definition's order


def test_the_doc_states_this_version():
    text = (REPO / "docs" / "fingerprint-schema.md").read_text()
    assert text.startswith(f"# Fingerprint JSON, version {fingerprint_doc.FINGERPRINT_VERSION}\n")


@pytest.mark.parametrize("name", ["market-open", "market-open-q2", "commit-heavy", "mysql-1and1"])
def test_every_sample_fingerprint_is_current_small_and_reads_back(name):
    path = SAMPLES / "fingerprints" / f"{name}.fp.json"
    fp = load(path)
    assert path.stat().st_size < MAX_BYTES
    assert dumps(fp) == path.read_text()  # written by this definition, byte for byte
    # and what the trace gives today (floats to 1e-12: DuckDB's parallel sums vary in the last digit)
    assert close(fp.to_dict(), fingerprint_trace(SAMPLES / "traces" / name).to_dict())


@pytest.mark.parametrize("which", ["mysql", "mssql", "tpcc"])
def test_a_shared_trace_fingerprint_is_under_the_bound(which, tmp_path_factory):
    from conftest import SHARED_TRACES
    from helpers import import_trace

    fmt, src = {"mysql": ("blkreplay", "linux-mysql.load.gz"),
                "mssql": ("blkreplay", "windows-mssql.load.gz"),
                "tpcc": ("disksim", "tpcc-small.trace")}[which]  # fmt: skip
    if not (SHARED_TRACES / src).exists():
        pytest.skip(f"needs the shared traces at {SHARED_TRACES}")
    fp = fingerprint_trace(import_trace(fmt, SHARED_TRACES / src, tmp_path_factory.mktemp("t") / which))
    text = dumps(fp)
    assert len(text.encode()) < MAX_BYTES, len(text)
    assert from_dict(json.loads(text), which) == fp


def test_a_document_reads_back_field_for_field(tmp_path):
    fp = load(SAMPLES / "fingerprints" / "market-open.fp.json")
    doc = fp.to_dict()
    assert from_dict(doc, "x") == fp
    # JSON has one number type: a float field written as 1000 (an edited file) still reads
    doc["whole"]["intensity"]["iops"] = 1000
    assert from_dict(doc, "x").whole.intensity.iops == 1000
    # a key the definition does not know is no error (a newer writer of the same version): it is dropped
    doc["whole"]["note"] = "hand-edited"
    assert "note" not in fingerprint_doc.to_dict(from_dict(doc, "x"))["whole"]


def test_load_refuses_what_is_not_a_fingerprint(tmp_path):
    from iofp.errors import BadInput

    bad = tmp_path / "x.json"
    bad.write_text("[1, 2]")
    with pytest.raises(BadInput, match=r"x.json: not an iofp fingerprint; make one with iofp fingerprint"):
        load(bad)
    bad.write_text("{")
    with pytest.raises(BadInput, match=r"x.json: not valid JSON"):
        load(bad)
    with pytest.raises(BadInput, match=r"nope.json: cannot read it"):
        load(Path(tmp_path / "nope.json"))
