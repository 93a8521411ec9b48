"""Importers: each format on small inline fixtures, malformed input, and the shared real traces."""

from __future__ import annotations

import gzip
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import REPO
from helpers import run_iofp

from fingerprint.api import fingerprint_trace
from fingerprint.importing import detect_format, import_trace
from iofp.contract import open_trace


def rows(trace: Path, table: str = "io") -> list[dict]:
    t = open_trace(trace)
    out: list[dict] = []
    for p in t.files[table]:
        out.extend(pq.read_table(p).to_pylist())
    return sorted(out, key=lambda r: (r["ts_ns"], str(r.get("device"))))


def write(tmp_path: Path, name: str, text: str, gz: bool = False) -> Path:
    p = tmp_path / name
    if gz:
        with gzip.open(p, "wt") as f:
            f.write(text)
    else:
        p.write_text(text)
    return p


BLKPARSE = """\
  8,16   1        1     0.000000000  4242  Q  WS 1000 + 8 [mysqld]
  8,16   1        2     0.000001000  4242  G  WS 1000 + 8 [mysqld]
  8,16   1        3     0.000002500   120  D  WS 1000 + 8 [kworker/1:1H]
  8,16   1        4     0.000003000  4243  Q   R 5000 + 16 [backup]
  8,16   1        5     0.000004000  4243  D   R 5000 + 16 [backup]
  8,16   0        6     0.000102500     0  C  WS 1000 + 8 [0]
  8,16   1        7     0.000200000   900  Q FWFS 2000 + 8 [jbd2/sda1-8]
  8,16   1        8     0.000201000   900  D FWFS 2000 + 8 [jbd2/sda1-8]
  8,16   0        9     0.000304000     0  C   R 5000 + 16 [0]
  8,16   0       10     0.000701000     0  C FWFS 2000 + 8 [0]
  8,16   1       11     0.000800000   900  Q  FN [jbd2/sda1-8]
  8,16   1       12     0.000801000   900  D  FN [jbd2/sda1-8]
  8,16   0       13     0.000901000     0  C  FN [0]
  8,16   1       14     0.001000000   777  D  RA 9000 + 8 [cat]
CPU0 (8,16):
 Reads Queued:           1,        8KiB  Writes Queued:           2,        8KiB
Total (8,16):
"""


def test_blkparse_matches_issue_to_completion_and_reads_rwbs(tmp_path):
    src = write(tmp_path, "trace.txt", BLKPARSE)
    assert detect_format(src) == "blkparse"
    r = import_trace("blkparse", [src], tmp_path / "t")
    assert r.rows == 5 and r.counters == {"never_completed": 1}
    got = rows(tmp_path / "t")
    ws, rd, fua, flush, ra = got
    assert (ws["ts_ns"], ws["queue_ns"], ws["lat_ns"]) == (2500, 0, 100_000)
    assert (ws["device"], ws["offset"], ws["size"], ws["op"]) == ("8,16", 512_000, 4096, "write")
    assert (ws["sync"], ws["fua"], ws["preflush"], ws["rwbs"]) == (True, False, False, "WS")
    assert (ws["pid"], ws["comm"], ws["inflight"], ws["error"]) == (4242, "mysqld", 1, 0)
    assert (rd["op"], rd["size"], rd["lat_ns"], rd["inflight"], rd["comm"]) == (
        "read",
        8192,
        300_000,
        2,
        "backup",
    )
    assert (fua["preflush"], fua["fua"], fua["sync"], fua["lat_ns"]) == (True, True, True, 500_000)
    assert (flush["op"], flush["size"], flush["lat_ns"], flush["preflush"]) == ("flush", 0, 100_000, True)
    assert (ra["op"], ra["readahead"], ra["lat_ns"], ra["queue_ns"]) == ("read", True, None, None)
    meta = open_trace(tmp_path / "t").meta
    assert meta.source == "import:blkparse" and meta.loss == {"never_completed": 1}
    assert meta.extra["source_files"] == [str(src)] and list(meta.devices) == ["8,16"]


def test_blkreplay_skips_header_counts_duplicates_and_reads_gzip(tmp_path):
    text = (
        "Copyright someone\n\nfree text ; with ; semicolons\n####\n"
        "start ; sector; length ; op ;  replay_delay=0 ; replay_duration=0\n"
        "      0.000000000 ;     100 ;   8 ; W ; 0.0 ; 0.0\n"
        "      0.500000001 ;     108 ;   8 ; RA ; 0.0 ; 0.0\n"
        "      0.500000001 ;     108 ;   8 ; RA ; 0.0 ; 0.0\n"
        "      2.25 ;     7 ;   1 ; R ; 0.0 ; 0.0\n"
    )
    src = write(tmp_path, "db.load.gz", text, gz=True)
    assert detect_format(src) == "blkreplay"
    import_trace("auto", [src], tmp_path / "t")
    got = rows(tmp_path / "t")
    assert [(r["ts_ns"], r["offset"], r["size"], r["op"], r["readahead"]) for r in got] == [
        (0, 51200, 4096, "write", False),
        (500_000_001, 55296, 4096, "read", True),
        (500_000_001, 55296, 4096, "read", True),
        (2_250_000_000, 3584, 512, "read", False),
    ]
    assert {r["device"] for r in got} == {"db"} and got[0]["lat_ns"] is None and got[0]["sync"] is None


def test_msr_filetime_wall_clock_and_latency(tmp_path):
    text = "128166372003061629,hm,0,Read,3045015552,8192,1137\n128166372003071629,hm,1,Write,4096,4096,25\n"
    src = write(tmp_path, "hm_0.csv", text)
    assert detect_format(src) == "msr"
    import_trace("msr", [src], tmp_path / "t")
    a, b = rows(tmp_path / "t")
    assert (a["ts_ns"], a["lat_ns"], a["device"], a["offset"], a["size"], a["op"]) == (
        0, 113_700, "hm_0", 3045015552, 8192, "read",
    )  # fmt: skip
    assert (b["ts_ns"], b["lat_ns"], b["device"], b["op"]) == (1_000_000, 2_500, "hm_1", "write")
    meta = open_trace(tmp_path / "t").meta
    assert meta.capture_start_ns == (128166372003061629 - 116444736000000000) * 100  # 2007-02-22


def test_disksim_time_unit_and_missing_final_newline(tmp_path):
    src = write(tmp_path, "x.trace", "1000 4 100 16 0\n2500 3 200 8 1")
    assert detect_format(src) == "disksim"
    import_trace("disksim", [src], tmp_path / "ns")
    import_trace("disksim", [src], tmp_path / "ms", time_unit="ms")
    assert [(r["ts_ns"], r["device"], r["offset"], r["size"], r["op"]) for r in rows(tmp_path / "ns")] == [
        (1000, "4", 51200, 8192, "write"),
        (2500, "3", 102400, 4096, "read"),
    ]
    assert [r["ts_ns"] for r in rows(tmp_path / "ms")] == [1_000_000_000, 2_500_000_000]


def test_fio_iolog_v3_timestamps_and_v2_waits(tmp_path):
    v3 = write(
        tmp_path,
        "v3.log",
        "fio version 3 iolog\n1 /dev/sdb add\n2 /dev/sdb open\n10 /dev/sdb write 4096 4096\n"
        "15 /dev/sdb sync 0 0\n20 /dev/sdb read 0 8192\n30 /dev/sdb trim 8192 4096\n40 /dev/sdb close\n",
    )
    assert detect_format(v3) == "fio-iolog"
    r = import_trace("fio-iolog", [v3], tmp_path / "t3")
    assert (r.rows, r.sync_rows) == (3, 1)
    assert [(x["ts_ns"], x["op"], x["offset"], x["size"]) for x in rows(tmp_path / "t3")] == [
        (10_000, "write", 4096, 4096),
        (20_000, "read", 0, 8192),
        (30_000, "discard", 8192, 4096),
    ]
    assert [(x["ts_ns"], x["call"]) for x in rows(tmp_path / "t3", "sync")] == [(15_000, "fsync")]
    v2 = write(
        tmp_path,
        "v2.log",
        "fio version 2 iolog\n/dev/sdb add\n/dev/sdb open\n/dev/sdb write 0 4096\n"
        "/dev/sdb wait 500 0\n/dev/sdb read 4096 4096\n/dev/sdb close\n",
    )
    import_trace("auto", [v2], tmp_path / "t2")
    assert [x["ts_ns"] for x in rows(tmp_path / "t2")] == [0, 500_000]
    assert "v2" in open_trace(tmp_path / "t2").meta.extra["timing"][str(v2)]


def test_alibaba_unix_microseconds(tmp_path):
    src = write(
        tmp_path, "ali.csv", "7,W,126703644672,4096,1577808144000000\n7,R,4096,8192,1577808144000250\n"
    )
    assert detect_format(src) == "alibaba"
    import_trace("alibaba", [src], tmp_path / "t")
    assert [(r["ts_ns"], r["device"], r["op"], r["size"]) for r in rows(tmp_path / "t")] == [
        (0, "7", "write", 4096),
        (250_000, "7", "read", 8192),
    ]
    assert open_trace(tmp_path / "t").meta.capture_start_ns == 1577808144000000 * 1000


BAD_BLKPARSE = "\n".join([*BLKPARSE.splitlines()[:8], "  8,16   1  9  0.0002  900  D  XZ 2000 + 8 [jbd2]"])


@pytest.mark.parametrize(
    ("fmt", "text", "line", "why"),
    [
        ("msr", "128166372003061629,hm,0,Read,3045015552,8192,1137\n128166372003061630,hm,0,Read\n", 2,
         "expected 7 comma-separated fields, got 4"),
        ("disksim", "1000 4 100 16 0\n1001 4 100 16 7\n", 2, "type must be 1 (read) or 0 (write), got '7'"),
        ("blkreplay", "hdr\n 0.1 ; 8 ; 8 ; W ; 0 ; 0\n 0.2 ; 8 ; x ; W\n", 3,
         "not a blkreplay record `start ; sector ; length ; op ; ...`"),
        ("blkparse", BAD_BLKPARSE, 9, "bad RWBS flags 'XZ'"),
        ("alibaba", "7,W,1,4096,1577808144000000\n7,Q,1,4096,1577808144000001\n", 2,
         "opcode must be R or W, got 'Q'"),
        ("fio-iolog", "fio version 3 iolog\n10 /dev/sdb write 0 4096\n20 /dev/sdb write zero 4096\n", 3,
         "`write` needs `offset length` as integers"),
        # Prose is header only before the records; a damaged record is never header.
        ("blkreplay", "hdr\n 0.1 ; -8 ; 8 ; W ; 0 ; 0\n", 2,
         "not a blkreplay record `start ; sector ; length ; op ; ...`"),
        # Values beyond the contract's columns, negative or not numbers at all.
        ("blkreplay", " 0.1 ; 8 ; 4194304 ; W ; 0 ; 0\n", 1,
         "length 4194304 is too large (at most 4,194,303 sectors)"),
        ("alibaba", "7,W,1,3000000000,1577808144000000\n", 1,
         "length 3000000000 is too large (at most 2,147,483,647 bytes)"),
        ("alibaba", "7,W,-4096,4096,1577808144000000\n", 1, "offset -4096 is negative"),
        ("disksim", "1000 4 100 16 0\n1e30 4 100 16 0\n", 2,
         "arrival 1e30 is out of range (0 to 9,223,372,036,854,775,807 ns)"),
        ("disksim", "1000 4 100 16 0\ninf 4 100 16 0\n", 2,
         "fields must be numbers `arrival device lba size type`"),
        ("disksim", "1000 4 -100 16 0\n", 1, "lba -100 is negative"),
        ("disksim", "1000 4 100 -16 0\n", 1, "size -16 is negative"),
        ("msr", "128166372003061629,hm,0,Read,3045015552,-8192,1137\n", 1, "Size -8192 is negative"),
        ("msr", "128166372003061629,hm,0,Read,3045015552,8192,-1\n", 1, "ResponseTime -1 is negative"),
        ("fio-iolog", "fio version 3 iolog\n10 /dev/sdb write 0 3000000000\n", 2,
         "length 3000000000 is too large (at most 2,147,483,647 bytes)"),
        ("blkparse", "  8,16 1 3 0.0000025 120 D WS 99999999999999999999 + 8 [k]\n", 1,
         "sector 99999999999999999999 is too large (at most 18,014,398,509,481,983 sectors)"),
    ],
)  # fmt: skip
def test_malformed_line_is_one_line_error_with_file_and_line(tmp_path, fmt, text, line, why):
    src = write(tmp_path, "bad.txt", text)
    code, _out, err = run_iofp("import", fmt, str(src), "-o", str(tmp_path / "t"))
    assert code == 2
    assert err == f"iofp: {src}:{line}: {why}; fix or remove that line\n"
    assert not (tmp_path / "t").exists()  # nothing half-imported is left behind


@pytest.mark.parametrize(
    ("fmt", "text", "record"),
    [
        ("blkreplay", "Dear reader,\nthis is prose.\n", "`start ; sector ; length ; op ; ...`"),
        ("fio-iolog", "fio version 2 iolog\n/dev/sdb add\n", "`[usec] file action [offset length]`"),
        ("blkparse", "CPU0 (8,16):\n Reads Queued: 0\n", "`maj,min cpu seq time pid action rwbs ...`"),
    ],
)
def test_a_file_with_no_records_is_an_error_not_an_import_of_nothing(tmp_path, fmt, text, record):
    src = write(tmp_path, "prose.txt", text)
    code, _out, err = run_iofp("import", fmt, str(src), "-o", str(tmp_path / "t"))
    want = f"iofp: {src}: no {fmt} records in its 2 lines (a record is {record}); is it a {fmt} trace?\n"
    assert (code, err) == (2, want)
    assert not (tmp_path / "t").exists()


def test_cli_import_refuses_existing_output_and_names_next_step(tmp_path):
    src = write(tmp_path, "x.trace", "1000 4 100 16 0\n")
    code, out, _ = run_iofp("import", "auto", str(src), "-o", str(tmp_path / "t"))
    assert code == 0 and out.endswith(f"Wrote {tmp_path / 't'}. Next: iofp fingerprint {tmp_path / 't'}\n")
    code, _, err = run_iofp("import", "auto", str(src), "-o", str(tmp_path / "t"))
    assert (
        code == 2
        and err == f"iofp: {tmp_path / 't'} already exists and is not empty; pass --force to overwrite it\n"
    )
    code, _, err = run_iofp("import", "auto", str(tmp_path / "nope"), "-o", str(tmp_path / "u"))
    assert code == 2 and err == f"iofp: {tmp_path / 'nope'}: no such file\n"
    code, _, err = run_iofp("import", "auto", str(tmp_path), "-o", str(tmp_path / "u"))
    assert code == 2 and err == f"iofp: {tmp_path} is a directory; name the trace file(s) in it\n"
    # the format left out: the file took its place, and the line says so (typer said only "Missing
    # argument 'PATH...'")
    code, _, err = run_iofp("import", str(src), "-o", str(tmp_path / "u"))
    fix = f"name the format first, e.g. iofp import auto {src} -o TRACE"
    assert (code, err) == (2, f"iofp: {src} is an input file: {fix}\n")
    code, _, err = run_iofp("import", "auto", "-o", str(tmp_path / "u"))
    assert (code, err) == (2, "iofp: no input files; e.g. iofp import blkparse trace.txt -o trace\n")
    assert not (tmp_path / "u").exists()


def test_a_fingerprint_handed_over_as_a_trace_is_named_for_what_it_is(tmp_path):
    """The two files a user keeps beside a trace, given where a trace goes: one line naming the fix."""
    fp = REPO / "samples/fingerprints/market-open.fp.json"
    code, _, err = run_iofp("import", "auto", str(fp), "-o", str(tmp_path / "t"))
    assert code == 2 and err == f"iofp: {fp} is a fingerprint, not a trace: there is nothing to import\n"
    code, _, err = run_iofp("fingerprint", str(fp))
    assert code == 2
    assert (
        err == f"iofp: {fp} is a fingerprint, not a trace; iofp diff and iofp catalog add take it as it is\n"
    )
    raw = write(tmp_path, "x.load", "0.1 ; 8 ; 8 ; R\n")
    code, _, err = run_iofp("fingerprint", str(raw))
    assert code == 2
    fix = f"if it is a raw trace, import it: iofp import auto {raw} -o TRACE"
    assert err == f"iofp: {raw} is not a trace (Parquet); {fix}\n"
    manifest = REPO / "samples/traces/market-open/trace.json"
    code, _, err = run_iofp("fingerprint", str(manifest))
    fix = f"pass its directory, {manifest.parent}"
    assert (code, err) == (2, f"iofp: {manifest} is a trace's manifest; {fix}\n")
    code, _, err = run_iofp("fingerprint", str(write(tmp_path, "empty", "")))
    assert (code, err) == (2, f"iofp: {tmp_path / 'empty'} is empty; not a trace\n")
    assert not (tmp_path / "t").exists()


def test_unknown_format_is_refused(tmp_path):
    src = write(tmp_path, "x.txt", "hello world\n")
    code, _, err = run_iofp("import", "auto", str(src), "-o", str(tmp_path / "t"))
    assert code == 2 and err.startswith(f"iofp: {src}: cannot tell its format; name it")


# The figures in ../shared/traces/README.md, computed independently of iofp.
README_FIGURES = {
    "linux-mysql.load.gz": (80794, 3599.890, 0.08895, 0.07000, 14659.3, 0.1036, 21.79, 142563),
    "windows-mssql.load.gz": (42976, 3062.338, 0.05882, 0.05025, 24609.0, 0.8441, 221.80, 154742),
    "tpcc-small.trace": (6999, 0.136489, 0.62595, 0.60810, 8532.5, 0.0007, 1.0, 20422),
}


@pytest.mark.parametrize("name", list(README_FIGURES))
def test_shared_traces_reproduce_the_readme_figures(shared_traces, tmp_path, name):
    n, duration, rs_count, rs_bytes, mean_size, seq, p2m, footprint = README_FIGURES[name]
    r = import_trace("auto", [shared_traces / name], tmp_path / "t")
    assert r.rows == n
    fp = fingerprint_trace(tmp_path / "t")
    w = fp.whole
    assert w.ios == n
    assert w.footprint.blocks_4k == footprint
    close = {
        "duration": (fp.provenance.duration_s, duration),
        "read share by count": (w.mix.read_share, rs_count),
        "read share by bytes": (w.mix.read_share_bytes, rs_bytes),
        "mean size": (w.size.mean_bytes, mean_size),
        "peak-to-mean 1 s": (w.burstiness["1s"].peak_to_mean, p2m),
    }
    for what, (got, want) in close.items():
        assert got == pytest.approx(want, rel=1e-3), what
    # The README rounds the sequential share to 4 places: 0.0007 is 5/6999 = 0.000714.
    assert w.sequential.share_any_device == pytest.approx(seq, abs=0.5e-4)


# Memory is bounded by the input's shape, never its length (README, "Importing"). Peak RSS of the
# import process: ~105 MiB of it is the interpreter, pyarrow and the CLI, measured
# 103 MiB and 263 MiB on these two inputs; the bounds leave ~100 MiB of margin. Before the caps
# (commit ac3713e) the same inputs peaked at 2,156 MiB and 465 MiB (the latter growing ~1.1 KB per
# line without end).
LONG_LINE_MIB, PENDING_MIB = 200, 400


def peak_rss_mib(*args: str) -> tuple[int, int, str]:
    """(exit status, peak RSS in MiB, stderr) of `iofp ARGS` run as a process of its own: its VmHWM,
    read until it exits (wait4's ru_maxrss would count the pytest process it was forked from)."""
    proc = subprocess.Popen([sys.executable, "-m", "cli.app", *args], cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    status, peak = Path(f"/proc/{proc.pid}/status"), 0
    while proc.poll() is None:
        try:
            hwm = next(x for x in status.read_text().splitlines() if x.startswith("VmHWM:"))
            peak = max(peak, int(hwm.split()[1]) >> 10)
        except (OSError, StopIteration):  # exiting: VmHWM only grows, the last reading stands
            pass
        time.sleep(0.005)
    return proc.returncode, peak, proc.stderr.read()


def test_a_gigabyte_without_a_newline_is_refused_at_its_first_line_in_bounded_memory(tmp_path):
    src = tmp_path / "zeros.gz"
    zeros = bytes(1 << 24)
    with gzip.open(src, "wb", compresslevel=1) as f:
        for _ in range(64):  # 1 GiB of NUL bytes, 4.5 MB on disk
            f.write(zeros)
    code, peak, err = peak_rss_mib("import", "blkreplay", str(src), "-o", str(tmp_path / "t"))
    assert (code, err) == (2, f"iofp: {src}:1: a line longer than 65,536 characters; not a trace "
                              "(every format has one short record per line)\n")  # fmt: skip
    assert peak < LONG_LINE_MIB, peak


def test_blkparse_issues_without_completions_are_refused_at_the_cap_in_bounded_memory(tmp_path):
    src = tmp_path / "issues.txt"
    with open(src, "w") as f:
        for i in range(300_000):
            t = i * 10_000
            f.write(f"  8,0    0 {i + 1:8d} {t // 10**9}.{t % 10**9:09d}  1234  D  WS {i * 8} + 8 [mysqld]\n")
    code, peak, err = peak_rss_mib("import", "blkparse", str(src), "-o", str(tmp_path / "t"))
    assert code == 2 and err.startswith(
        f"iofp: {src}:262145: 262,144 requests issued and not completed, the most an import holds; "
    ), err
    assert peak < PENDING_MIB, peak
    assert not (tmp_path / "t").exists()
