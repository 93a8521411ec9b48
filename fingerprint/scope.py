"""One scope's summary (a `fingerprint_doc.Scope`) from the per-scope query results compute gathers.

Each part of the document has its own small builder here, reading the rows of the queries in
fingerprint/sql (already run once for every scope) and the frame the scope is summarised against.
Counting is iostat's: I/Os, IOPS, MB/s, read share and mean size are of data requests (reads,
writes, discards); flushes are counted on their own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from fingerprint.classify import classify_bound, classify_shape
from fingerprint.frame import Frame
from iofp import fingerprint_doc as doc

# vscsiStats bucket limits (vscsiStats, as ESX documents its histograms): a bucket
# counts values <= its limit; one more bucket counts everything above the last limit.
BINS: dict[str, list[float]] = {
    "io_length_bytes": [512, 1024, 2048, 4095, 4096, 8191, 8192, 16383, 16384, 32768, 49152, 65535, 65536,
                        81920, 131072, 262144, 524288],
    "seek_lbn": [-500000, -100000, -50000, -10000, -5000, -1000, -500, -128, -64, -32, -16, -8, -6, -4, -2,
                 -1, 0, 1, 2, 4, 6, 8, 16, 32, 64, 128, 500, 1000, 5000, 10000, 50000, 100000, 500000],
    "latency_us": [1, 10, 100, 500, 1000, 5000, 15000, 30000, 50000, 100000],
    "outstanding_ios": [1, 2, 4, 6, 8, 12, 16, 20, 24, 28, 32, 64],
    "interarrival_us": [1, 10, 100, 500, 1000, 5000, 15000, 30000, 50000, 100000],
}  # fmt: skip
BURST_WIDTHS_NS = {"10ms": 10_000_000, "100ms": 100_000_000, "1s": 1_000_000_000}
# The headline latency (`latency.all`, the summary's p50/p99/p99.9, the bound's and diff's p99) is
# over reads and writes: the requests that carry data and that an application waits on. A flush is
# a zero-byte cache drain that completes in a few µs on a write-back cache (or ms on a disk); with
# fsync=1 it is half the requests and would halve the apparent tail. Discards are deallocation hints
# whose completion time is the device's unmap housekeeping. Both keep their own `latency.flush` /
# `latency.discard` entry (and fsync latency as the application saw it is under `durability`).
# The percentiles (fingerprint/quantiles.py) and the SQL (scope_hists, scope_stats, timeline) apply the
# same rule.
DATA_LATENCY_OPS = ("read", "write")


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def summarise(f: Frame, name: str, parts: dict[str, Any]) -> doc.Scope:
    """The summary of scope `name`, whose rows the queries in `parts` have already counted."""
    st = parts["stats"][name]
    seconds = f.seconds(name)
    out = doc.Scope(
        name=name,
        windows=len(f.windows(name)),
        seconds=seconds,
        requests=int(st["requests"]),
        ios=int(st["data_ios"]),
        bytes=int(st["bytes"]),
        devices=int(st["devices"]),
        intensity=doc.Intensity(
            iops=ratio(st["data_ios"], seconds),
            mbps=ratio(st["bytes"] / 1e6, seconds),
            # none counted is not "no flushes" when the trace could not have recorded one (imports)
            flushes_per_s=ratio(st["flushes"], seconds) if _flags_known(st) else None,
        ),
        mix=_mix(st),
        size=_size(st, name, parts),
        sequential=_sequential(st, parts["device"].get(name, {}), parts["arrival"].get(name, {}),
                               _per_process(parts["process_order"], name)),
        seek=_seek(parts["device"].get(name, {})),
        inflight=_inflight(st, name, parts),
        interarrival=_interarrival(parts["arrival"].get(name, {})),
        burstiness=_burstiness(f, name, parts["burst"]),
        durability=_durability(st, seconds, parts["gaps"].get(name, {}), parts["syncs"].get(name, [])),
        latency=_latency(st, name, parts),
        queue_latency=parts["latency"].queue.get(name),
        app_latency=parts["latency"].app.get(name),
        footprint=_footprint(parts["footprint"].get(name), st),
        top_processes=[_process(p, name, parts) for p in parts["procs"].get(name, [])],
        shape=doc.Shape("", {}, ""),
        bound=doc.Bound("", "", "", {}),
    )
    for call, sc in out.durability.sync_calls.items():
        sc.buckets = parts["latency"].sync_buckets.get((name, call))
    out.shape = classify_shape(out)
    out.bound = classify_bound(out)
    return out


def _hist(raw: dict | None, limits: list[float]) -> doc.Histogram | None:
    """DuckDB's histogram map -> limits and counts (one more count, for '> last')."""
    if raw is None:
        return None
    counts = [0] * (len(limits) + 1)
    index = {float(v): i for i, v in enumerate(limits)}
    for k, n in raw.items():
        counts[index.get(float(k), len(limits))] += int(n)
    return doc.Histogram(limits, counts)


def _op_hists(parts: dict[str, Any], name: str, hist: str, limits: str) -> doc.OpHistograms:
    def one(op: str) -> doc.Histogram | None:
        return _hist(parts["hists"].get((name, hist, op)), BINS[limits])

    return doc.OpHistograms(all=one("all"), read=one("read"), write=one("write"))


def _mix(st: dict[str, Any]) -> doc.Mix:
    return doc.Mix(
        reads=st["reads"],
        writes=st["writes"],
        discards=st["discards"],
        flushes=st["flushes"],
        read_share=ratio(st["reads"], st["data_ios"]),
        read_share_bytes=ratio(st["read_bytes"], st["bytes"]),
        read_bytes=st["read_bytes"],
        write_bytes=st["write_bytes"],
        discard_bytes=st["discard_bytes"],
    )


def _size(st: dict[str, Any], name: str, parts: dict[str, Any]) -> doc.Size:
    median = (parts["quantiles"].get((name, "size", "all")) or {}).get("p50")
    return doc.Size(
        mean_bytes=ratio(st["bytes"], st["data_ios"]),
        median_bytes=None if median is None else float(median),
        not_4k_multiple_share=ratio(st["not_4k_sized"], st["sized_ios"]),
        not_4k_aligned_share=ratio(st["not_4k_aligned"], st["sized_ios"]),
        hist=_op_hists(parts, name, "size", "io_length_bytes"),
    )


def _per_process(order: dict[tuple[str, int], dict[str, Any]], name: str) -> tuple[int, int] | None:
    """(sized requests with a pid, those sequential within their process on their device), or None
    when the trace names no process."""
    rows = [r for (scope, _), r in order.items() if scope == name]
    return (sum(r["sized"] for r in rows), sum(r["seq_ios"] for r in rows)) if rows else None


def _process(p: dict[str, Any], name: str, parts: dict[str, Any]) -> doc.Process:
    order = parts["process_order"].get((name, p["pid"]))
    seq = None if order is None else ratio(order["seq_ios"], order["sized"])
    return doc.Process(**p, sequential_share=seq, sync_calls=parts["process_syncs"].get((name, p["pid"]), 0))


def _sequential(
    st: dict[str, Any], dev: dict[str, Any], arrival: dict[str, Any], per_process: tuple[int, int] | None
) -> doc.Sequential:
    sized, seq = int(st["sized_ios"]), int(dev.get("seq_ios") or 0)
    runs = sized - seq
    return doc.Sequential(
        share=ratio(seq, sized),
        share_per_process=None if per_process is None else ratio(per_process[1], per_process[0]),
        share_any_device=ratio(arrival.get("seq_any_ios") or 0, sized),
        read_share=ratio(dev.get("seq_reads") or 0, st["reads"]),
        write_share=ratio(dev.get("seq_writes") or 0, st["writes"]),
        runs=runs,
        mean_run_ios=ratio(sized, runs),
        mean_run_bytes=ratio(st["sized_bytes"], runs),
    )


def _seek(dev: dict[str, Any]) -> doc.Seek:
    limits = BINS["seek_lbn"]
    return doc.Seek(
        median_abs_lbn=dev.get("median_abs_lbn"),
        hist=doc.OpHistograms(
            all=_hist(dev.get("seek_all"), limits),
            read=_hist(dev.get("seek_read"), limits),
            write=_hist(dev.get("seek_write"), limits),
        ),
    )


def _inflight(st: dict[str, Any], name: str, parts: dict[str, Any]) -> doc.Inflight | None:
    if not st["inflight_known"]:
        return None
    q = parts["quantiles"].get((name, "inflight", "all")) or {}
    return doc.Inflight(
        known=st["inflight_known"],
        mean=st["inflight_mean"],
        p99=q.get("p99"),
        max=st["inflight_max"],
        hist=_op_hists(parts, name, "inflight", "outstanding_ios"),
    )


def _interarrival(a: dict[str, Any]) -> doc.Interarrival:
    mean = a.get("iat_mean_ns")
    return doc.Interarrival(
        mean_us=None if mean is None else mean / 1e3,
        cv=ratio(a.get("iat_std_ns"), mean),
        hist=_hist(a.get("iat_hist"), BINS["interarrival_us"]),
    )


def _burstiness(f: Frame, name: str, burst: dict[str, dict[str, dict[str, Any]]]) -> dict[str, doc.Burst]:
    out = {}
    for label, width in BURST_WIDTHS_NS.items():
        c = burst[label].get(name, {"total": 0, "sumsq": 0, "peak": 0})
        nb = bins_spanned(f, name, width)
        mean = c["total"] / nb
        var = float(c["sumsq"]) / nb - mean * mean
        out[label] = doc.Burst(
            bins=nb,
            peak_ios=int(c["peak"]),
            mean_ios=mean,
            peak_to_mean=ratio(c["peak"], mean),
            index_of_dispersion=ratio(max(var, 0.0), mean),
            peak_start_s=None if c.get("peak_bin") is None else int(c["peak_bin"]) * width / 1e9,
        )
    return out


def bins_spanned(f: Frame, name: str, width: int) -> int:
    """How many `width` bins (from the first arrival) the scope covers, empty ones included: the
    union of the bins its windows (clipped to --between for that scope) overlap."""
    if name == "whole":
        return (f.t1 - f.t0) // width + 1  # the traces README's definition
    ks = f.windows(name)
    lo, hi = (t - f.t0 for t in f.span(name))
    a = np.maximum(ks * f.window_ns, lo) // width
    z = np.minimum((ks + 1) * f.window_ns - 1, hi) // width
    keep = z >= a
    a, z = a[keep], z[keep]
    if not len(a):
        return 1
    # a and z rise with k: a bin range overlaps the previous ones only at its start
    reach = np.concatenate([[-1], np.maximum.accumulate(z)[:-1]])
    return max(1, int(np.maximum(z - np.maximum(a, reach + 1) + 1, 0).sum()))


def _flags_known(st: dict[str, Any]) -> bool:
    """Whether the trace records request flags (a capture does; most imports cannot)."""
    return int(st["flags_known"] or 0) > 0 or int(st["flushes"]) > 0


def _durability(
    st: dict[str, Any], seconds: float, gaps: dict[str, Any], syncs: list[dict[str, Any]]
) -> doc.Durability:
    known = _flags_known(st)
    points = int(st["durability_points"]) if known else None

    def us(ns: float | None) -> float | None:
        return None if ns is None else ns / 1e3

    return doc.Durability(
        flags_known=known,
        preflush=st["preflush"] if known else None,
        fua=st["fua"] if known else None,
        sync_writes=st["sync_writes"] if known else None,
        flush_fua_share=ratio(points, st["requests"]),
        sync_write_share=ratio(st["sync_writes"], st["writes_flags_known"]),
        flush_fua_per_s=ratio(points, seconds),
        flush_gap_p50_us=us(gaps.get("p50_ns")),
        flush_gap_p99_us=us(gaps.get("p99_ns")),
        sync_calls={
            s["call"]: doc.SyncCall(
                calls=s["calls"],
                rate_per_s=ratio(s["calls"], seconds),
                p50_us=us(s["p50_ns"]),
                p99_us=us(s["p99_ns"]),
                mean_us=us(s["mean_ns"]),
            )
            for s in syncs
        },
        commits_per_s=ratio(sum(int(s["calls"]) for s in syncs), seconds) if syncs else None,
    )


def _latency(st: dict[str, Any], name: str, parts: dict[str, Any]) -> dict[str, doc.OpLatency] | None:
    counts = {"all": st["reads"] + st["writes"], "read": st["reads"], "write": st["writes"],
              "discard": st["discards"], "flush": st["flushes"]}  # fmt: skip
    out = {}
    for op, count in counts.items():
        q = parts["quantiles"].get((name, "lat", op))
        if count and q and q["n"]:
            out[op] = doc.OpLatency(
                ios=q["n"], mean_us=st[f"lat_mean_{op}"] / 1e3, p50_us=q["p50"] / 1e3, p99_us=q["p99"] / 1e3,
                p99_9_us=q["p99_9"] / 1e3, max_us=st[f"lat_max_{op}"] / 1e3,
                hist_us=_hist(parts["hists"].get((name, "lat", op)), BINS["latency_us"]),
                buckets=parts["latency"].buckets.get((name, op)),
            )  # fmt: skip
    return out or None


def _footprint(fp: tuple[int, int, int] | None, st: dict[str, Any]) -> doc.Footprint | None:
    if fp is None:
        return None
    blocks, hot_k, hot = fp
    return doc.Footprint(
        blocks_4k=blocks,
        bytes=blocks * 4096,
        hot_1pct_blocks=hot_k,
        hot_1pct_io_share=ratio(hot, st["sized_ios"]),
    )
