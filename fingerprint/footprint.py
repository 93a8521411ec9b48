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

Where the one pass over the rows in file order runs (fingerprint/arrival.py), the whole trace's
footprint and start counts come from it instead (Blocks): a count of starts and the furthest block
reached per block, in arrays indexed by block, while the blocks touched span at most DENSE_BLOCKS:
the hash aggregate of ~8.4 M groups was a fifth of a 50 M-row fingerprint's time, an array update
per request ~11 ns. The same figures by construction, and tests/test_footprint_sweep.py holds them
against the plain rules; a wider span, or rows out of time order, leave the query to do it.
"""

from __future__ import annotations

import math
import threading
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
DENSE_BLOCKS = 1 << 27  # the widest span of blocks Blocks counts in arrays (5 bytes a block: 640 MiB)
LONG = 255  # a request's blocks past its first held in a byte; longer requests are kept aside
BITS = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)  # ones in a byte


def measure(con: Any, f: Frame, whole: Blocks | None = None) -> dict[str, tuple[int, int, int]]:
    """scope -> (footprint blocks, the hot blocks k, the I/Os starting in the hottest k blocks), for
    'whole' (from `whole`, the one pass's counts, where it kept them) and, with --between,
    'between' (the same pass over the span's rows)."""
    spans = {"whole": (None, None)} | ({"between": (f.lo, f.hi)} if f.lo is not None else {})
    out = {}
    for scope, (lo, hi) in spans.items():
        if scope == "whole" and whole is not None and whole.ok:
            blocks, counts = whole.result()
            whole.drop()  # its arrays let go before the queries after it
            hot_k = max(1, math.ceil(HOT_SHARE * blocks)) if blocks else 0
            out[scope] = (blocks, hot_k, top_sum(counts, hot_k))
            continue
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


class Blocks:
    """Every block's starts and the furthest block a request starting there reaches, counted batch by
    batch in arrays indexed by block (from base): starts in uint32, the blocks past the first in a byte
    (requests longer than LONG blocks kept aside). The arrays grow to the blocks seen; `ok` turns
    False, the arrays let go, where they would span more than DENSE_BLOCKS, where offsets are
    negative or where 2^32 starts could overflow a count (the query then counts the footprint)."""

    def __init__(self) -> None:
        self.ok, self.base, self.rows = True, 0, 0
        self.beside: threading.Thread | None = None  # the sweep, where sweep_beside() started it
        self.swept: tuple[int, Counter[int]] | BaseException | None = None
        self.starts = np.zeros(0, np.uint32)
        self.ext = np.zeros(0, np.uint8)
        self.long: list[tuple[np.ndarray, np.ndarray]] = []  # (first, last) blocks of long requests

    def drop(self) -> None:
        if self.beside is not None:
            self.beside.join()
            self.beside = None
        self.ok, self.swept = False, None
        self.starts, self.ext, self.long = np.zeros(0, np.uint32), np.zeros(0, np.uint8), []

    def add(self, off: np.ndarray, size: np.ndarray) -> None:
        """Count one batch of rows (offsets and sizes in bytes; zero-size rows are no request)."""
        if not self.ok:
            return
        sized = size > 0
        if not sized.all():
            off, size = off[sized], size[sized]
        if not len(off):
            return
        self.rows += len(off)
        lo = off // 4096
        hi = (off + size.astype(np.int64) - 1) // 4096
        first, last = int(lo.min()), int(hi.max())
        if first < 0 or self.rows >= 1 << 32 or not self._cover(first, last):
            self.drop()
            return
        at = lo - self.base
        np.add.at(self.starts, at, np.uint32(1))
        ext = hi - lo
        if (long := ext > LONG).any():
            self.long.append((lo[long], hi[long]))
            np.minimum(ext, LONG, out=ext)
        np.maximum.at(self.ext, at, ext.astype(np.uint8))

    def _cover(self, first: int, last: int) -> bool:
        """Grow the arrays to hold blocks first..last (with room for more beyond where they grow);
        False where that would span more than DENSE_BLOCKS."""
        n = len(self.starts)
        if n and self.base <= first and last < self.base + n:
            return True
        lo, hi = (first, last) if not n else (min(first, self.base), max(last, self.base + n - 1))
        room = (hi - lo + 1) // 16  # untouched pages cost nothing until read
        lo = max(0, lo - room) if first < self.base or not n else lo
        hi = hi + room if last >= self.base + n or not n else hi
        if hi - lo + 1 > DENSE_BLOCKS:
            return False
        starts, ext = np.zeros(hi - lo + 1, np.uint32), np.zeros(hi - lo + 1, np.uint8)
        starts[self.base - lo : self.base - lo + n] = self.starts
        ext[self.base - lo : self.base - lo + n] = self.ext
        self.base, self.starts, self.ext = lo, starts, ext
        return True

    def result(self) -> tuple[int, Counter[int]]:
        """The footprint in blocks, and how many blocks had each number of starts (swept in a thread
        of its own where sweep_beside() started it: its figures, once it is done)."""
        if self.beside is not None:
            self.beside.join()
            self.beside = None
            if isinstance(self.swept, BaseException):
                raise self.swept
        if self.swept is None:
            self.swept = self._sweep()
        assert not isinstance(self.swept, BaseException)
        return self.swept

    def sweep_beside(self) -> None:
        """Start the sweep of the counts (result()) in a thread, while the caller goes on with other
        work: ~0.8 s of one core at any row count (the blocks of the 50 M-row bench's span)."""

        def run() -> None:
            try:
                self.swept = self._sweep()
            except BaseException as e:  # raised again by result()
                self.swept = e

        if self.ok and self.beside is None and self.swept is None:
            self.beside = threading.Thread(target=run, name="footprint-sweep", daemon=True)
            self.beside.start()

    def _sweep(self) -> tuple[int, Counter[int]]:
        """The union of the requests' blocks swept a chunk at a time, block indices relative to the
        chunk in int32 (half the bytes a pass of int64 moves), and the start counts tallied."""
        first, last = (np.concatenate(c) for c in zip(*self.long, strict=True)) if self.long else ([], [])
        first, last = np.asarray(first, np.int64) - self.base, np.asarray(last, np.int64) - self.base
        total, carry = 0, -1
        tally = np.zeros(1, np.int64)
        at = np.arange(min(CHUNK, len(self.starts)), dtype=np.int32)
        for i in range(0, len(self.starts), CHUNK):
            s = self.starts[i : i + CHUNK]
            n = len(s)
            started = s > 0
            # the furthest block a request starting at each block reaches, from i (-1: none starts there)
            reach = at[:n] + self.ext[i : i + n]
            reach[~started] = -1
            if len(first) and (inside := (first >= i) & (first < i + n)).any():
                np.maximum.at(reach, first[inside] - i, (last[inside] - i).astype(np.int32))  # < DENSE_BLOCKS
            before = np.empty_like(reach)  # the furthest reach of the blocks before each one
            before[0] = max(carry - i, -1)
            np.maximum.accumulate(reach[:-1], out=before[1:])
            np.maximum(before, before[0], out=before)
            carry = max(carry, i + int(reach.max()))
            total += n - int(np.count_nonzero(~started & (before < at[:n])))
            b = np.bincount(s)
            if len(b) > len(tally):
                b[: len(tally)] += tally
                tally = b
            else:
                tally[: len(b)] += b
        return total, Counter({c: int(tally[c]) for c in np.flatnonzero(tally).tolist() if c})
