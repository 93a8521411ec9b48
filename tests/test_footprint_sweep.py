"""fingerprint/footprint.py's union of the groups' masks and reaches, by both of its ways of putting the
groups in order (placed at their index, or sorted when they are sparse) and a chunk at a time, against a
set of every block touched; and the packed start counts unpacked a chunk at a time against a count per
block. tests/test_fingerprint.py holds the same through the queries on a trace."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from fingerprint import footprint as fp


def groups(lo: np.ndarray, hi: np.ndarray) -> dict[str, np.ndarray]:
    """footprint_groups.sql's rows for requests covering blocks lo..hi, the groups in hash order."""
    out: dict[int, list[int]] = {}
    for a, z in zip(lo.tolist(), hi.tolist(), strict=True):
        g = a // fp.GROUP
        r = out.setdefault(g, [0, 0, 0, 0])  # mask, reach, starts packed, n
        last = min(z, g * fp.GROUP + fp.GROUP - 1)
        r[0] |= ((1 << (last - a + 1)) - 1) << (a % fp.GROUP)
        r[1] = max(r[1], z)
        r[2] += 1 << (8 * (a % fp.GROUP))
        r[3] += 1
    keys = np.random.default_rng(0).permutation(list(out))
    cols = np.array([out[k] for k in keys.tolist()], dtype=object).reshape(-1, 4)
    return {"g": keys.astype(np.int64), "m": cols[:, 0].astype(np.uint8),
            "reach": cols[:, 1].astype(np.int64), "s": np.array(cols[:, 2].tolist(), np.uint64),
            "n": cols[:, 3].astype(np.int64), "over": np.zeros(len(keys), bool)}  # fmt: skip


@pytest.mark.parametrize("spread", [3_000, 3_000_000])  # groups dense, then mostly sparse
def test_the_union_is_every_block_touched_by_either_order(spread, monkeypatch):
    monkeypatch.setattr(fp, "CHUNK", 7)  # many chunks, the furthest reach carried between them
    rng = np.random.default_rng(spread)
    for _ in range(40):
        n = int(rng.integers(1, 300))
        lo = rng.integers(0, spread, n)
        hi = lo + np.where(rng.random(n) < 0.2, rng.integers(0, 100, n), rng.integers(0, 3, n))
        rows = groups(lo, hi)
        want = len({b for a, z in zip(lo.tolist(), hi.tolist(), strict=True) for b in range(a, z + 1)})
        assert fp.footprint(rows["g"], rows["m"], rows["reach"]) == want
        assert fp.footprint(rows["g"], rows["m"], rows["reach"], dense=0) == want  # sorted
        if spread < 10_000:  # placed, however sparse (the default places only the dense)
            assert fp.footprint(rows["g"], rows["m"], rows["reach"], dense=1e9) == want


def test_the_start_counts_unpack_a_chunk_at_a_time(monkeypatch):
    monkeypatch.setattr(fp, "CHUNK", 5)
    rng = np.random.default_rng(3)
    lo = rng.integers(0, 400, 3000)  # up to ~30 starts a block: no byte overflows
    got = fp.start_counts(None, {}, groups(lo, lo))
    assert got == Counter(Counter(lo.tolist()).values())
    none = groups(lo[:0], lo[:0])  # no sized request: no group
    assert fp.start_counts(None, {}, none) == Counter()
    assert fp.footprint(none["g"], none["m"], none["reach"]) == 0


def plain(lo: np.ndarray, hi: np.ndarray) -> tuple[int, Counter[int]]:
    """The footprint and the start counts by their definitions: a set of every block touched, a
    count per block."""
    touched = {b for a, z in zip(lo.tolist(), hi.tolist(), strict=True) for b in range(a, z + 1)}
    return len(touched), Counter(Counter(lo.tolist()).values())


@pytest.mark.parametrize(("spread", "chunk"), [(3_000, 7), (3_000_000, 1 << 16)])
def test_the_one_pass_counts_the_blocks_by_the_plain_rules(spread, chunk, monkeypatch):
    """Blocks, batch by batch: the arrays grown down and up as batches reach outside them, requests
    longer than a byte holds kept aside, zero-size rows no request, a chunk at a time at the end."""
    monkeypatch.setattr(fp, "CHUNK", chunk)
    rng = np.random.default_rng(spread)
    for _ in range(20):
        blocks, los, his = fp.Blocks(), [], []
        for _ in range(int(rng.integers(1, 6))):
            n = int(rng.integers(1, 200))
            size = rng.choice([0, 512, 4096, 8192, 65536, 4096 * 300, 4096 * 1000 + 7], n).astype(np.int32)
            off = rng.integers(0, spread, n) * 4096 + rng.choice([0, 0, 0, 512, 4095], n)
            blocks.add(off.astype(np.int64), size)
            sized = size > 0
            los.append(off[sized] // 4096)
            his.append((off[sized] + size[sized] - 1) // 4096)
        assert blocks.ok
        if rng.random() < 0.5:
            blocks.sweep_beside()  # the same sweep in a thread of its own
        assert blocks.result() == plain(np.concatenate(los), np.concatenate(his))


def test_the_one_pass_lets_go_where_the_blocks_span_too_wide(monkeypatch):
    monkeypatch.setattr(fp, "DENSE_BLOCKS", 1000)
    blocks = fp.Blocks()
    blocks.add(np.array([0, 4096 * 500], np.int64), np.array([4096, 4096], np.int32))
    assert blocks.ok
    blocks.add(np.array([4096 * 2000], np.int64), np.array([4096], np.int32))
    assert not blocks.ok and not len(blocks.starts)  # the query counts it instead
    none = fp.Blocks()
    none.add(np.array([7], np.int64), np.array([0], np.int32))  # a flush: no request
    assert none.ok and none.result() == (0, Counter())
