"""Name a scope's workload shape and the resource that bounds it, with the numbers behind it.

Both rules are deliberately simple decision tables over features already in the fingerprint, so a
reader can check a verdict by hand against the JSON.

Shape (first match wins; "small" = mean size <= 32 KiB, "large" = mean size >= 64 KiB,
"sequential" = sequential share >= 0.5, "read-mostly"/"write-mostly" = >= 70% of the data I/Os,
i.e. not counting flushes, which would otherwise dilute the write share of a commit workload):
  1. batch sequential scan        read-mostly, sequential, large
  2. small-block sequential scan  read-mostly, sequential, mean < 64 KiB (a log or table read without
                                  readahead, a backup or replication reader: streaming, not point reads)
  3. log append                   write-mostly, sequential
  4. mixed sequential streams     sequential, neither read- nor write-mostly (a scan beside a log)
  5. OLTP point-write/commit      write-mostly, random, small (flush/FUA or sync calls make it "commit")
  6. OLTP point-read              read-mostly, random, small
  7. mixed OLTP                   random, small or medium (mean < 64 KiB)
  8. large random / mixed         random, anything else
"random" is sequential share < 0.5: the OLTP shapes are point accesses, so a stream of small
sequential requests (which a device serves from readahead and merges) is never one of them.

Bound (first match wins):
  1. fsync-latency-bound  durability points (fsync-family calls, else flush ops + preflush/FUA
     writes) at >= 1/s and commit-path busy time = rate x mean fsync latency >= 20% of wall time
     (Little's law: the committers spend that share of the time waiting on the device). Where
     latency is known that measured share decides alone: 500 commits/s at 40 µs is 2% of the time,
     and commits that cheap do not set the pace however many of the I/Os they are. Only a trace
     without latency falls back to durability points >= 20% of I/Os (commits dominate the stream,
     so a committer may wait on each flush in turn), and says it is demand-side.
  2. throughput-bound     mean size >= 64 KiB, or sequential share >= 0.5 with mean size >= 32 KiB:
     bytes, not operations, are the demand.
  3. IOPS-bound           otherwise: small random operations are the demand.
A trace without latency only shows demand: the verdict says "demand-side" and cannot tell whether
the device, rather than the application, set the pace.
"""

from __future__ import annotations

from typing import Any

KIB = 1024
COMMIT_BUSY = 0.2  # share of wall time spent in fsync (or flush) from which commits set the pace
COMMIT_SHARE = 0.2  # without latency: share of I/Os that are durability points, as a stand-in


def classify_shape(s: dict[str, Any]) -> dict[str, Any]:
    m = s["mix"]
    data = m["reads"] + m["writes"] + m["discards"]
    rs = m["reads"] / data if data else 0.0
    ws = m["writes"] / data if data else 0.0
    size = s["size"]["mean_bytes"] or 0.0
    seq = s["sequential"]["share"] or 0.0
    d = s["durability"]
    commit = bool((d["flush_fua_share"] or 0) >= 0.05 or d["sync_calls"])
    sequential = seq >= 0.5
    if sequential and rs >= 0.7:
        name = "batch sequential scan" if size >= 64 * KIB else "small-block sequential scan"
    elif sequential and ws >= 0.7:
        name = "log append"
    elif sequential:
        name = "mixed sequential streams"
    elif ws >= 0.7 and size <= 32 * KIB:
        name = "OLTP point-write/commit" if commit else "OLTP point-write"
    elif rs >= 0.7 and size <= 32 * KIB:
        name = "OLTP point-read"
    elif size < 64 * KIB:
        name = "mixed OLTP"
    else:
        name = "large random / mixed"
    return {
        "class": name,
        "basis": {
            "read_share_of_data_ios": rs,
            "write_share_of_data_ios": ws,
            "mean_size_bytes": size,
            "sequential_share": seq,
            "durability_share": d["flush_fua_share"],
            "sync_calls": bool(d["sync_calls"]),
        },
        "rule": "see fingerprint/classify.py: read/write-mostly >= 70%, sequential >= 0.5 (random below), "
        "small <= 32 KiB, large >= 64 KiB",
    }


def classify_bound(s: dict[str, Any]) -> dict[str, Any]:
    d = s["durability"]
    lat = s["latency"] or {}
    size = s["size"]["mean_bytes"] or 0.0
    seq = s["sequential"]["share"] or 0.0
    service_known = bool(lat)

    sync_calls = d["sync_calls"]
    commit_rate = d["commit_rate_per_s"] if sync_calls else d["flush_rate_per_s"]
    # The latency a committer waits on: fsync as the application saw it, else the device latency
    # of the flush/FUA requests is not separated here, so the write p50 stands in for it.
    fsync_p50_us = fsync_p99_us = fsync_mean_us = None
    if sync_calls:
        main = max(sync_calls.values(), key=lambda c: c["calls"])
        fsync_p50_us, fsync_p99_us, fsync_mean_us = main["p50_us"], main["p99_us"], main["mean_us"]
    elif "flush" in lat:
        f = lat["flush"]
        fsync_p50_us, fsync_p99_us, fsync_mean_us = f["p50_us"], f["p99_us"], f["mean_us"]
    busy = None
    if commit_rate is not None and fsync_mean_us is not None:
        busy = commit_rate * fsync_mean_us / 1e6
    numbers = {
        "iops": s["intensity"]["iops_mean"],
        "mbps": s["intensity"]["mbps_mean"],
        "mean_size_bytes": size,
        "sequential_share": seq,
        "durability_share": d["flush_fua_share"],
        "commit_rate_per_s": commit_rate,
        "fsync_p50_us": fsync_p50_us,
        "fsync_p99_us": fsync_p99_us,
        "fsync_mean_us": fsync_mean_us,
        "commit_busy_share": busy,
        "mean_inflight": (s["inflight"] or {}).get("mean"),
        "latency_p99_us": lat.get("all", {}).get("p99_us"),
    }
    share = d["flush_fua_share"]
    committing = commit_rate is not None and commit_rate >= 1
    commit_heavy = share is not None and share >= COMMIT_SHARE
    # The measured busy share, when there is one, overrules the count: a flush-heavy stream whose
    # flushes return in microseconds is paced by something else (see the docstring).
    fsync_bound = committing and (busy >= COMMIT_BUSY if busy is not None else commit_heavy)
    if fsync_bound:
        verdict = "fsync-latency-bound"
        why = f"{commit_rate:,.0f} commits/s"
        if share is not None:
            why += f", flush/FUA are {share:.0%} of I/Os"
        if busy is not None:
            why += (
                f"; fsync p50 {fsync_p50_us:,.0f} us, p99 {fsync_p99_us:,.0f} us, "
                f"{busy:.0%} of wall time spent in it"
            )
        if numbers["mean_inflight"] is not None:
            why += f"; mean in-flight {numbers['mean_inflight']:.1f}"
        why += ": commit latency, not IOPS or bandwidth, sets the pace"
    elif size >= 64 * KIB or (seq >= 0.5 and size >= 32 * KIB):
        verdict = "throughput-bound"
        why = f"mean size {size / KIB:.0f} KiB, {seq:.0%} sequential: bytes/s is the demand"
    else:
        verdict = "IOPS-bound"
        why = f"mean size {size / KIB:.1f} KiB, {seq:.0%} sequential: operations/s is the demand"
        if numbers["iops"] is not None:
            why += f" ({numbers['iops']:.0f} IOPS mean)"
    if not fsync_bound and committing and commit_heavy and busy is not None:
        why += (
            f"; commits are {share:.0%} of I/Os ({commit_rate:,.0f}/s) but fsync takes {busy:.0%} of wall "
            f"time (mean {fsync_mean_us:,.0f} us), under the {COMMIT_BUSY:.0%} at which commits set the pace"
        )
    if not service_known:
        why += "; demand-side only: the trace has no latency, so whether the device set the pace is unknown"
    return {
        "verdict": verdict,
        "side": "demand+service" if service_known else "demand-only",
        "why": why,
        "numbers": numbers,
    }
