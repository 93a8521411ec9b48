"""The object store as the fleet's home, against a real S3 server process (moto_server on a loopback
port, started and stopped by this module): traces and fingerprints read and written at s3:// URLs,
the shipper's spool through an outage (the server killed mid-upload, then restarted), and the
one-line errors of a bucket that is not there, missing credentials and a wrong endpoint."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pytest
from helpers import differences, mysql_load, run_iofp, write_trace
from s3server import BUCKET, s3_server

from bench.fleet_lake import write_host_day
from fingerprint.api import fingerprint_trace
from iofp import fingerprint_doc, objstore
from iofp.contract import (
    FINGERPRINT,
    MANIFEST,
    SYNC_TABLE,
    TraceMeta,
    TraceWriter,
    fetch_trace,
    open_trace,
)
from store import Shipper

LAKE = objstore.Url(BUCKET, "lake")
PLACE = "host=db-01/service=orders/date=2026-01-05"


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    with s3_server(tmp_path_factory.mktemp("s3")) as server:
        yield server


@pytest.fixture(scope="module")
def lake_trace(s3, tmp_path_factory):
    """One host-day shipped to the lake (and the same trace written locally, for comparison)."""
    local = tmp_path_factory.mktemp("local")
    write_host_day(local, "db-01", "orders", "2026-01-05", seed=5)
    with Shipper(tmp_path_factory.mktemp("spool")) as shipper:
        write_host_day(LAKE, "db-01", "orders", "2026-01-05", seed=5, shipper=shipper)
    return local / PLACE


def test_a_shipped_trace_lands_in_the_hive_layout_manifest_last(s3, lake_trace):
    keys = [k for k, _ in objstore.listing(LAKE.join(PLACE))]
    assert keys == [f"lake/{PLACE}/{n}" for n in ("io/part-000001.parquet", "sync/part-000001.parquet",
                                                   MANIFEST)]  # fmt: skip
    # the recording is the store's log of requests in the order it took them
    puts = [unquote(json.loads(line)["url"]) for line in s3.recording.read_text().splitlines()
            if json.loads(line)["method"] == "PUT"]  # fmt: skip
    assert puts[-1].endswith(f"{PLACE}/{MANIFEST}")


def test_fingerprint_of_a_trace_in_the_store_equals_the_local_one(s3, lake_trace, tmp_path):
    url = LAKE.join(PLACE)
    code, out, err = run_iofp("fingerprint", str(url), "--json", str(url.join(FINGERPRINT)))
    assert code == 0, err
    assert f"Wrote {url.join(FINGERPRINT)}." in out
    remote = fingerprint_doc.load(str(url.join(FINGERPRINT))).to_dict()
    local = fingerprint_trace(lake_trace).to_dict()
    for d in (remote, local):
        d["provenance"].pop("fingerprint_tool_version")
    # equal, every bit: a fingerprint's floats come from exact sums in a fixed order (arrival_order.sql)
    assert remote == local
    # written once: a second run without --force is refused before any work
    code, _, err = run_iofp("fingerprint", str(url), "--json", str(url.join(FINGERPRINT)))
    assert (code, err.strip()) == (2, f"iofp: {url.join(FINGERPRINT)} already exists; pass --force to "
                                      "overwrite it")  # fmt: skip


def test_a_trace_without_its_manifest_is_never_read(s3, lake_trace):
    """Parts shipped, the manifest not yet: a trace still being written is not read as a whole."""
    half = LAKE.join("host=db-02/service=orders/date=2026-01-05")
    objstore.put_file(half.join("io/part-000001.parquet"), next(lake_trace.glob("io/*.parquet")))
    code, _, err = run_iofp("fingerprint", str(half))
    assert code == 2
    assert err.strip() == (f"iofp: {half}: no {MANIFEST} yet: the capture shipping it has not finished "
                           "(or stopped); nothing was read")  # fmt: skip


@pytest.mark.parametrize(
    "env, message",
    [
        ({}, "no bucket 'no-such-bucket' at {endpoint}; create it, or fix the URL"),
        ({"AWS_ACCESS_KEY_ID": None, "AWS_SECRET_ACCESS_KEY": None},
         "no AWS credentials; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE, or run "
         "where an instance role gives them)"),
        ({"AWS_ENDPOINT_URL": "http://127.0.0.1:9"},
         "the object store at http://127.0.0.1:9 does not answer (EndpointConnectionError); check "
         "AWS_ENDPOINT_URL (unset it for AWS S3)"),
    ],
    ids=["no-bucket", "no-credentials", "wrong-endpoint"],
)
def test_store_misconfigured_is_one_line_exit_2(s3, env, message, monkeypatch):
    for k, v in env.items():
        if v is None:
            monkeypatch.delenv(k)
        else:
            monkeypatch.setenv(k, v)
    objstore.reset_client()
    bucket = "no-such-bucket" if not env else BUCKET
    target = f"s3://{bucket}/lake/{PLACE}"
    try:
        code, _, err = run_iofp("fingerprint", target)
    finally:
        objstore.reset_client()
    assert code == 2
    assert err.strip() == f"iofp: {target}: " + message.format(endpoint=os.environ["AWS_ENDPOINT_URL"])


def _segments(tmp_path: Path, n: int, mib: int) -> list[Path]:
    rng = np.random.default_rng(3)
    out = []
    for i in range(n):
        p = tmp_path / f"seg-{i:03d}.bin"
        p.write_bytes(rng.bytes(mib << 20))
        out.append(p)
    return out


@pytest.mark.slow  # 5-8 s
def test_the_store_killed_mid_upload_loses_nothing_and_ships_nothing_twice(s3, tmp_path):
    """Segments shipped while the server is killed mid-upload and comes back 3 s later: every one
    arrives, each PUT once (the store's own request log), each with the SHA-256 of the file."""
    segs = _segments(tmp_path / "w", 12, 4) if (tmp_path / "w").mkdir() is None else []
    digests = {p.name: objstore.file_sha256_b64(p) for p in segs}
    dest = LAKE.join("outage")
    with Shipper(tmp_path / "spool", backoff_s=(0.05, 0.5)) as shipper:
        for p in segs[:6]:
            shipper.ship(p, dest.join(p.name))
        while shipper.stats.shipped < 3:
            time.sleep(0.005)
        s3.kill()  # mid-way through the 4th (4 MiB at a time)
        for p in segs[6:]:  # the writer goes on: the spool holds them
            assert shipper.ship(p, dest.join(p.name))
        time.sleep(3)
        assert shipper.pending() >= 6
        s3.start()  # replays what the store had taken before the kill
        assert shipper.drain(120)
        stats = shipper.stats
    assert stats.retries > 0 and stats.shipped + stats.already == 12 and stats.dropped_files == 0
    keys = [k for k, _ in objstore.listing(dest)]
    assert keys == [f"lake/outage/{p.name}" for p in segs]
    got = {p.name: objstore.head(dest.join(p.name))["sha256"] for p in segs}
    assert got == digests
    log = [json.loads(line) for line in s3.recording.read_text().splitlines()]
    puts = [r["url"].split("?")[0].rsplit("/", 1)[-1] for r in log if r["method"] == "PUT"]
    assert sorted(n for n in puts if n.startswith("seg-")) == sorted(digests)
    assert not any((tmp_path / "w").iterdir())  # shipped files leave the spool
    assert not list((tmp_path / "spool").iterdir())


def test_a_full_spool_counts_and_says_what_it_turns_away(s3, tmp_path, capfd):
    segs = _segments(tmp_path, 5, 1)
    dest = LAKE.join("full")
    s3.kill()
    try:
        with Shipper(tmp_path / "spool", limit_bytes=3 << 20, backoff_s=(0.05, 0.2)) as shipper:
            took = [shipper.ship(p, dest.join(p.name)) for p in segs]
            assert took == [True, True, True, False, False]
            assert (shipper.stats.dropped_files, shipper.stats.dropped_bytes) == (2, 2 << 20)
            s3.start()
            assert shipper.drain(60)
    finally:
        if s3.proc is None:
            s3.start()
    assert [k.rsplit("/", 1)[-1] for k, _ in objstore.listing(dest)] == [p.name for p in segs[:3]]
    err = capfd.readouterr().err
    said = "is full (3,145,728 bytes waiting for the store): seg-003.bin not shipped (1 dropped so far)"
    assert said in err


def test_a_spool_left_by_a_dead_process_is_shipped_by_the_next(s3, tmp_path):
    segs = _segments(tmp_path, 2, 1)
    dest = LAKE.join("resume")
    s3.kill()
    try:
        first = Shipper(tmp_path / "spool", backoff_s=(0.05, 0.2))
        for p in segs:
            first.ship(p, dest.join(p.name))
        first.close()  # as if the process ended with the store still down
    finally:
        s3.start()
    with Shipper(tmp_path / "spool") as second:
        assert second.drain(60)
    assert len(objstore.listing(dest)) == 2


def test_a_trace_whose_part_the_full_spool_turned_away_says_so_in_its_manifest(s3, tmp_path, capfd):
    """The store away, the spool with room for one part and the manifest: the second part is
    dropped, its rows counted in the trace's loss (lost_ship_spool_full) and said; the trace that
    arrives says what it lacks."""
    from store import TraceShipping

    place = LAKE.join("spill", "host=db-03/service=orders/date=1970-01-01")
    rows = write_rows(20_000)
    s3.kill()
    try:
        w = TraceWriter(tmp_path / "t", TraceMeta(capture_start_ns=0))
        limit = w.write("io", rows).stat().st_size + 16384  # one part (~100 KB) and the manifest (a few KB)
        w.abort()
        shipper = Shipper(tmp_path / "spool", limit_bytes=limit, backoff_s=(0.05, 0.2))
        meta = TraceMeta(host="db-03", capture_start_ns=0, labels={"service": "orders"})
        w = TraceWriter(tmp_path / "t", meta, on_file=TraceShipping(LAKE.join("spill"), shipper))
        w.write("io", rows)
        w.write("io", rows)
        w.close()
        s3.start()
        assert shipper.drain(60)
        shipper.close()
    finally:
        if s3.proc is None:
            s3.start()
    keys = [k.removeprefix(f"{place.key}/") for k, _ in objstore.listing(place)]
    assert keys == ["io/part-000001.parquet", MANIFEST]
    stored = TraceMeta.from_json(objstore.get_bytes(place.join(MANIFEST)))
    assert stored.loss == {"lost_ship_spool_full": 20_000}
    assert "part-000002.parquet not shipped (1 dropped so far)" in capfd.readouterr().err


def test_a_trace_shipped_with_its_own_writer_names_a_service(s3, tmp_path):
    """A trace without the service label has no place in the lake: one line, nothing shipped."""
    from store import TraceShipping

    with Shipper(tmp_path / "spool") as shipper:
        w = TraceWriter(tmp_path / "t", TraceMeta(capture_start_ns=0), on_file=TraceShipping(LAKE, shipper))
        with pytest.raises(Exception, match="needs its service: pass --label service=NAME"):
            w.write("io", write_rows())
        w.abort()


def test_a_trace_read_from_the_store_is_only_its_own_files(s3, lake_trace, tmp_path):
    """Two traces of the same day read from the store in one process, the second without sync calls,
    after the process has opened more than eight traces (the full suite's state): the second is its
    own parts only. Each copy was put in a directory named by a count that stops at eight and the
    URL's last part (date=...), so the first one's sync part was read as the second's: the CI runs'
    MySQL import fingerprinted from the store with another trace's fdatasync calls."""
    for i in range(9):
        write_trace(tmp_path / f"t{i}", {"ts_ns": [1], "offset": [0], "size": [4096], "op": ["read"]})
        open_trace(tmp_path / f"t{i}")
    assert open_trace(str(LAKE.join(PLACE))).num_rows(SYNC_TABLE) > 0
    other = LAKE.join("host=db-03/service=orders/date=2026-01-05")  # the same date=, io only
    write_trace(tmp_path / "other", {"ts_ns": [1, 2], "offset": [0, 4096], "size": [4096] * 2,
                                     "op": ["write"] * 2})  # fmt: skip
    for name in ("io/part-000001.parquet", MANIFEST):
        objstore.put_file(other.join(name), tmp_path / "other" / name)
    trace = open_trace(str(other))
    assert (trace.num_rows(), trace.has(SYNC_TABLE)) == (2, False)
    assert sorted(p.relative_to(trace.root).as_posix() for p in trace.root.rglob("*.*")) == [
        "io/part-000001.parquet", MANIFEST]  # fmt: skip
    # and a copy is never made over anything: what is in its directory is read as the trace
    with pytest.raises(ValueError, match="not empty"):
        fetch_trace(other, tmp_path / "other")


@pytest.mark.slow  # two imports of the shared MySQL trace and a fingerprint of each: 3-7 s
def test_an_import_is_filed_in_the_lake_by_the_labels_it_is_given(s3, tmp_path, monkeypatch):
    """`iofp import -o s3://LAKE`: the host and service it needs before any work, the date of a
    trace without a wall clock after the import (the trace kept); then filed under its place, the
    manifest last, and its fingerprint in the store equals the local import's."""
    src = mysql_load()
    if not src.exists():
        pytest.skip(f"needs the shared traces at {src.parent}")
    monkeypatch.setenv("IOFP_SPOOL_DIR", str(tmp_path / "spool"))
    lake = LAKE.join("imported")
    code, _, err = run_iofp("import", "blkreplay", src, "-o", str(lake), "--label", "service=mysql")
    said = f"iofp: {lake}: a trace in a store is filed by host and service: pass --label host=NAME\n"
    assert (code, err) == (2, said)
    labels = ["--label", "host=db-07", "--label", "service=mysql"]
    code, _, err = run_iofp("import", "blkreplay", src, "-o", str(lake), *labels)
    kept = next((tmp_path / "spool" / "traces").iterdir())
    assert (code, err) == (2, f"iofp: {lake}: a trace shipped to a store is filed by date, and this one has "
                              "no wall clock: pass --label date=YYYY-MM-DD; the trace is kept in "
                              f"{kept}\n")  # fmt: skip
    assert objstore.listing(lake) == []
    labels += ["--label", "date=2026-01-05"]
    code, out, err = run_iofp("import", "blkreplay", src, "-o", str(lake), *labels)
    assert code == 0, err
    place = lake.join("host=db-07/service=mysql/date=2026-01-05")
    assert out.endswith(f"Shipped 2 file(s) to {place}\nWrote {place}. Next: iofp fingerprint {place}\n")
    keys = [k.removeprefix(f"{place.key}/") for k, _ in objstore.listing(place)]
    assert keys == ["io/part-000001.parquet", MANIFEST]
    log = [json.loads(line) for line in s3.recording.read_text().splitlines()]
    puts = [unquote(r["url"]) for r in log if r["method"] == "PUT" and place.key in unquote(r["url"])]
    assert puts[-1].endswith(MANIFEST)
    local = tmp_path / "local"
    code, _, err = run_iofp("import", "blkreplay", src, "-o", str(local), *labels)
    assert code == 0, err
    # its fingerprint in the catalog of the same lake goes beside it (its day from its date label)
    code, _, err = run_iofp("fingerprint", str(place), "-o", str(tmp_path / "fp.json"))
    assert code == 0, err
    code, _, err = run_iofp("catalog", "add", tmp_path / "fp.json", "--service", "mysql", "--catalog", lake)
    assert code == 0, err
    assert objstore.head(place.join(FINGERPRINT)) is not None
    there, here = fingerprint_trace(str(place)).to_dict(), fingerprint_trace(local).to_dict()
    prov = there["provenance"]
    assert (prov["host"], prov["labels"]) == ("db-07", {"service": "mysql", "date": "2026-01-05"})
    for d in (there, here):
        d["provenance"].pop("fingerprint_tool_version")
        d["provenance"].pop("source_files", None)
    # to 1e-12: this trace's fingerprint is not yet shown bit-stable as the generated one's is
    assert not differences(there, here)


def write_rows(n: int = 1):
    import pyarrow as pa

    offsets = np.random.default_rng(7).integers(0, 1 << 30, n) * 4096  # random: a part of n * ~5 bytes
    return pa.table({"ts_ns": list(range(1, n + 1)), "device": ["d"] * n, "offset": offsets,
                     "size": [4096] * n, "op": ["read"] * n})  # fmt: skip



def test_the_readmes_duckdb_query_reads_a_lake_as_iofp_does(tmp_path):
    """The README's DuckDB query over a local lake: per host-day counts and p99 equal the fingerprint's."""
    import re

    from conftest import REPO

    from bench.fleet_lake import fill_lake
    from iofp import duck

    made = fill_lake(tmp_path, ["orders"], 2, ["2026-01-05", "2026-01-06"], rate=50, seconds=5)
    section = (REPO / "README.md").read_text().split("### Querying the lake", 1)[1]
    sql = re.search(r"```sql\n(.*?)```", section, re.S)[1].replace("'lake/", f"'{tmp_path}/")
    con = duck.connect()
    rows = {(r[0], str(r[2])): r for r in con.execute(sql).fetchall()}
    con.close()
    assert len(rows) == len(made) == 4
    for host, service, date in made:
        fp = fingerprint_trace(tmp_path / f"host={host}/service={service}/date={date}")
        assert rows[(host, date)][3] == fp.whole.mix.reads + fp.whole.mix.writes
        assert rows[(host, date)][4] == fp.whole.latency["all"].p99_us


def test_another_fingerprint_of_the_same_host_and_day_is_refused_not_written_over(s3, lake_trace, tmp_path):
    doc = fingerprint_trace(lake_trace).to_dict()
    first, other = tmp_path / "fp.json", tmp_path / "other.json"
    first.write_text(json.dumps(doc))
    doc["whole"]["intensity"]["iops"] *= 2
    other.write_text(json.dumps(doc))
    cat = LAKE.join("one-per-day")
    code, _, err = run_iofp("catalog", "add", str(first), "--catalog", str(cat))
    assert code == 0, err
    at = cat.join(PLACE, FINGERPRINT)
    kept = objstore.get_bytes(at)
    code, _, err = run_iofp("catalog", "add", str(other), "--catalog", str(cat))
    assert (code, err) == (2, f"iofp: {at} holds another fingerprint of that host and day; the catalog keeps "
                              "one per trace\n")  # fmt: skip
    assert objstore.get_bytes(at) == kept


@pytest.mark.slow  # eight processes waiting on the catalog: 5-16 s
def test_eight_hosts_adding_to_the_catalog_at_once_lose_nothing(s3, lake_trace, tmp_path):
    """Eight `iofp catalog add` processes at once, each its host's fingerprint, into one catalog in
    the store: all eight are there, each beside its trace's place; adding one again is refused."""
    import subprocess
    import sys

    doc = fingerprint_trace(lake_trace).to_dict()
    files = []
    for i in range(8):
        doc["provenance"]["host"] = f"ord-{i + 1:02d}"
        files.append(tmp_path / f"fp{i}.json")
        files[-1].write_text(json.dumps(doc))
    cat = str(LAKE.join("catalog"))
    iofp = Path(sys.executable).with_name("iofp")
    procs = [subprocess.Popen([iofp, "catalog", "add", f, "--catalog", cat], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for f in files]  # fmt: skip
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    assert results == [(0, "")] * 8
    keys = [k for k, _ in objstore.listing(LAKE.join("catalog"))]
    assert keys == [f"lake/catalog/host=ord-{i:02d}/service=orders/date=2026-01-05/{FINGERPRINT}"
                    for i in range(1, 9)]  # fmt: skip
    code, out, err = run_iofp("catalog", "list", "--catalog", cat)
    assert code == 0, err
    assert "orders: 8 fingerprint(s)" in out
    code, _, err = run_iofp("catalog", "add", str(files[0]), "--catalog", cat)
    there = f"{cat}/host=ord-01/service=orders/date=2026-01-05/{FINGERPRINT}"
    assert (code, err.strip()) == (2, f"iofp: {files[0]} is already in the catalog as {there}")
    code, out, err = run_iofp("catalog", "trend", "--service", "orders", "--catalog", cat)
    assert code in (0, 1), err
    assert out.count("#") >= 7  # the seven steps between eight fingerprints
