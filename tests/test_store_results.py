"""Results directories in the store: `iofp replay`, `iofp probe` and `iofp headroom -o s3://...` write
locally and ship the directory, the record last; `iofp compare` and `iofp report` read them back at
their s3:// URLs, copying what they read and no more, through the same bounded readers as local
results. Against a real S3 server process (moto_server on a loopback port) and, for the runs, a lab
RAM loop device."""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import unquote

import lab
import pytest
from conftest import COMMIT_HEAVY, needs_fio, needs_root
from helpers import run_iofp
from s3server import BUCKET, s3_server

from iofp import artifact_json, objstore, results_dir
from iofp import headroom_result as hr
from iofp import probe_result as pr
from iofp import replay_result as rr
from store import results_output

ROOT = objstore.Url(BUCKET, "results")


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    with s3_server(tmp_path_factory.mktemp("s3")) as server:
        yield server


@pytest.fixture(autouse=True)
def spool(tmp_path, monkeypatch):
    monkeypatch.setenv("IOFP_SPOOL_DIR", str(tmp_path / "spool"))
    return tmp_path / "spool"


def puts(s3, under: objstore.Url) -> list[str]:
    """The keys under `under` the store took PUTs for, in the order it took them (its request log)."""
    prefix = f"/{under.bucket}/{under.key}/"
    urls = [unquote(json.loads(line)["url"]).split("?")[0] for line in s3.recording.read_text().splitlines()
            if json.loads(line)["method"] == "PUT"]  # fmt: skip
    return [u.split(prefix, 1)[1] for u in urls if prefix in u]


def download_all(under: objstore.Url, into: Path) -> Path:
    """Every object under `under`, as a plain directory (the results as the run wrote them)."""
    prefix = under.key + "/"
    for key, _ in objstore.listing(under):
        local = into / key[len(prefix):]
        local.parent.mkdir(parents=True, exist_ok=True)
        objstore.download(objstore.Url(under.bucket, key), local)
    return into


def test_the_records_named_here_are_the_contracts():
    assert results_dir.RECORDS == (rr.RECORD, pr.RECORD, hr.RECORD)


# -- shipping ------------------------------------------------------------------------------------


def fake_sweep(root: Path) -> Path:
    """A directory shaped as a sweep writes it (the records' content is not what ships them)."""
    for name in ("ceiling/fio.json", "steps/01-x1/fio.json", "steps/01-x1/capture/io/part-000001.parquet",
                 "steps/01-x1/capture/trace.json", "steps/01-x1/results.json", "steps/02-x2/results.json",
                 "headroom.json"):  # fmt: skip
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(name)
    return root


def test_a_results_directory_ships_whole_its_records_last_the_top_one_after_all(s3, tmp_path):
    dest = ROOT.join("order")
    out = results_output(str(dest), ("headroom.json", "steps", "ceiling"), force=False)
    assert out.local.name == "order"  # a reader names a candidate without a label by it
    fake_sweep(out.local)
    assert out.finish() == f"Shipped 7 file(s) to {dest}"
    sent = puts(s3, dest)
    made = fake_sweep(tmp_path / "x")
    assert sorted(sent) == sorted(p.relative_to(made).as_posix() for p in made.rglob("*") if p.is_file())
    assert sent[-1] == "headroom.json"
    assert set(sent[-3:-1]) == {"steps/01-x1/results.json", "steps/02-x2/results.json"}
    assert sent.index("steps/01-x1/capture/trace.json") < sent.index("steps/01-x1/results.json")
    assert not out.local.parent.exists()  # shipped: the spool keeps nothing
    assert out.shown(out.local / "headroom.json") == f"{dest}/headroom.json"


def test_an_existing_prefix_is_refused_before_any_work_and_force_replaces_only_the_commands_names(s3):
    dest = ROOT.join("again")
    objstore.put_bytes(dest.join("results.json"), b"{}")
    objstore.put_bytes(dest.join("fio.json"), b"{}")
    objstore.put_bytes(dest.join("notes.txt"), b"kept")
    nothing = "/dev/no-such-device"
    for cmd in (["replay", str(COMMIT_HEAVY), "--target", nothing], ["probe", nothing],
                ["headroom", str(COMMIT_HEAVY), "--target", nothing, "--slo", "p99<=1ms"]):  # fmt: skip
        code, _, err = run_iofp(*cmd, "-o", str(dest))
        said = f"iofp: {dest} already holds objects; pass --force or choose another --output\n"
        assert (code, err) == (2, said)
    out = results_output(str(dest), ("results.json", "fio.json", "capture"), force=True)
    (out.local / "capture").mkdir(parents=True)
    (out.local / "capture" / "trace.json").write_text("new")
    (out.local / "results.json").write_text("new")
    out.finish()
    keys = [k for k, _ in objstore.listing(dest)]
    got = {k.removeprefix(dest.key + "/"): objstore.get_bytes(objstore.Url(BUCKET, k)) for k in keys}
    assert got == {"capture/trace.json": b"new", "notes.txt": b"kept", "results.json": b"new"}


def test_a_run_that_recorded_nothing_ships_nothing_and_leaves_no_spool(s3):
    out = results_output(str(ROOT.join("none")), ("results.json",), force=False)
    out.local.mkdir(parents=True)
    (out.local / "job.fio").write_text("x")  # written before the run failed
    assert out.finish() is None
    assert objstore.listing(ROOT.join("none")) == []
    assert not out.local.parent.exists()


@pytest.mark.slow  # the store down for ~2 s
def test_a_store_down_when_the_run_ends_keeps_the_results_spooled_and_iofp_ship_sends_them(s3):
    dest = ROOT.join("outage")
    out = results_output(str(dest), ("headroom.json", "steps", "ceiling"), force=False)
    fake_sweep(out.local)
    s3.kill()
    try:
        line = out.finish(wait_s=1)
    finally:
        s3.start()
    queue = out.local.parent / "queue"
    assert line == (f"7 file(s) still spooled in {queue} for {dest} (the store does not answer); "
                    f"`iofp ship {queue}` sends them")  # fmt: skip
    assert out.shown(out.local / "headroom.json") == str(out.local / "headroom.json")
    code, stdout, err = run_iofp("ship", str(queue))
    assert (code, stdout) == (0, f"Shipped 7 of 7 file(s) from {queue}.\n"), err
    assert puts(s3, dest)[-1] == "headroom.json"


# -- reading -------------------------------------------------------------------------------------


def test_a_prefix_without_its_record_is_never_read_as_results(s3, tmp_path):
    half = ROOT.join("half")
    objstore.put_bytes(half.join("fio.json"), b"{}")
    objstore.put_bytes(half.join("steps/01-x1/results.json"), b"{}")  # a sweep's step, not the sweep
    for cmd in (["compare", str(half)], ["report", str(half), "-o", str(tmp_path / "r.html")]):
        code, _, err = run_iofp(*cmd)
        said = (f"iofp: {half}: no results.json/probe.json/headroom.json there yet: the command shipping "
                "it has not finished (or stopped); nothing was read\n")  # fmt: skip
        assert (code, err) == (2, said)
    code, _, err = run_iofp("compare", str(ROOT.join("nothing")))
    assert (code, err) == (2, f"iofp: {ROOT.join('nothing')}: nothing there; pass the s3:// prefix a replay, "
                              "probe or headroom wrote with -o\n")  # fmt: skip


@pytest.mark.parametrize("key", ["../elsewhere/results.json", "a/../../results.json", "./results.json",
                                 "a//results.json", "a\x1b[2J/results.json"])  # fmt: skip
def test_a_key_that_is_not_a_plain_path_is_refused_by_name(s3, key):
    where = ROOT.join("hostile")
    objstore.client().put_object(Bucket=BUCKET, Key=f"{where.key}/{key}", Body=b"{}")
    objstore.put_bytes(where.join("results.json"), b"{}")
    try:
        code, _, err = run_iofp("compare", str(where))
    finally:
        for k, _ in objstore.listing(where):
            objstore.delete(objstore.Url(BUCKET, k))
    assert code == 2
    assert re.fullmatch(rf"iofp: {re.escape(str(where))}: the key '.*' is no path within it \('.*' in it\); "
                        r"nothing was read\n", err), err  # fmt: skip
    assert "\x1b" not in err


def test_a_record_over_the_limit_is_refused_before_it_is_fetched(s3, monkeypatch):
    big = ROOT.join("big")
    objstore.put_bytes(big.join("results.json"), b" " * 4096 + b"{}")
    monkeypatch.setitem(artifact_json.LIMITS, "result", 4096)
    code, _, err = run_iofp("compare", str(big))
    assert (code, err) == (2, f"iofp: {big}/results.json: 0.0 MiB, larger than any result iofp reads "
                              "(0 MiB); the record is damaged: run it again\n")  # fmt: skip


def test_a_record_nested_too_deep_is_one_line_naming_its_url(s3):
    deep = ROOT.join("deep")
    objstore.put_bytes(deep.join("results.json"), b"[" * 100_000 + b"]" * 100_000)
    code, _, err = run_iofp("compare", str(deep))
    assert (code, err) == (2, f"iofp: {deep}/results.json: JSON nested deeper than 64 levels; run the "
                              "replay again\n")  # fmt: skip


# -- the real runs: replay, probe and headroom onto a RAM loop, shipped, read back ----------------


TRACE = objstore.Url(BUCKET, "traces/commit-heavy")


@pytest.fixture(scope="module")
def shipped(s3, tmp_path_factory):
    """The commit-heavy sample in the store; a replay of it from there, a short probe and a one-step
    headroom sweep on a RAM loop, each -o s3://...; and each prefix downloaded whole (every file as
    the run wrote it)."""
    for p in [*sorted(COMMIT_HEAVY.rglob("*.parquet")), COMMIT_HEAVY / "trace.json"]:
        objstore.put_file(TRACE.join(p.relative_to(COMMIT_HEAVY).as_posix()), p)
    spool = tmp_path_factory.mktemp("spool")
    mp = pytest.MonkeyPatch()
    mp.setenv("IOFP_SPOOL_DIR", str(spool))
    sel = ["--between", "2", "4"]
    out = {}
    try:
        with lab.loop_device(256) as dev:
            runs = {
                "ram": ["replay", "--repeat", "1", str(TRACE), *sel, "--target", dev],
                "probe-ram": ["probe", dev, "--cells", "randread,sweep", "--qd", "1,4", "--runtime", "1s",
                              "--reads-only"],
                "headroom-ram": ["headroom", str(COMMIT_HEAVY), *sel, "--target", dev, "--scales", "1",
                                 "--max-scale", "1", "--slo", "commit.p99<=1s"],
            }  # fmt: skip
            for name, cmd in runs.items():
                out[name] = run_iofp(*cmd, "--label", "device=ram-loop", "-o", str(ROOT.join("lab", name)))
    finally:
        mp.undo()
    local = tmp_path_factory.mktemp("whole")
    for name in out:
        download_all(ROOT.join("lab", name), local / name)
    return out, local, spool


@needs_root
@needs_fio
def test_replay_probe_and_headroom_ship_every_file_they_wrote_record_last(s3, shipped):
    out, local, spool = shipped
    for name, record in (("ram", rr.RECORD), ("probe-ram", pr.RECORD), ("headroom-ram", hr.RECORD)):
        code, stdout, err = out[name]
        url = ROOT.join("lab", name)
        # a headroom sweep that ends inconclusive on a busy host (CI beside CPU hogs) exits 1, its files
        # written and shipped all the same
        busy = name == "headroom-ram" and code == 1 and "inconclusive: the host" in err
        assert (code == 0 or busy) and "Traceback" not in err, err
        assert f"Shipped {len(puts(s3, url))} file(s) to {url}\n" in stdout
        assert f"Wrote {url}/{record}" in stdout
        assert puts(s3, url)[-1] == record
        there = [k.removeprefix(f"{url.key}/") for k, _ in objstore.listing(url)]
        assert sorted(puts(s3, url)) == sorted(there)
    _, res = rr.load(local / "ram")
    assert res.trace["path"] == str(TRACE)  # the trace as the user named it, not its local copy
    assert set(res.artifacts) <= {p.relative_to(local / "ram").as_posix() for p in (local / "ram").rglob("*")}
    assert (local / "ram" / "capture" / "trace.json").is_file()
    assert (local / "headroom-ram" / "steps").is_dir()
    assert not [p for p in spool.rglob("*") if p.is_file()]  # nothing left spooled


@needs_root
@needs_fio
def test_compare_reads_results_at_their_urls_as_it_reads_them_here(s3, shipped, tmp_path):
    _, local, _ = shipped
    names = ("ram", "headroom-ram", "probe-ram")
    urls = [str(ROOT.join("lab", n)) for n in names]
    there = run_iofp("compare", *urls, "--baseline", str(TRACE), "--json", "-")
    here = run_iofp("compare", *(str(local / n) for n in names), "--baseline", str(TRACE), "--json", "-")
    assert there[0] == here[0] == 0, there[2] + here[2]
    for u in urls[:2]:  # a replay's and a sweep's source (a probe's cells say whose figures they are)
        assert u in there[1]
    assert "is not the trace the results replayed" not in there[1]
    as_here = there[1]
    for u, n in zip(urls, names, strict=True):
        as_here = as_here.replace(u, str(local / n))
    assert json.loads(as_here) == json.loads(here[1])


@needs_root
@needs_fio
def test_report_draws_results_at_their_urls_as_it_draws_them_here(s3, shipped, tmp_path):
    _, local, _ = shipped
    url = ROOT.join("lab")
    code, _, err = run_iofp("report", str(url), "-o", str(tmp_path / "there.html"))
    assert code == 0, err
    code, _, err = run_iofp("report", str(local), "-o", str(tmp_path / "here.html"))
    assert code == 0, err
    there = (tmp_path / "there.html").read_text()
    assert "<svg" in there and f"{url}/ram" in there  # the capture's curves; the provenance its URL
    assert there.replace(str(url), str(local)) == (tmp_path / "here.html").read_text()
