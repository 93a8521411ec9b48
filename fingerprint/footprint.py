"""The footprint (distinct 4 KiB blocks touched) and the hot-block share (the I/Os on its hottest 1%
of blocks) of the whole trace and of a --between span; not per regime (each needs every block).

Two passes over the sized requests: block masks per 64-block chunk (footprint.sql), and how many
blocks had each number of requests start in them (start_counts.sql, four blocks' counts packed in
one sum: a quarter of the hash table a count per block needs). The hottest k blocks' I/Os are then
the top of those counts, summed here.
"""

from __future__ import annotations

import math
from typing import Any

from fingerprint.frame import Frame
from iofp import duck

SQL = "fingerprint.sql"
HOT_SHARE = 0.01
PACKED_LIMIT = 2**31  # start_counts.sql's 32-bit fields hold any block's count below this many requests


def measure(con: Any, f: Frame, sized_ios: int) -> dict[str, tuple[int, int, int]]:
    """scope -> (footprint blocks, the hot blocks k, the I/Os starting in the hottest k blocks), for
    'whole' and, with --between, 'between'."""
    params = {"lo": f.lo, "hi": f.hi, "device": f.options.device}
    [foot] = duck.query(con, SQL, "footprint", params)
    counts: dict[str, dict[int, int]] = {}
    name = "start_counts" if sized_ios < PACKED_LIMIT else "start_counts_exact"
    for r in duck.query(con, SQL, name, params):
        counts.setdefault(r["scope"], {})[int(r["starts"])] = int(r["blocks"])
    scopes = {"whole": int(foot["blocks"])}
    if f.lo is not None:
        scopes["between"] = int(foot["blocks_between"])
    out = {}
    for scope, blocks in scopes.items():
        hot_k = max(1, math.ceil(HOT_SHARE * blocks)) if blocks else 0
        out[scope] = (blocks, hot_k, top_sum(counts.get(scope, {}), hot_k))
    return out


def top_sum(blocks_by_count: dict[int, int], k: int) -> int:
    """The sum of the k largest per-block counts, from how many blocks have each count."""
    total = 0
    for count in sorted(blocks_by_count, reverse=True):
        take = min(k, blocks_by_count[count])
        total, k = total + take * count, k - take
        if not k:
            break
    return total
