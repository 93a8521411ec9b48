"""The hostile-input corpus: malformed inputs for every importer and damaged traces of every kind,
generated here and run through every command that reads them.

What every case must show: exit 0 or 2, never a traceback (the in-process runner lets an uncaught
exception fail the test with its stack); a refusal is one line naming the file (and line, for an
importer) and leaves nothing behind; what cannot be true (a time before the trace began, a
completion before its issue, a negative offset, a null time, an unknown op) is refused, not
imported or fingerprinted; a trace without trace.json is read, with a warning that it may be
incomplete.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import is_root
from helpers import run_iofp

from iofp.contract import MANIFEST, TraceMeta, TraceWriter

# --------------------------------------------------------------------------------------------
# importers: a few valid records of each format, and every way a file of it can be wrong

VALID = {
    "blkparse": (
        "  8,0    0        1     0.000000000  1234  Q  WS 1000 + 8 [mysqld]\n"
        "  8,0    0        2     0.000010000  1234  D  WS 1000 + 8 [mysqld]\n"
        "  8,0    0        3     0.000100000     0  C  WS 1000 + 8 [0]\n"
        "  8,0    0        4     0.000200000  1234  D   R 2000 + 16 [mysqld]\n"
        "  8,0    0        5     0.000300000     0  C   R 2000 + 16 [0]\n"
    ),
    "blkreplay": (
        "a free-text header\nstart ; sector; length ; op ;  replay_delay ; replay_duration\n"
        "0.000100 ; 1000 ; 8 ; R ; 0.0 ; 0.0\n0.000200 ; 2000 ; 16 ; W ; 0.0 ; 0.0\n"
        "0.000300 ; 3000 ; 8 ; RA ; 0.0 ; 0.0\n"
    ),
    "msr": (
        "128166372003061629,src1,0,Read,7014609920,24576,41286\n"
        "128166372016382155,src1,0,Write,1317441536,8192,1963\n"
        "128166372026382245,src1,1,Read,2000,4096,500\n"
    ),
    "disksim": "0.5 0 1000 8 1\n1.5 0 2000 16 0\n2.5 1 3000 8 1\n",
    "fio-iolog": (
        "fio version 3 iolog\n0 /dev/sdb add\n0 /dev/sdb open\n100 /dev/sdb read 0 4096\n"
        "200 /dev/sdb write 8192 4096\n300 /dev/sdb sync\n400 /dev/sdb close\n"
    ),
    "alibaba": "1,R,4096,4096,1577808000000000\n1,W,8192,8192,1577808000000100\n2,R,0,512,1577808000000200\n",
}

# Records that cannot be true, each refused at its line (the README promises it): format -> (text,
# line, what the message says)
IMPOSSIBLE = {
    "msr-before-first": ("msr", VALID["msr"] + "12816637200306,src1,0,Read,0,4096,10\n", 4,
                         "Timestamp 12816637200306 is before the first record's (128166372003061629)"),
    "alibaba-before-first": ("alibaba", VALID["alibaba"] + "1,R,0,512,1577808\n", 4,
                             "timestamp 1577808 is before the first record's (1577808000000000)"),
    "blkparse-completion-before-issue": (
        "blkparse",
        "  8,0 0 1 1.000000000 1234 D WS 1000 + 8 [db]\n  8,0 0 2 0.600000000 0 C WS 1000 + 8 [0]\n", 2,
        "completion at 0.600000000 s is before its issue at 1.000000000 s"),
    "disksim-negative-time": ("disksim", VALID["disksim"] + "-4.5 0 1000 8 1\n", 4,
                              "arrival -4.5 is out of range"),
    "blkreplay-negative-sector": ("blkreplay", VALID["blkreplay"] + "0.4 ; -8 ; 8 ; R ; 0 ; 0\n", 6,
                                  "not a blkreplay record"),
    "fio-iolog-negative-offset": ("fio-iolog", VALID["fio-iolog"] + "500 /dev/sdb read -4096 4096\n", 8,
                                  "`read` needs `offset length` as integers"),
}  # fmt: skip


def malformed(fmt: str) -> Iterator[tuple[str, bytes]]:
    """Every way a file of `fmt` can be wrong, from its valid sample (some stay valid: CRLF ends)."""
    text = VALID[fmt]
    data = text.encode()
    last = text.splitlines(keepends=True)[-1].encode()
    rnd = random.Random(fmt)
    yield "empty", b""
    yield "binary", bytes(rnd.randrange(256) for _ in range(4096))
    yield "nul-bytes", b"\0" * 100_000
    yield "one-long-line", b"7" * 200_000
    yield "gzip-of-zeros", gzip.compress(b"\0" * (4 << 20))  # held as one line before: GiBs
    full = gzip.compress(data * 2000)
    yield "gzip-truncated", full[: len(full) // 2]
    yield "last-line-cut", data[: len(data) - len(last) // 2]
    yield "non-utf8", data.replace(b"0", b"\xff", 1)
    yield "crlf", data.replace(b"\n", b"\r\n")
    yield "huge-number", data.replace(last, last.replace(b"0", b"9" * 40, 1))
    yield "minus", data.replace(last, last.replace(b"0", b"-1", 1))
    yield "letters", data.replace(last, last.replace(b"0", b"x", 1))
    yield "repeated", data * 3


CASES = [(fmt, name, blob) for fmt in VALID for name, blob in malformed(fmt)]


def assert_one_line_refusal(err: str, *names: str) -> None:
    assert err.startswith("iofp: ") and err.count("\n") == 1, err
    for name in names:
        assert name in err, err


@pytest.mark.parametrize("mode", ["named", "auto"])
@pytest.mark.parametrize(("fmt", "name", "blob"), CASES, ids=[f"{f}-{n}" for f, n, _ in CASES])
def test_every_malformed_input_is_imported_whole_or_refused_in_one_line(tmp_path, fmt, name, blob, mode):
    src = tmp_path / f"{name}.in"
    src.write_bytes(blob)
    out = tmp_path / "t"
    code, _, err = run_iofp("import", fmt if mode == "named" else "auto", str(src), "-o", str(out))
    assert code in (0, 2), err
    if code == 2:
        assert_one_line_refusal(err, str(src))
        assert not out.exists()  # nothing half-imported left looking like a trace
        return
    assert (out / MANIFEST).exists()
    code, _, err = run_iofp("fingerprint", str(out))
    assert code == 0, err


@pytest.mark.parametrize("case", list(IMPOSSIBLE))
def test_what_cannot_be_true_is_refused_at_its_line(tmp_path, case):
    fmt, text, line, why = IMPOSSIBLE[case]
    src = tmp_path / "in.txt"
    src.write_text(text)
    code, _, err = run_iofp("import", fmt, str(src), "-o", str(tmp_path / "t"))
    assert code == 2
    assert_one_line_refusal(err, f"{src}:{line}: ", why)
    assert not (tmp_path / "t").exists()


# --------------------------------------------------------------------------------------------
# traces: a valid one of two files per table, then one damage at a time


def valid_trace(root: Path) -> Path:
    n = 50
    io = pa.table({"ts_ns": pa.array([i * 1_000_000 for i in range(n)], pa.int64()),
                   "lat_ns": pa.array([100_000] * n, pa.int64()), "device": ["loop9"] * n,
                   "offset": pa.array([i * 4096 for i in range(n)], pa.int64()),
                   "size": pa.array([4096] * n, pa.int32()), "op": ["read", "write"] * (n // 2)})  # fmt: skip
    sync = pa.table({"ts_ns": pa.array([i * 5_000_000 for i in range(10)], pa.int64()),
                     "lat_ns": pa.array([50_000] * 10, pa.int64()), "call": ["fdatasync"] * 10})  # fmt: skip
    with TraceWriter(root, TraceMeta(source="import:corpus")) as w:
        for table, tbl in (("io", io), ("sync", sync)):
            w.write(table, tbl.slice(0, len(tbl) // 2))
            w.write(table, tbl.slice(len(tbl) // 2))
    return root


def _rewrite(path: Path, change: Callable[[pa.Table], pa.Table]) -> None:
    tbl = pq.read_table(path)
    pq.write_table(change(tbl).replace_schema_metadata(tbl.schema.metadata), path)


def _set(name: str, values: Callable[[list], list], type_: pa.DataType | None = None):
    def change(tbl: pa.Table) -> pa.Table:
        i = tbl.schema.get_field_index(name)
        col = values(tbl.column(name).to_pylist())
        return tbl.set_column(i, pa.field(name, type_ or tbl.schema.field(i).type), pa.array(col, type_))

    return change


def _zero_a_page(path: Path) -> None:
    """Zero bytes inside the `offset` column's data page; the footer stays intact."""
    col = next(c for c in (pq.ParquetFile(path).metadata.row_group(0).column(j) for j in range(17))
               if c.path_in_schema == "offset")  # fmt: skip
    data = bytearray(path.read_bytes())
    start = col.data_page_offset + 20
    data[start : start + 60] = bytes(60)
    path.write_bytes(bytes(data))


IO2, SYNC2, IO1 = "io/part-000002.parquet", "sync/part-000002.parquet", "io/part-000001.parquet"

# damage -> (what it does to the trace root, the file the refusal must name)
DAMAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "foreign-parquet-2nd-io": (lambda r: pq.write_table(pa.table({"x": [1]}), r / IO2), IO2),
    "foreign-parquet-2nd-sync": (lambda r: pq.write_table(pa.table({"x": [1]}), r / SYNC2), SYNC2),
    "missing-column-2nd-io": (lambda r: _rewrite(r / IO2, lambda t: t.drop(["size"])), IO2),
    "missing-column-2nd-sync": (lambda r: _rewrite(r / SYNC2, lambda t: t.drop(["call"])), SYNC2),
    "wrong-type": (lambda r: _rewrite(r / IO2, _set("offset", lambda v: [f"{x}" for x in v], pa.utf8())),
                   IO2),
    "negative-offset": (lambda r: _rewrite(r / IO2, _set("offset", lambda v: [-x - 1 for x in v])), IO2),
    "negative-time": (lambda r: _rewrite(r / IO2, _set("ts_ns", lambda v: [-5, *v[1:]])), IO2),
    "negative-latency": (lambda r: _rewrite(r / SYNC2, _set("lat_ns", lambda v: [-400_000, *v[1:]])), SYNC2),
    "null-time": (lambda r: _rewrite(r / IO2, _set("ts_ns", lambda v: [None, *v[1:]])), IO2),
    "unknown-op": (lambda r: _rewrite(r / IO2, _set("op", lambda v: ["frob", *v[1:]], pa.string())), IO2),
    "unknown-call": (lambda r: _rewrite(r / SYNC2, _set("call", lambda v: ["x", *v[1:]], pa.utf8())), SYNC2),
    "damaged-page": (lambda r: _zero_a_page(r / IO1), IO1),
    "truncated-file": (lambda r: (r / IO2).write_bytes((r / IO2).read_bytes()[:300]), IO2),
    "empty-file": (lambda r: (r / SYNC2).write_bytes(b""), SYNC2),
    "manifest-a-list": (lambda r: (r / MANIFEST).write_text("[1, 2]"), MANIFEST),
    "manifest-a-directory": (lambda r: ((r / MANIFEST).unlink(), (r / MANIFEST).mkdir()), MANIFEST),
    "manifest-string-numbers": (
        lambda r: (r / MANIFEST).write_text(
            json.dumps({**json.loads((r / MANIFEST).read_text()), "duration_ns": "123"})), MANIFEST),
    "manifest-string-version": (
        lambda r: (r / MANIFEST).write_text(
            json.dumps({**json.loads((r / MANIFEST).read_text()), "schema_version": "1"})), MANIFEST),
    "manifest-not-json": (lambda r: (r / MANIFEST).write_bytes(b"{\xff"), MANIFEST),
    "manifest-newer": (
        lambda r: (r / MANIFEST).write_text(
            json.dumps({**json.loads((r / MANIFEST).read_text()), "schema_version": 99})), MANIFEST),
}  # fmt: skip


def readers(trace: Path, tmp_path: Path) -> dict[str, list[str]]:
    """Every command that reads a trace, writing (if at all) under tmp_path/out."""
    cmds = {
        "fingerprint": ["fingerprint", str(trace), "--json", str(tmp_path / "out" / "fp.json")],
        "report": ["report", str(trace), "-o", str(tmp_path / "out" / "r.html")],
        "iolog": [
            "iolog",
            str(trace),
            "-o",
            str(tmp_path / "out" / "x.iolog"),
            "--target",
            "/dev/shm/iofp-x",
        ],
    }
    if is_root() and shutil.which("fio"):
        cmds["replay"] = ["replay", "--repeat", "1", str(trace), "--target", str(tmp_path / "new.dat"),
                          "--output", str(tmp_path / "out" / "replay"), "--no-fidelity"]  # fmt: skip
    return cmds


@pytest.mark.parametrize("damage", list(DAMAGES))
def test_a_damaged_trace_is_refused_in_one_line_naming_the_file_by_every_reader(tmp_path, damage):
    root = valid_trace(tmp_path / "t")
    harm, named = DAMAGES[damage]
    harm(root)
    for command, args in readers(root, tmp_path).items():
        code, _, err = run_iofp(*args)
        assert code == 2, (command, err)
        assert_one_line_refusal(err, str(root / named))
        assert not (tmp_path / "out").exists() and not (tmp_path / "new.dat").exists(), command


def test_a_non_utf8_trace_path_is_refused_by_every_command_that_takes_one(tmp_path):
    root = valid_trace(tmp_path / "t")
    odd = tmp_path / os.fsdecode(b"tr\xffce")
    shutil.move(root, odd)
    for command, args in readers(odd, tmp_path).items():
        code, _, err = run_iofp(*args)
        assert (code, err) == (2, f"iofp: {tmp_path}/tr\\xffce: a trace path must be UTF-8 text; rename it, "
                                  "or link it to a UTF-8 name\n"), command  # fmt: skip
    for args in (["import", "disksim", str(tmp_path / "in"), "-o", str(odd) + "2"],
                 ["capture", "-o", str(odd) + "2", "--duration", "1s"]):  # fmt: skip
        (tmp_path / "in").write_text(VALID["disksim"])
        code, _, err = run_iofp(*args)
        assert code == 2 and "a trace path must be UTF-8 text" in err, err


def test_a_trace_without_its_manifest_is_read_and_said_incomplete(tmp_path):
    root = valid_trace(tmp_path / "t")
    (root / MANIFEST).unlink()  # as after kill -9 of a capture or an import
    for command, args in readers(root, tmp_path).items():
        if command == "replay":
            continue  # reads the same way; replaying it runs fio, which this file does not test
        code, _, err = run_iofp(*args)
        assert code == 0, (command, err)
        assert err.startswith(f"iofp: warning: {root} has no {MANIFEST}: the capture or import that wrote it")
    doc = json.loads((tmp_path / "out" / "fp.json").read_text())
    assert "may be incomplete" in doc["provenance"]["extra"]["incomplete"]
    assert (
        '<div class="verdict" id="incomplete"><b>Warning:</b> ' in (tmp_path / "out" / "r.html").read_text()
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["fingerprint", "T", "--window", "9999999999999999h"],
         "--window '9999999999999999h' is too long; at most 100000h (11 years)"),
        (["fingerprint", "T", "--between", "0", "1e308"],
         "--between 0 1e+308: need 0 <= T1 < T2 <= 360,000,000 (seconds on the trace's clock)"),
        (["report", "T", "-o", "OUT/r.html", "--window", "1e308"],
         "--window '1e308' is not a duration; use e.g. 30s, 100ms, 250us, 5m or 1h"),
        (["iolog", "T", "-o", "OUT/x.iolog", "--time-scale", "1e-300"],
         "--time-scale 1e-300: must be from 0.001 to 1000 (2 = twice as fast)"),
        (["iolog", "T", "-o", "OUT/x.iolog", "--time-scale", "inf"],
         "--time-scale inf: must be from 0.001 to 1000 (2 = twice as fast)"),
        (["capture", "--buffer", "1000GiB", "-o", "OUT/t"],
         "--buffer 1000GiB: a capture holds about 4 such buffers"),
        (["capture", "--duration", "9999999999999999h", "-o", "OUT/t"],
         "--duration '9999999999999999h' is too long; at most 100000h (11 years)"),
    ],
)  # fmt: skip
def test_extreme_option_values_are_refused_in_one_line(tmp_path, args, message):
    root = valid_trace(tmp_path / "t")
    args = [a.replace("OUT", str(tmp_path / "out")) if a != "T" else str(root) for a in args]
    code, _, err = run_iofp(*args)
    assert code == 2 and err.startswith(f"iofp: {message}") and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("doc", ["[1, 2]", '{"fingerprint_version": "1"}', '{"fingerprint_version": 1', ""])
def test_a_damaged_fingerprint_or_result_is_one_line(tmp_path, doc):
    bad = tmp_path / "fp.json"
    bad.write_text(doc)
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "results.json").write_text(doc)
    for args in (["diff", str(bad), str(bad)], ["catalog", "add", str(bad), "--service", "s", "--catalog",
                 str(tmp_path / "c.duckdb")], ["compare", str(tmp_path / "r")]):  # fmt: skip
        code, _, err = run_iofp(*args)
        assert code == 2, (args, err)
        assert err.startswith("iofp: ") and err.count("\n") == 1, err


@pytest.mark.parametrize("flushes", [1, 10, 500])
def test_a_valid_trace_of_only_flushes_is_fingerprinted(tmp_path, flushes):
    root = tmp_path / "t"
    n = flushes
    with TraceWriter(root, TraceMeta(source="import:corpus")) as w:
        w.write("io", pa.table({"ts_ns": pa.array([i * 1_000_000 for i in range(n)], pa.int64()),
                                "lat_ns": pa.array([20_000] * n, pa.int64()), "device": ["d"] * n,
                                "offset": pa.array([0] * n, pa.int64()),
                                "size": pa.array([0] * n, pa.int32()), "op": ["flush"] * n}))  # fmt: skip
    code, _, err = run_iofp("fingerprint", str(root), "--json", str(tmp_path / "fp.json"))
    assert code == 0, err
    doc = json.loads((tmp_path / "fp.json").read_text())
    assert doc["whole"]["mix"]["flushes"] == n
    code, _, err = run_iofp("report", str(root), "-o", str(tmp_path / "r.html"))
    assert code == 0, err
