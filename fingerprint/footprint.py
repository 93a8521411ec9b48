"""The footprint (distinct 4 KiB blocks touched) and the hot-block share (the I/Os on its hottest 1%
of blocks) of the whole trace and of a --between span; not per regime (each needs every block).

One pass over the sized requests of a scope, grouped by eight blocks (footprint_groups.sql): the
starts per block, eight blocks' counts packed in one sum (an eighth of the hash table a count per
block needs), unpacked here, the few groups where a block's count overflowed its byte counted block
by block; and each group's mask of its own blocks touched with the furthest block reached, whose
union is taken here in the groups' order. The hottest k blocks' I/Os are the top of those counts.
The groups are put in order by placing each at its index where they are dense (a 50 M-row trace's
8 M groups: no sort), and swept a chunk at a time: each array of 8 M groups made whole was 64 MB of
fresh pages, faulted in at ~3 ns a byte here.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from fingerprint.frame import Frame
from iofp import duck
from iofp.sqlfiles import load_sql

SQL = "fingerprint.sql"
HOT_SHARE = 0.01
GROUP = 8  # blocks a row of footprint_groups.sql holds
# the groups placed at their index, unsorted, while they span at most this many times their number (a
# sort of 8 M groups took ~1 s; a device's sparse corners would make a huge mostly empty array)
DENSE = 2.0
CHUNK = 1 << 20  # groups swept at a time
BITS = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)  # ones in a byte


def measure(con: Any, f: Frame) -> dict[str, tuple[int, int, int]]:
    """scope -> (footprint blocks, the hot blocks k, the I/Os starting in the hottest k blocks), for
    'whole' and, with --between, 'between' (the same pass over the span's rows)."""
    spans = {"whole": (None, None)} | ({"between": (f.lo, f.hi)} if f.lo is not None else {})
    out = {}
    for scope, (lo, hi) in spans.items():
        params = {"lo": lo, "hi": hi, "device": f.options.device}
        rows = con.execute(load_sql(SQL, "footprint_groups"), params).fetchnumpy()
        blocks = footprint(rows["g"], rows["m"], rows["reach"])
        hot_k = max(1, math.ceil(HOT_SHARE * blocks)) if blocks else 0
        out[scope] = (blocks, hot_k, top_sum(start_counts(con, params, rows), hot_k))
    return out


def footprint(g: Any, m: Any, reach: Any, dense: float = DENSE) -> int:
    """The blocks in the union of every group's own mask m and, beyond the group, its blocks up to
    reach. A group's extension starts at a group's first block, so the blocks of group h the earlier
    groups cover are a prefix of it, up to the furthest reach before h: the extensions' union is
    counted by a sweep in the groups' order, and each mask only beyond that prefix."""
    if not len(g):
        return 0
    g = np.array(g, np.int64)  # a copy: placed in place
    lo = int(g.min())
    span = int(g.max()) - lo + 1
    if span <= dense * len(g):
        # the groups in order by placing each at its index (no sort): every group from the lowest to
        # the highest, those no request started in reaching -1 with an empty mask, adding nothing
        g -= lo
        return _sweep(_placed(g, m, np.uint8(0), span), _placed(g, reach, np.int64(-1), span), None, lo)
    order = np.argsort(g)  # one row per group: no ties
    return _sweep(np.asarray(m, np.uint8)[order], np.asarray(reach, np.int64)[order], g[order], 0)


def _sweep(m: np.ndarray, reach: np.ndarray, g: np.ndarray | None, lo: int) -> int:
    """The union's blocks, the groups in order (g, or lo, lo + 1, ... when None), a chunk at a time,
    the furthest reach carried: each temporary array of 8 M groups was 64 MB of fresh pages, which
    this VM faults in at ~3 ns a byte."""
    total, carry = 0, -1
    for i in range(0, len(reach), CHUNK):
        r = reach[i : i + CHUNK]
        f = (np.arange(lo + i, lo + i + len(r), dtype=np.int64) if g is None else g[i : i + CHUNK]) * GROUP
        # the furthest block reached by the groups before each one (-1: none)
        before = np.empty_like(r)
        before[0] = carry
        np.maximum.accumulate(r[:-1], out=before[1:])
        np.maximum(before, carry, out=before)
        carry = max(carry, int(r.max()))
        # the extension [first + GROUP, reach] less what earlier extensions already cover
        ext = np.maximum(f + (GROUP - 1), before)
        np.subtract(r, ext, out=ext)
        total += int(ext[ext > 0].sum())
        # the group's own blocks beyond the prefix earlier groups cover
        covered = before - f
        covered += 1
        np.clip(covered, 0, GROUP, out=covered)
        total += int(BITS[m[i : i + CHUNK] & ~((1 << covered) - 1) & 0xFF].sum())
    return total


def _placed(at: np.ndarray, values: Any, empty: np.generic, n: int) -> np.ndarray:
    out = np.full(n, empty, type(empty))
    out[at] = values
    return out


def start_counts(con: Any, params: dict[str, Any], rows: dict[str, Any]) -> Counter[int]:
    """How many blocks had each number of starts (footprint_groups.sql's packed sums, unpacked)."""
    packed = np.ascontiguousarray(rows["s"], dtype=np.uint64)
    over, n = np.asarray(rows["over"], bool), np.asarray(rows["n"], np.int64)
    tally = np.zeros(256, np.int64)
    wrong = [np.zeros(0, np.intp)]  # none when no request is sized
    for i in range(0, len(packed), CHUNK):  # a chunk at a time, as _sweep
        per_block = packed[i : i + CHUNK].view(np.uint8).reshape(-1, 8)
        # a byte that overflowed carried into the next: the group's bytes no longer sum to its starts
        ok = per_block.sum(axis=1, dtype=np.int64) == n[i : i + CHUNK]
        ok &= ~over[i : i + CHUNK]
        tally += np.bincount(per_block[ok].ravel(), minlength=256)
        wrong.append(np.flatnonzero(~ok) + i)
    out = Counter({c: int(b) for c, b in enumerate(tally) if c and b})
    if (bad := np.concatenate(wrong)).size:
        groups = (np.asarray(rows["g"])[bad]).tolist()
        for r in duck.query(con, SQL, "start_counts_exact", {**params, "groups": groups}):
            out[int(r["starts"])] += int(r["blocks"])
    return out


def top_sum(blocks_by_count: Counter[int], k: int) -> int:
    """The sum of the k largest per-block counts, from how many blocks have each count."""
    total = 0
    for count in sorted(blocks_by_count, reverse=True):
        take = min(k, blocks_by_count[count])
        total, k = total + take * count, k - take
        if not k:
            break
    return total
