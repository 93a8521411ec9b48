"""iofp fio-job: the job a fingerprint writes (fio parses it; it carries statistics only), its
figures against the fingerprint's, and bad input. The round trip on a lab device is in
test_fiojob_roundtrip.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from conftest import REPO, needs_fio
from helpers import run_iofp
from lab import fio

from fingerprint.api import fingerprint_trace, write_json
from iofp import fingerprint_doc as fd
from iofp.contract import TraceMeta, TraceWriter
from replay import fiojob
from replay.fiojob.demand import size_split, zipf_theta

SAMPLES = REPO / "samples" / "fingerprints"


def job_for(fp: Path, tmp_path: Path, *args: str) -> str:
    out = tmp_path / "job.fio"
    code, stdout, stderr = run_iofp("fio-job", str(fp), "-o", str(out), *args)
    assert code == 0, stderr
    assert f"Wrote {out}." in stdout
    return out.read_text()


def options(text: str) -> dict[str, dict[str, str]]:
    """section -> option -> value, as fio reads the file."""
    out: dict[str, dict[str, str]] = {}
    cur = None
    for line in text.splitlines():
        if line.startswith("[") and line.endswith("]"):
            cur = out.setdefault(line[1:-1], {})
        elif line and not line.startswith(";") and cur is not None:
            k, _, v = line.partition("=")
            cur[k] = v
    return out


def _valid_jobs() -> list[tuple[str, str]]:
    """Every regime and stream mode each sample has (the ones it lacks are refused: test_bad_input)."""
    out = []
    for name in ("market-open", "commit-heavy", "mysql-1and1"):
        fp = fd.load(SAMPLES / f"{name}.fp.json")
        regimes = ["whole", "steady", "baseline"] + (["spike", "phases"] if fp.spike else [])
        out += [(name, r) for r in regimes] + (
            [(name, "whole --streams pid")] if fp.whole.top_processes else []
        )
    return out


@needs_fio
@pytest.mark.parametrize(("name", "regime"), _valid_jobs())
def test_fio_parses_every_sample_job(name: str, regime: str, tmp_path: Path) -> None:
    job = tmp_path / "job.fio"
    args = ["--regime", *regime.split()]
    code, _, stderr = run_iofp("fio-job", str(SAMPLES / f"{name}.fp.json"), *args, "-o", str(job))
    assert code == 0, stderr
    fio("--parse-only", job, env={"DEV": "/dev/null"})


def test_job_reproduces_the_scopes_rates_mix_and_sizes(tmp_path: Path) -> None:
    """Per op: the byte rate / the split's mean is the fingerprint's I/Os per second; the split's
    mean is the op's mean size (bytes / I/Os) within 1%; commits are writes / fdatasync cadence."""
    fp = fd.load(SAMPLES / "commit-heavy.fp.json")
    sections = options(job_for(SAMPLES / "commit-heavy.fp.json", tmp_path, "--runtime", "20s"))
    secs = fp.provenance.io_span_s
    writes = fp.whole.mix.writes / secs
    commits = sum(c.calls for c in fp.whole.durability.sync_calls.values()) / secs
    mean = fp.whole.mix.write_bytes / fp.whole.mix.writes
    rates = {}
    for name, o in sections.items():
        if name == "global":
            continue
        split = [tuple(map(int, x.split("/"))) for x in o["bssplit"].split(":")]
        m = sum(b * p for b, p in split) / 100
        assert abs(m / mean - 1) < 0.01, (name, m, mean)
        rates[name] = int(o["rate"]) / m
    # 1,800 writes/s with 1,500 fdatasyncs: not a whole number of writes per commit, so a commit
    # stream (a write and an fdatasync each) beside the checkpointer's writes.
    assert sections["commit"]["fdatasync"] == "1" and sections["commit"]["ioengine"] == "psync"
    assert "fdatasync" not in sections["write"]
    assert abs(rates["commit"] / commits - 1) < 0.001
    assert abs(sum(rates.values()) / writes - 1) < 0.001


def test_phases_put_the_spike_between_two_calm_phases(tmp_path: Path) -> None:
    fp = fd.load(SAMPLES / "market-open.fp.json")
    sections = options(
        job_for(SAMPLES / "market-open.fp.json", tmp_path, "--regime", "phases", "--runtime", "30s")
    )
    spans = {
        n: (int(o.get("startdelay", "0ms")[:-2]), int(o["runtime"][:-2]))
        for n, o in sections.items()
        if n != "global"
    }
    assert spans["calm1-read"] == (0, 12000)
    assert spans["spike-write"] == (12000, 6000)  # the rank-1 spike lasts 6 s (12-18 s)
    assert spans["calm2-write"] == (18000, 12000)
    assert fp.regimes.spikes[0].duration_s == 6
    spike_writes = int(sections["spike-write"]["rate"]) / 4096
    assert abs(spike_writes / (fp.spike.mix.writes / fp.spike.seconds) - 1) < 0.001


def test_bursty_scope_gets_a_burst_second_and_keeps_its_mean(tmp_path: Path) -> None:
    fp = fd.load(SAMPLES / "mysql-1and1.fp.json")
    job = fiojob.plan(fp, fiojob.JobOptions(regime="whole", runtime_s=60.0))
    ios = sum(s.rate * s.runtime_s for s in job.streams)
    mean = fp.whole.ios / fp.provenance.io_span_s
    assert abs(ios / 60 / mean - 1) < 1e-9
    burst = sum(s.rate * s.runtime_s for s in job.streams if "burst" in s.name)
    peak = burst + sum(s.rate for s in job.streams if "burst" not in s.name)
    p = fp.whole.burstiness["1s"].peak_ios / mean  # the busiest second (489 I/Os) over the mean rate
    assert abs(peak / mean / p - 1) < 1e-9
    short = fiojob.plan(fp, fiojob.JobOptions(regime="whole", runtime_s=10.0))  # 21.8x cannot fit in 10 s
    assert not [s for s in short.streams if "burst" in s.name]
    assert any(g.what == "peak/mean IOPS at 1 s" and "--runtime 23s" in g.job for g in short.gaps)


def test_size_split_fits_the_mean_inside_the_ranged_buckets() -> None:
    h = fd.Histogram(limits=[512, 1024, 2048, 4095, 4096, 8191, 8192], counts=[0, 0, 0, 0, 50, 50, 0, 0])
    s = size_split(h, 5632.0)  # half 4096, half in 4097-8191: those must average 7168
    assert s is not None and s.parts == [(4096, 50), (7168, 50)] and s.mean == 5632.0


def test_zipf_theta_gives_the_hot_share() -> None:
    assert zipf_theta(0.01, 100_000) is None  # uniform already
    theta = zipf_theta(0.446, 142_563)
    assert theta is not None and 0.8 < theta < 1.0
    n, k = 142_563, 1426
    h = np.cumsum(np.arange(1, n + 1, dtype=float) ** -theta)
    assert abs(h[k - 1] / h[-1] - 0.446) < 0.005


# --- nothing of production travels -----------------------------------------------------------------

SECRETS = {"comm": "ordermatchd", "device": "nvme7n1", "host": "trade-prod-17", "label": "orders-eu-west"}


@pytest.fixture
def secret_trace(tmp_path: Path) -> tuple[Path, np.ndarray]:
    """A trace whose names, labels and offsets are distinctive, so the job can be searched for them."""
    rng = np.random.default_rng(3)
    n = 20_000
    ts = np.sort(rng.uniform(0, 40, n) * 1e9).astype(np.int64)
    offsets = (rng.integers(1 << 12, 1 << 18, n) * 4096 + 7 * 4096).astype(np.int64)
    op = np.where(rng.random(n) < 0.3, "read", "write")
    meta = TraceMeta(
        source="capture",
        host=SECRETS["host"],
        labels={"service": SECRETS["label"]},
        devices={SECRETS["device"]: {"model": "SECRET-MODEL"}},
        duration_ns=int(41e9),
    )
    with TraceWriter(tmp_path / "t", meta) as w:
        w.write(
            "io",
            pa.table(
                {
                    "ts_ns": ts,
                    "device": [SECRETS["device"]] * n,
                    "offset": offsets,
                    "size": rng.choice([4096, 16384], n).astype(np.int32),
                    "op": op,
                    "lat_ns": rng.integers(50_000, 150_000, n),
                    "pid": rng.choice([4242, 4343], n).astype(np.int32),
                    "comm": rng.choice([SECRETS["comm"], "wal-" + SECRETS["comm"]], n),
                    "inflight": np.ones(n, np.int32),
                }
            ),
        )
    return tmp_path / "t", offsets


def test_job_carries_no_name_label_host_or_offset_of_the_trace(secret_trace, tmp_path: Path) -> None:
    trace, offsets = secret_trace
    fp = fingerprint_trace(trace)
    write_json(fp, tmp_path / "fp.json")
    assert fp.whole.top_processes[0].comm in (
        SECRETS["comm"],
        "wal-" + SECRETS["comm"],
    )  # the source has them
    for streams in ("single", "pid"):
        text = job_for(tmp_path / "fp.json", tmp_path / streams, "--streams", streams)
        for what, secret in SECRETS.items():
            assert secret not in text, what
        assert "SECRET-MODEL" not in text and "4242" not in text and "4343" not in text
        assert not re.search(r"^offset", text, re.M)
        numbers = {int(x) for x in re.findall(r"\d+", text)}
        assert numbers.isdisjoint(set(offsets.tolist())), numbers & set(offsets.tolist())
    pid = options((tmp_path / "pid" / "job.fio").read_text())
    assert {"p1-read", "p1-write", "p2-read", "p2-write"} <= set(pid)


# --- bad input: one line, exit 2, nothing written ---------------------------------------------------


def test_bad_input(tmp_path: Path) -> None:
    out = tmp_path / "job.fio"
    not_fp = tmp_path / "x.json"
    not_fp.write_text(json.dumps({"hello": 1}))
    v1 = tmp_path / "v1.json"
    doc = json.loads((SAMPLES / "commit-heavy.fp.json").read_text())
    v1.write_text(json.dumps({**doc, "fingerprint_version": 1}))
    unsteady = tmp_path / "unsteady.json"
    unsteady.write_text(json.dumps({**doc, "steady": None}))
    ch = str(SAMPLES / "commit-heavy.fp.json")
    make = "make one with iofp fingerprint TRACE --json OUT"
    no_spike = "iofp: this fingerprint has no spike regime: it found no spike"
    cases = [
        ((str(not_fp),), f"iofp: {not_fp}: not an iofp fingerprint; {make}"),
        ((str(v1),), f"iofp: {v1}: fingerprint v1; this iofp reads v2 and v3 ({make} again from its trace)"),
        (
            (str(unsteady), "--regime", "steady"),
            "iofp: this fingerprint has no steady regime: no window met the steady-state rule "
            "(try --regime baseline)",
        ),
        ((ch, "--regime", "spike"), no_spike),
        ((ch, "--regime", "phases"), no_spike),
        (
            (str(SAMPLES / "mysql-1and1.fp.json"), "--streams", "pid"),
            "iofp: this fingerprint has no per-process streams (an imported trace records no submitter); "
            "use --streams single",
        ),
        (
            (ch, "--regime", "peak"),
            "iofp: --regime peak: choose one of whole, steady, baseline, spike, phases",
        ),
        (
            (ch, "--runtime", "soon"),
            "iofp: --runtime 'soon' is not a duration; use e.g. 30s, 100ms, 250us, 5m or 1h",
        ),
    ]
    for args, message in cases:
        code, _, stderr = run_iofp("fio-job", *args, "-o", str(out))
        assert (code, stderr.strip()) == (2, message), args
        assert not out.exists()
    out.write_text("keep")
    code, _, stderr = run_iofp("fio-job", str(SAMPLES / "commit-heavy.fp.json"), "-o", str(out))
    assert (code, stderr.strip(), out.read_text()) == (
        2,
        f"iofp: {out} already exists; pass --force to overwrite it",
        "keep",
    )


@pytest.mark.parametrize("name", ["market-open", "commit-heavy"])
def test_a_captured_samples_job_carries_none_of_its_provenance(name: str, tmp_path: Path) -> None:
    """The real captures: their device, backing file, host and labels, and their offsets (read
    from the trace itself, through the contract), are nowhere in the job."""
    from iofp.contract import open_trace

    fp = fd.load(SAMPLES / f"{name}.fp.json")
    text = job_for(SAMPLES / f"{name}.fp.json", tmp_path, "--streams", "pid")
    words = [fp.provenance.host or "", *fp.provenance.labels.values()]
    for dev, facts in fp.provenance.devices.items():
        words += [dev, str(facts.get("backing_file", "")), str(facts.get("dev", ""))]
    assert fp.provenance.devices and fp.provenance.host  # there is something to leak
    assert [w for w in words if w and w in text] == []
    trace = open_trace(REPO / "samples" / "traces" / name)
    offsets = {o for b in trace.batches(columns=["offset"]) for o in b.column(0).to_pylist() if o >= 1 << 20}
    assert len(offsets) > 1000
    # the region (size=) is the footprint's fitted count of 4 KiB blocks, a statistic on a block boundary
    # as every offset is: of a 256 MiB device's 65,536 such boundaries the trace starts at ~50,000
    numbers = re.findall(r"\d+", "\n".join(x for x in text.splitlines() if not x.startswith("size=")))
    assert {int(x) for x in numbers}.isdisjoint(offsets)


def test_a_device_is_never_replaced_by_the_job_even_with_force() -> None:
    code, _, stderr = run_iofp("fio-job", str(SAMPLES / "commit-heavy.fp.json"), "-o", "/dev/null", "--force")
    assert (code, stderr.strip()) == (
        2,
        "iofp: /dev/null is not a regular file (a device or a pipe); name a file to write",
    )
    assert Path("/dev/null").is_char_device()


def test_dash_is_stdout_as_everywhere(tmp_path, monkeypatch) -> None:
    """-o - writes the job to stdout, as --json - does (it wrote a file named '-')."""
    monkeypatch.chdir(tmp_path)
    code, stdout, stderr = run_iofp("fio-job", str(SAMPLES / "commit-heavy.fp.json"), "-o", "-")
    assert code == 0, stderr
    assert stdout.startswith("; iofp fio-job:") and "[global]" in stdout
    assert not (tmp_path / "-").exists()


def test_one_stream_says_what_it_loses_and_one_per_process_keeps_it(tmp_path: Path) -> None:
    """A WAL writer appending (100% sequential in its process, 8% on the device beside a reader) and a
    second committer: --streams single lists both losses, --streams pid keeps the append sequential
    (percentage_random=0) and each committer's commits in a job of its own, at its own rate."""
    from helpers import commit_burst_trace

    from fingerprint.api import fingerprint_trace

    fp = fingerprint_trace(commit_burst_trace(tmp_path / "cb"))
    single = fiojob.plan(fp, fiojob.JobOptions(regime="whole", runtime_s=60.0))
    gaps = {g.what: (g.fingerprint, g.job) for g in single.gaps}
    assert gaps["sequential per process"][0] == "p1 0.0%, p2 100.0%, p3 100.0%"
    assert gaps["concurrent commit streams"] == (
        "2 processes committing (p2 416.7/s, p3 33.3/s)",
        "one serial stream at 450.0/s, each commit waiting for the one before (harsher than the trace): "
        "--streams pid keeps them concurrent",
    )
    per = fiojob.plan(fp, fiojob.JobOptions(regime="whole", runtime_s=60.0, streams="pid"))
    commits = {s.name: (s.rate, s.seq, s.fdatasync) for s in per.streams if s.fdatasync}
    # sequential but for each process's first write
    append = pytest.approx(1.0, abs=1e-3)
    assert commits == {"p2-write": (pytest.approx(416.67, rel=1e-3), append, 1),
                       "p3-write": (pytest.approx(33.33, rel=1e-3), append, 1)}  # fmt: skip
    assert not {"sequential per process", "concurrent commit streams"} & {g.what for g in per.gaps}
