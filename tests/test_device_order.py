"""fingerprint/device_order.py's vectorised parts against the plain rules they stand for: the |seek|
buckets of the median, the seek histogram's bin by lookup, the pids' groups (offsets from the lowest
pid, or dictionary-encoded) and the seek's division toward zero. The figures they make are held by
tests/test_fingerprint_reference.py; these reach the edges those traces may not."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fingerprint import device_order as do


def test_bucket_is_the_coarse_rule_at_every_edge():
    edges = np.array([1 << s for s in (10, 20, 30, 32, 40, 53)], np.int64)
    v = np.concatenate([np.arange(4096), edges - 1, edges, edges + 1, [1023 << 30, (1024 << 30) + 5]])
    want = np.where(v < 1024, v, np.where(v < 1 << 20, 1024 + (v >> 10), np.where(
        v < 1 << 30, 2048 + (v >> 20), 3072 + np.minimum(v >> 30, 1023))))  # fmt: skip
    assert (do.bucket(v) == want).all()
    small = v < 1 << 32
    assert (do.bucket(v[small].astype(np.uint32)) == want[small]).all()
    for b in set(range(do.BUCKETS)) - {1024, 2048, 3072}:  # every bucket's span holds its values
        lo, hi = do.bucket_span(b)
        assert do.bucket(np.array([lo, hi], np.int64)).tolist() == [b, b]
        assert hi == do.OVER or do.bucket(np.array([hi + 1], np.int64))[0] > b


def test_the_histogram_bin_by_lookup_is_the_first_limit_at_or_above():
    seek = np.concatenate([np.arange(-600_000, 600_001), [-(2**62), 2**62]]).astype(np.int64)
    got = do.HIST_BIN[np.clip(seek, do.LIMITS[0], do.LIMITS[-1] + 1) - do.LIMITS[0]]
    assert (got == np.searchsorted(do.LIMITS, seek)).all()


def test_the_seek_divides_toward_zero():
    d = np.array([0, 1, 511, 512, 513, -1, -511, -512, -513, -1024, -1025, 2**62, -(2**62)], np.int64)
    assert ((d + ((d >> 63) & 511)) >> 9).tolist() == [int(x / 512) if abs(x) < 2**52 else x // 512 if x > 0
                                                         else -(-x // 512) for x in d.tolist()]  # fmt: skip


def test_pid_groups_name_every_row_s_process():
    cases = [
        pa.array([105, 100, 105, 109, 100], pa.int32()),  # a narrow range: offsets from the lowest
        pa.array([7, 4_000_000, 7, 123_456], pa.int32()),  # a wide one: dictionary-encoded
        pa.array([101, None, 103, None, 101], pa.int32()),  # some without a pid
    ]
    for pid in cases:
        idx, uniq = do.pid_groups(pid, 4 * len(pid) + 4096)
        want = pid.to_pylist()
        assert [int(uniq[i]) if i >= 0 else None for i in idx.tolist()] == want
    assert do.pid_groups(pa.array([None, None], pa.int32()), 4096) is None
