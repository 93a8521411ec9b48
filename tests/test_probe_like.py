"""A probe shaped like a fingerprint (replay/probe/like.py): the sample fingerprints' sizes, depths and
commit concurrency, and what is said when a fingerprint lacks one."""

from __future__ import annotations

import copy
import json

import pytest
from conftest import REPO

from replay.probe.like import fit_to_block, from_fingerprint

SAMPLES = REPO / "samples" / "fingerprints"


def sample(name: str) -> dict:
    return json.loads((SAMPLES / f"{name}.fp.json").read_text())


def test_market_open_reads_8k_at_depth_1_and_2_with_one_committer():
    w = from_fingerprint(sample("market-open"), "mo.json")
    # its reads: all 18,000 of 8 KiB; in flight at issue: 16,537 at 1, 1,408 at 2, 55 at 4 (p99 is in
    # the bucket of 2); fdatasync 687.5/s x 49.96 µs mean = 0.034 commits in progress -> 1
    assert (w.read_size, w.write_size, w.read_iodepths, w.commit_jobs) == (8192, 4096, [1, 2], [1])
    assert w.basis["commit_jobs"].endswith("= 0.03, rounded up to 1")
    assert w.source == "mo.json"


def test_what_a_fingerprint_lacks_keeps_its_default_and_says_so():
    w = from_fingerprint(sample("commit-heavy"), "ch.json")  # writes and fdatasyncs only
    assert (w.read_size, w.read_iodepths) == (4096, [1, 32])
    assert w.basis["read_size"] == "default 4KiB (the fingerprint has no reads)"
    assert w.basis["read_iodepths"].endswith("(the fingerprint has no in-flight counts of reads)")


def test_sizes_round_up_to_whole_blocks_and_past_the_last_bucket_use_the_mean():
    doc = copy.deepcopy(sample("market-open"))
    hist = doc["whole"]["size"]["hist"]["read"]
    hist["counts"] = [0] * len(hist["counts"])
    hist["counts"][3] = 10  # the "<= 4095" bucket: up to one 4 KiB block
    w = from_fingerprint(doc, "x")
    assert w.read_size == 4096
    hist["counts"][3], hist["counts"][-1] = 0, 10  # all past 512 KiB: the mean size instead
    doc["whole"]["mix"].update(reads=10, read_bytes=10 * 1_000_000)
    w = from_fingerprint(doc, "x")
    assert w.read_size == 1_000_448  # 1,000,000 rounded up to 512 bytes
    fit_to_block(w, 4096)
    assert w.read_size == 1_003_520 and w.basis["read_size"].endswith(
        "rounded up to the target's 4096-byte blocks"
    )


@pytest.mark.parametrize("rate, mean_us, jobs", [(2000, 1500, [1, 3]), (100, 10, [1])])
def test_commit_concurrency_is_littles_law_rounded_up(rate, mean_us, jobs):
    doc = copy.deepcopy(sample("commit-heavy"))
    doc["whole"]["durability"]["sync_calls"] = {
        "fdatasync": {"calls": 1, "rate_per_s": rate, "mean_us": mean_us}
    }
    assert from_fingerprint(doc, "x").commit_jobs == jobs
