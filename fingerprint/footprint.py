"""The footprint (distinct 4 KiB blocks touched) and the hot-block share (the I/Os on its hottest 1%
of blocks) of the whole trace and of a --between span; not per regime (each needs every block).

Two passes over the sized requests of a scope: block masks per 64-block chunk with the furthest
block reached (footprint_chunks.sql, footprint.sql), and the starts per block, eight blocks' counts
packed in one sum (start_counts.sql: an eighth of the hash table a count per block needs), unpacked
here; the few groups where a block's count overflowed its byte are counted block by block. The
hottest k blocks' I/Os are then the top of those counts.
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


def measure(con: Any, f: Frame) -> dict[str, tuple[int, int, int]]:
    """scope -> (footprint blocks, the hot blocks k, the I/Os starting in the hottest k blocks), for
    'whole' and, with --between, 'between' (the same passes over the span's rows)."""
    spans = {"whole": (None, None)} | ({"between": (f.lo, f.hi)} if f.lo is not None else {})
    out = {}
    for scope, (lo, hi) in spans.items():
        params = {"lo": lo, "hi": hi, "device": f.options.device}
        duck.run(con, SQL, "footprint_chunks", params)
        blocks = int(duck.query(con, SQL, "footprint")[0]["blocks"])
        hot_k = max(1, math.ceil(HOT_SHARE * blocks)) if blocks else 0
        out[scope] = (blocks, hot_k, top_sum(start_counts(con, params), hot_k))
    return out


def start_counts(con: Any, params: dict[str, Any]) -> Counter[int]:
    """How many blocks had each number of starts (start_counts.sql, unpacked)."""
    rows = con.execute(load_sql(SQL, "start_counts"), params).fetchnumpy()
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
