"""Odd values in the records iofp reads back (fingerprints, probe and headroom results), every field
in turn: a number that is negative, zero, 1e308, NaN or a string, a cross-reference (a probe cell's
run) that names nothing. Every command that reads them works or refuses in one line (exit 2), never
a traceback (the in-process runner lets one through, failing the test with its stack)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from helpers import headroom_record, probe_record, run_iofp
from hostile import assert_exit, assert_inert, with_field

from iofp import headroom_result as hr
from iofp import probe_result as pr

pytestmark = pytest.mark.slow  # a few hundred in-process runs, ~1 min

SAMPLE_FP = REPO / "samples" / "fingerprints" / "market-open.fp.json"
ODD: list[Any] = [-1, 0, 1e308, float("nan"), "7", None, [], {}]


def leaves(doc: Any, path: tuple = (), kind: tuple = ()) -> list[tuple[tuple, tuple]]:
    """(path, kind) of every scalar: one per kind (list items and object keys of a kind stand for the
    rest), generated from the document."""
    out, seen = [], set()

    def walk(v: Any, p: tuple, k: tuple) -> None:
        if isinstance(v, dict):
            for key, x in v.items():
                walk(x, (*p, key), (*k, key if not key[:1].isdigit() else "#"))
        elif isinstance(v, list):
            for i, x in enumerate(v[:2]):
                walk(x, (*p, i), (*k, "#"))
        elif k not in seen:
            seen.add(k)
            out.append((p, k))

    walk(doc, path, kind)
    return out


def odd_cases(doc: dict) -> list[tuple[tuple, Any]]:
    values = itertools.cycle(ODD)
    return [(p, next(values)) for p, _ in leaves(doc)]


def check(args: list[str], where: str, failures: list[str]) -> None:
    """Run `iofp ARGS`; a traceback or a refusal of more than one line is added to `failures`."""
    try:
        code, out, err = run_iofp(*map(str, args))
        assert_exit(code, err, where)
        assert_inert(out + err, where)
    except Exception as e:  # every case is run, then all that failed are listed
        failures.append(f"{where}: {args[0]}: {type(e).__name__}: {str(e)[:200]}")


FP = json.loads(SAMPLE_FP.read_text())


@pytest.mark.parametrize("chunk", range(8))
def test_odd_values_in_a_fingerprint(chunk, tmp_path):
    cases, failures = odd_cases(FP)[chunk::8], []
    for path, value in cases:
        bad = tmp_path / "fp.json"
        bad.write_text(json.dumps(with_field(FP, path, value)))
        where = f"fingerprint {'.'.join(map(str, path))} = {value!r}"
        check(["fio-job", bad, "-o", tmp_path / "j.fio", "--force"], where, failures)
        check(["diff", SAMPLE_FP, bad], where, failures)
        check(
            ["catalog", "add", bad, "--service", "s", "--catalog", tmp_path / f"c{chunk}.duckdb"],
            where,
            failures,
        )
    assert not failures, "\n".join(failures)


def probe_doc() -> dict:
    res = probe_record()
    return json.loads(json.dumps(res.to_dict() if hasattr(res, "to_dict") else _asdict(res)))


def _asdict(res: Any) -> dict:
    from dataclasses import asdict

    return asdict(res)


def headroom_doc() -> dict:
    latency = {"read": {"p50": 1e5, "p99": 2e5, "p99.9": 3e5}}
    step = hr.Step(scale=1.0, phase="sweep", dir="steps/01-x1", verdict=hr.PASS, demanded_iops=1000.0,
                   achieved_iops=1000.0, latency_ns=latency)  # fmt: skip
    return _asdict(headroom_record([step]))


@pytest.mark.parametrize(("name", "record", "doc"), [("probe", pr.RECORD, probe_doc()),
                                                      ("headroom", hr.RECORD, headroom_doc())])  # fmt: skip
def test_odd_values_in_a_result_record(name, record, doc, tmp_path):
    cases = odd_cases(doc)
    if name == "probe":  # the cross-references: a cell's and a sweep point's run, named but not there
        cases += [(("cells", 0, "run"), "nope"), (("sweep", "points", 0, "run"), "nope")]
    failures: list[str] = []
    for path, value in cases:
        root = tmp_path / name
        root.mkdir(exist_ok=True)
        (root / record).write_text(json.dumps(with_field(doc, path, value)))
        where = f"{name} {'.'.join(map(str, path))} = {value!r}"
        check(["compare", root], where, failures)
        check(["report", root, "-o", tmp_path / "r.html", "--force"], where, failures)
    assert not failures, "\n".join(failures)


def test_the_generators_cover_every_record(tmp_path):
    assert len(odd_cases(FP)) > 100 and len(odd_cases(probe_doc())) > 30
    assert Path(SAMPLE_FP).is_file()


@pytest.mark.parametrize(("name", "record", "doc"), [("probe", pr.RECORD, probe_doc()),
                                                      ("headroom", hr.RECORD, headroom_doc())])  # fmt: skip
def test_every_string_of_a_result_record_holds_the_combined_payload(name, record, doc, tmp_path):
    """A probe's and a headroom sweep's record, every string set in turn to every payload at once,
    through compare and report (which renders the clean record): one line or a result, inert, nothing
    created beside the report."""
    from hostile import PAYLOADS, string_fields, tree

    root = tmp_path / name
    root.mkdir()
    (root / record).write_text(json.dumps(doc))
    code, _, err = run_iofp("report", str(root), "-o", str(tmp_path / "r.html"))
    assert code == 0, err
    fields = list(string_fields(doc, keys=False))
    assert len(fields) > 3, fields
    failures: list[str] = []
    for path in fields:
        (root / record).write_text(json.dumps(with_field(doc, path, PAYLOADS["combined"])))
        where = f"{name} {'.'.join(map(str, path))}"
        before = tree(tmp_path)
        check(["compare", root], where, failures)
        check(["report", root, "-o", tmp_path / "r.html", "--force"], where, failures)
        if tree(tmp_path) - before - {tmp_path / "r.html"}:
            failures.append(f"{where}: created {sorted(map(str, tree(tmp_path) - before))[:3]}")
    assert not failures, "\n".join(failures)
