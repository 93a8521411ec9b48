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
