"""Hostile artifacts, field by field: every string field of a fingerprint, of a trace's metadata and
names, and of an imported fio iolog, set in turn to payloads (tests/hostile.py) and given to every
command that reads it and writes a job file, an iolog, a report or a hint. The fields are generated
from the artifacts themselves (a sample fingerprint, a trace whose metadata has every field filled),
so a field added later is attacked too.

What every case must show: the command works or refuses in one line (exit 2); fio's own parser
finds exactly the jobs and options of the clean artifact in any job file written; an iolog names the
file it should and no other, line for line; terminal text is inert and no payload starts a line;
every `Next:` hint is one shell command; nothing is created outside the command's output; the canary
a payload names never exists.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import REPO
from helpers import run_iofp
from hostile import (
    NAME_PAYLOADS,
    PAYLOADS,
    assert_exit,
    assert_hints_quoted,
    assert_inert,
    assert_job_file_holds,
    assert_nothing_created,
    every_string,
    field_id,
    fio_jobs,
    payload,
    string_fields,
    tree,
    typed_fields,
    with_field,
)

from iofp.contract import TraceMeta, TraceWriter
from iofp.fingerprint_doc import Fingerprint

needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio (apt install fio)")
pytestmark = pytest.mark.slow  # ~190 generated cases, ~2.5 min in all (each well under SLOW_S)

SAMPLE_FP = REPO / "samples" / "fingerprints" / "market-open.fp.json"  # it has a spike
CLEAN_FP = json.loads(SAMPLE_FP.read_text())
FP_FIELDS = list(typed_fields(CLEAN_FP, Fingerprint))


def check_outputs(where: str, *results: tuple[int, str, str]) -> None:
    for code, out, err in results:
        assert_exit(code, err, where)
        assert_inert(out, f"{where} stdout")
        assert_inert(err, f"{where} stderr")
        assert_hints_quoted(out + err, where)


@pytest.fixture(scope="module")
def clean_jobs(tmp_path_factory) -> list[list[str]]:
    """How fio parses the job file of the clean sample fingerprint."""
    if shutil.which("fio") is None:
        pytest.skip("needs fio (apt install fio)")
    out = tmp_path_factory.mktemp("clean") / "job.fio"
    code, _, err = run_iofp("fio-job", str(SAMPLE_FP), "-o", str(out))
    assert code == 0, err
    return fio_jobs(out)


def fingerprint_readers(fp: Path, base: Path, out: Path) -> dict[str, list[list[str]]]:
    """Every command that reads a fingerprint, writing only under `out`."""
    cat = str(out / "c.duckdb")
    return {
        "fio-job": [["fio-job", str(fp), "-o", str(out / "job.fio")]],
        "diff": [["diff", str(base), str(fp)]],
        "catalog": [
            ["catalog", "add", str(base), "--service", "svc", "--catalog", cat],
            ["catalog", "add", str(fp), "--service", "svc", "--catalog", cat],
            ["catalog", "add", str(fp), "--catalog", cat],  # the service from the document's label
            ["catalog", "list", "--catalog", cat],
            ["catalog", "trend", "--service", "svc", "--catalog", cat],
        ],
    }


def attack_fingerprint(doc: dict, where: str, tmp_path: Path, clean_jobs: list[list[str]]) -> None:
    canary = tmp_path / "canary"
    fp = tmp_path / "in" / "fp.json"
    fp.parent.mkdir()
    fp.write_text(json.dumps(doc).replace("@CANARY@", str(canary)))
    out = tmp_path / "out"
    before = tree(tmp_path)
    for command, runs in fingerprint_readers(fp, SAMPLE_FP, out).items():
        results = [run_iofp(*args) for args in runs]
        check_outputs(f"{where}: {command}", *results)
        if command == "fio-job" and results[0][0] == 0:
            assert_job_file_holds(out / "job.fio", clean_jobs, f"{where}: fio-job")
    assert_nothing_created(before, tmp_path, [out], where)
    assert not canary.exists(), where


@pytest.mark.slow  # every field in turn (80 s); test-fast: every payload in every field at once
@needs_fio
@pytest.mark.parametrize("path", FP_FIELDS, ids=[field_id(p) for p in FP_FIELDS])
def test_every_fingerprint_field_holds_the_combined_payload(path, tmp_path, clean_jobs):
    doc = with_field(CLEAN_FP, path, PAYLOADS["combined"])
    attack_fingerprint(doc, f"fingerprint {field_id(path)}", tmp_path, clean_jobs)


@needs_fio
@pytest.mark.parametrize("name", list(PAYLOADS))
def test_every_payload_in_every_fingerprint_field_at_once(name, tmp_path, clean_jobs):
    doc = every_string(CLEAN_FP, PAYLOADS[name], keep=(("*", "name"),))  # a scope is what its key says
    attack_fingerprint(doc, f"fingerprint, every field {name}", tmp_path, clean_jobs)


# --------------------------------------------------------------------------------------------
# traces: metadata, device and process names, the directory's name, the output's path

FULL_META = {
    "source": "capture", "host": "db-7", "kernel": "6.1.0", "tool_version": "0.1.0",
    "labels": {"service": "orders", "device": "nvme-a"},
    "devices": {"loop9": {"model": "QEMU HARDDISK", "vendor": "QEMU", "serial": "s1", "scheduler": "none",
                          "backing_file": "/dev/shm/x.img", "dev": "7:9"}},
    "filters": {"devices": ["loop9"], "comm": "mysqld"},
    "extra": {"end": "duration", "probes": ["block_rq_issue"]},
}  # fmt: skip
META_FIELDS = [p for p in string_fields(FULL_META) if not isinstance(p[0], tuple)]  # not the field names


def small_rows(device: str = "loop9", comm: str = "mysqld") -> dict:
    n = 40
    return {
        "ts_ns": pa.array([i * 250_000 for i in range(n)], pa.int64()),
        "lat_ns": pa.array([50_000] * n, pa.int64()),
        "device": [device] * n,
        "offset": pa.array([(i * 48 * 1024) % (2 << 20) for i in range(n)], pa.int64()),
        "size": pa.array([4096] * n, pa.int32()),
        "op": ["read", "write"] * (n // 2),
        "pid": pa.array([7] * n, pa.int32()),
        "comm": [comm] * n,
    }


def hostile_trace(root: Path, meta: dict, **rows: str) -> Path:
    with TraceWriter(root, TraceMeta(**meta)) as w:
        w.write("io", pa.table(small_rows(**rows)))
    return root


def iolog_lines(path: Path) -> list[list[str]]:
    return [ln.split(" ") for ln in path.read_text().splitlines()[1:]]


def assert_iolog_names_only(path: Path, target: str | None, where: str) -> None:
    """Every line of a v2/v3 iolog is `[usec] FILE ACTION [offset length]`, FILE the one target (or,
    `target` None, the placeholder iofp writes without --target), each field one word."""
    head = path.read_text().splitlines()[0]
    assert head in ("fio version 3 iolog", "fio version 2 iolog"), (where, head)
    files = set()
    for words in iolog_lines(path):
        if head.endswith("3 iolog"):
            assert words[0].isdecimal(), (where, words)
            words = words[1:]
        assert words[1] in ("add", "open", "close", "read", "write", "sync", "datasync", "trim", "wait"), (
            where,
            words,
        )
        assert len(words) in (2, 3, 4), (where, words)
        files.add(words[0])
    assert len(files) == 1, (where, files)
    if target is not None:
        assert files == {target}, (where, files)
    else:  # the trace's device is where it was recorded: a placeholder fio cannot open, never /dev/NAME
        (name,) = files
        assert name.startswith("/iofp-no-target/") and name.count("/") == 2, (where, name)


def trace_readers(trace: Path, out: Path, target: Path) -> dict[str, list[str]]:
    return {
        "fingerprint": ["fingerprint", str(trace), "--json", str(out / "fp.json")],
        "report": ["report", str(trace), "-o", str(out / "r.html")],
        "iolog": ["iolog", str(trace), "-o", str(out / "x.iolog"), "--target", str(target)],
        "iolog-no-target": ["iolog", str(trace), "-o", str(out / "y.iolog")],
    }


def attack_trace(trace: Path, where: str, tmp_path: Path, out: Path | None = None) -> None:
    canary = tmp_path / "canary"
    out = out or tmp_path / "out"
    target = Path("/dev/shm") / "iofp-hostile-never-written.dat"
    before = tree(tmp_path)
    for command, args in trace_readers(trace, out, target).items():
        res = run_iofp(*args)
        check_outputs(f"{where}: {command}", res)
        if command.startswith("iolog") and res[0] == 0:
            log = Path(args[args.index("-o") + 1])
            assert_iolog_names_only(log, str(target) if command == "iolog" else None, f"{where}: {command}")
    if (out / "fp.json").exists() and shutil.which("fio"):
        res = run_iofp("fio-job", str(out / "fp.json"), "-o", str(out / "job.fio"))
        check_outputs(f"{where}: fio-job", res)
        if res[0] == 0:
            assert_job_file_holds(out / "job.fio", fio_jobs(out / "job.fio"), f"{where}: fio-job")
    assert_nothing_created(before, tmp_path, [out], where)
    assert not canary.exists() and not target.exists(), where


@pytest.mark.slow  # every field in turn (30 s)
@pytest.mark.parametrize("path", META_FIELDS, ids=[field_id(p) for p in META_FIELDS])
def test_every_trace_metadata_field_holds_the_combined_payload(path, tmp_path):
    meta = with_field(FULL_META, path, payload("combined", tmp_path / "canary"))
    trace = hostile_trace(tmp_path / "t", meta)
    attack_trace(trace, f"trace meta {field_id(path)}", tmp_path)


@pytest.mark.slow  # every payload in turn (20 s)
@pytest.mark.parametrize("column", ["device", "comm"])
@pytest.mark.parametrize("name", list(PAYLOADS))
def test_every_payload_as_a_device_or_process_name(column, name, tmp_path):
    trace = hostile_trace(tmp_path / "t", FULL_META, **{column: payload(name, tmp_path / "canary")})
    attack_trace(trace, f"trace {column} {name}", tmp_path)


@pytest.mark.parametrize("name", list(NAME_PAYLOADS))
def test_every_payload_as_the_trace_directory_and_the_output_path(name, tmp_path):
    bad = NAME_PAYLOADS[name].replace("@CANARY@", "canary")
    trace = hostile_trace(tmp_path / bad, FULL_META)
    attack_trace(trace, f"trace directory {name}", tmp_path, out=tmp_path / f"out-{bad}")


# --------------------------------------------------------------------------------------------
# fio iologs from elsewhere: the file names a vendor's log gives become device names, never paths


@pytest.mark.parametrize("name", [*PAYLOADS, "parent", "absolute-etc", "dev-vda"])
def test_a_fio_iolog_names_devices_never_paths(name, tmp_path):
    fname = (
        {
            "parent": "../../etc/shadow",
            "absolute-etc": "/etc/shadow",
            "dev-vda": "/dev/vda",
        }.get(name)
        or payload(name, tmp_path / "canary").split("\n")[0].replace(" ", "_")
        or "x"
    )
    src = tmp_path / "vendor.iolog"
    src.write_text(
        f"fio version 3 iolog\n0 {fname} add\n0 {fname} open\n100 {fname} read 0 4096\n"
        f"200 {fname} write 8192 4096\n400 {fname} close\n"
    )
    code, out, err = run_iofp("import", "fio-iolog", str(src), "-o", str(tmp_path / "t"))
    check_outputs(f"import {name}", (code, out, err))
    if code != 0:
        return
    from iofp.contract import open_trace

    for dev in open_trace(tmp_path / "t").meta.devices:
        assert "/" not in dev and dev not in (".", ".."), (name, dev)
    attack_trace(tmp_path / "t", f"imported iolog {name}", tmp_path)


@pytest.mark.parametrize("name", ["tr*", "t?a", "t[r]a", "tr**"])
def test_a_trace_is_read_literally_whatever_its_name(name, tmp_path):
    """DuckDB expands glob characters in a path: a trace named `tr*` read every sibling trace (and
    replay replayed them). Each trace here is read as itself alone."""
    sibling = hostile_trace(tmp_path / "tra", FULL_META)  # what `tr*`, `t?a` and `t[r]a` match
    rows = small_rows()
    with TraceWriter(tmp_path / name, TraceMeta(**FULL_META)) as w:
        w.write("io", pa.table(rows).slice(0, 10))
    fp = tmp_path / "fp.json"
    code, _, err = run_iofp("fingerprint", str(tmp_path / name), "--json", str(fp))
    assert code == 0, err
    assert json.loads(fp.read_text())["whole"]["ios"] == 10
    log = tmp_path / "x.iolog"
    code, _, err = run_iofp("iolog", str(tmp_path / name), "-o", str(log), "--target", "/dev/shm/iofp-x")
    assert code == 0, err
    assert len(log.read_text().splitlines()) == 3 + 10
    assert sibling.is_dir()


# --------------------------------------------------------------------------------------------
# an artifact's references stay inside it, unless the user passes --follow-links


def test_a_trace_file_linked_out_of_the_trace_is_read_only_when_asked(tmp_path):
    other = hostile_trace(tmp_path / "other", FULL_META)
    trace = hostile_trace(tmp_path / "t", FULL_META)
    link = trace / "io" / "part-000002.parquet"
    link.symlink_to(next((other / "io").glob("part-*.parquet")))
    out = tmp_path / "fp.json"
    code, _, err = run_iofp("fingerprint", str(trace), "--json", str(out))
    assert code == 2 and err.startswith(f"iofp: {link}: a trace file leads out of {trace}"), err
    assert "pass iofp --follow-links" in err and not out.exists()
    code, _, err = run_iofp("--follow-links", "fingerprint", str(trace), "--json", str(out))
    assert code == 0, err
    assert json.loads(out.read_text())["whole"]["ios"] == 80  # both files, as asked


def test_a_headroom_step_directory_outside_the_result_is_not_followed(tmp_path):
    from helpers import headroom_record

    from iofp import headroom_result as hr

    (tmp_path / "elsewhere").mkdir()
    step = hr.Step(scale=1.0, phase="sweep", dir="../elsewhere", verdict=hr.PASS)
    hr.write(tmp_path / "h", headroom_record([step]))
    code, _, err = run_iofp("compare", str(tmp_path / "h"))
    assert code == 2 and "its step's directory leads out of" in err and err.count("\n") == 1, err


@pytest.mark.parametrize("figure", [1e9, 1e300, float("inf"), float("nan"), -5.0])
def test_probe_like_clamps_a_fingerprints_figures_to_what_fio_can_run(figure):
    """A fingerprint's in-flight 1e9 went to fio as its iodepth, and a commit rate x latency planned
    numjobs=1000000: each figure is clamped, and the probe's record says so."""
    from replay.probe.like import MAX_COMMIT_JOBS, MAX_SIZE, from_fingerprint, max_iodepth

    doc = json.loads(SAMPLE_FP.read_text())
    whole = doc["whole"]
    whole["inflight"]["max"] = figure
    hist = whole["inflight"]["hist"]["read"]
    hist["counts"] = [0] * (len(hist["counts"]) - 1) + [10]  # every read past the last limit: the max
    whole["size"]["hist"]["read"]["counts"] = [0] * len(whole["size"]["hist"]["read"]["counts"])
    whole["mix"]["read_bytes"], whole["mix"]["reads"] = figure, 1
    whole["durability"]["sync_calls"]["fdatasync"].update(rate_per_s=figure, mean_us=1e6)
    w = from_fingerprint(doc, "x")
    assert all(1 <= qd <= max_iodepth() for qd in w.read_iodepths), w.read_iodepths
    assert 512 <= w.read_size <= MAX_SIZE and w.read_size % 512 == 0, w.read_size
    assert all(1 <= n <= MAX_COMMIT_JOBS for n in w.commit_jobs), w.commit_jobs


@pytest.mark.parametrize("figure", [10**12, 2**62])
def test_fio_job_clamps_a_fingerprints_in_flight_p99_to_a_queue_fio_can_set_up(figure, tmp_path):
    """A fingerprint's in-flight p99 of 1e12 was written into the job as iodepth=1000000000000 (fio
    sets up that many I/O units); the job asks for at most MAX_IODEPTH and its gaps say so."""
    from replay.fiojob.job import MAX_IODEPTH

    doc = json.loads(SAMPLE_FP.read_text())
    doc["whole"]["inflight"]["p99"] = figure
    fp, job = tmp_path / "deep.fp.json", tmp_path / "j.fio"
    fp.write_text(json.dumps(doc))
    code, _, err = run_iofp("fio-job", str(fp), "--regime", "whole", "-o", str(job))
    assert code == 0, err
    depths = [int(line.split("=")[1]) for line in job.read_text().splitlines() if line.startswith("iodepth=")]
    assert depths and max(depths) <= MAX_IODEPTH, depths
    assert f"(clamped to {MAX_IODEPTH})" in job.read_text()


@pytest.mark.parametrize("owner, mode", [(65534, 0o755), (0, 0o777), (0, 0o1777)])
def test_an_output_directory_another_user_can_write_in_is_refused_before_any_work(owner, mode, tmp_path):
    """iofp runs as root and writes its artifacts by name (fio's output, the job file): an empty
    results directory another user can write in let a link planted there (fio.stdout -> /etc/shadow)
    be followed. Refused before a target is made or fio started."""
    import os

    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chmod(theirs, mode)
    if owner != os.geteuid():
        if os.geteuid() != 0:
            pytest.skip("needs root to give a directory to another user")
        os.chown(theirs, owner, -1)
    iolog = tmp_path / "x.iolog"
    iolog.write_text("fio version 2 iolog\n/dev/x add\n/dev/x open\n/dev/x read 0 4096\n/dev/x close\n")
    trace = REPO / "samples" / "traces" / "commit-heavy"
    for args in (
        ["replay", trace, "--target", tmp_path / "new.img", "-o", theirs],
        ["probe", tmp_path / "new.img", "--size", "16M", "--cells", "seq", "-o", theirs],
        ["import", "fio-iolog", iolog, "-o", theirs],
    ):
        code, out, err = run_iofp(*args)
        assert (code, out) == (2, ""), err
        why = f"another user can write in it (owner uid {owner}, mode {mode:o})"
        assert err.startswith(f"iofp: {theirs}: {why}"), err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["theirs", "x.iolog"]  # no target made
