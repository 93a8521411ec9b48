"""The footprint (distinct 4 KiB blocks touched) and the hot-block share (the I/Os on its hottest 1%
of blocks) of the whole trace and of a --between span; not per regime (each needs every block).

One pass over the sized requests of a scope, grouped by eight blocks (footprint_groups.sql): the
starts per block, eight blocks' counts packed in one sum (an eighth of the hash table a count per
block needs), unpacked here, the few groups where a block's count overflowed its byte counted block
by block; and each group's mask of its own blocks touched with the furthest block reached, whose
union is taken here in the groups' order. The hottest k blocks' I/Os are the top of those counts.
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


def footprint(g: Any, m: Any, reach: Any) -> int:
    """The blocks in the union of every group's own mask m and, beyond the group, its blocks up to
    reach. A group's extension starts at a group's first block, so the blocks of group h the earlier
    groups cover are a prefix of it, up to the furthest reach before h: the extensions' union is
    counted by a sweep in the groups' order, and each mask only beyond that prefix."""
    if not len(g):
        return 0
    order = np.argsort(np.asarray(g, np.int64), kind="stable")
    g = np.asarray(g, np.int64)[order]
    m = np.asarray(m, np.int64)[order]
    reach = np.asarray(reach, np.int64)[order]
    first = g * GROUP
    # the furthest block reached by the groups before each one (-1: none)
    before = np.concatenate(([-1], np.maximum.accumulate(reach)[:-1]))
    # the extension [first + GROUP, reach] less what earlier extensions already cover
    extended = np.maximum(reach - np.maximum(first + GROUP - 1, before), 0).sum()
    covered = np.clip(before - first + 1, 0, GROUP)  # the group's prefix earlier groups cover
    own = BITS[m & ~((1 << covered) - 1) & 0xFF].sum()
    return int(extended + own)


def start_counts(con: Any, params: dict[str, Any], rows: dict[str, Any]) -> Counter[int]:
    """How many blocks had each number of starts (footprint_groups.sql's packed sums, unpacked)."""
    packed = np.ascontiguousarray(rows["s"], dtype=np.uint64)
    per_block = packed.view(np.uint8).reshape(-1, 8)
    # a byte that overflowed carried into the next: the group's bytes no longer sum to its starts
    ok = ~np.asarray(rows["over"], bool) & (per_block.sum(axis=1, dtype=np.int64) == rows["n"])
    tally = np.bincount(per_block[ok].ravel(), minlength=256)
    out = Counter({c: int(b) for c, b in enumerate(tally) if c and b})
    if (bad := np.flatnonzero(~ok)).size:
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
