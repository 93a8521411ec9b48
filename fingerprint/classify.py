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
  (0. flushes only                no data requests at all: a trace of cache flushes alone)
"random" is sequential share < 0.5: the OLTP shapes are point accesses, so a stream of small
sequential requests (which a device serves from readahead and merges) is never one of them.

Bound (first match wins):
  0. capped               requests waited before the device had them: by Little's law at least
     WAIT_MIN requests on average, and at least WAIT_SHARE of the application's time. Waiting is the
     application's data calls' total time less their requests' total device time (fingerprint/
     latency.py), over the scope's seconds; without data calls, the requests' total time before
     issue (btt's Q2D). A rate held while requests wait is a ceiling above the device (a cgroup's
     io.max or blkio throttle, a host short of CPU) or at its queue, not the application's demand:
     the same 3,000 IOPS asked for by an application that waits on nothing is IOPS-bound.
  1. fsync-latency-bound  durability points (fsync-family calls, else flush ops + preflush/FUA
     writes) at >= 1/s and commit-path busy time = rate x mean fsync latency >= 20% of wall time
     (Little's law: the committers spend that share of the time waiting on the device). Where
     latency is known that measured share decides alone: 500 commits/s at 40 µs is 2% of the time,
     and commits that cheap do not set the pace however many of the I/Os they are. Only a trace
     without latency falls back to durability points >= 20% of requests (commits dominate the stream,
     so a committer may wait on each flush in turn), and says it is demand-side.
  2. throughput-bound     mean size >= 64 KiB, or sequential share >= 0.5 with mean size >= 32 KiB:
     bytes, not operations, are the demand.
  3. IOPS-bound           otherwise: small random operations are the demand.
A trace without latency only shows demand: the verdict says "demand-side" and cannot tell whether
the device, rather than the application, set the pace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fingerprint.latency import Wait, waiting
from iofp import fingerprint_doc as doc
from iofp.values import share_text

if TYPE_CHECKING:
    from iofp.fingerprint_doc import Scope

KIB = 1024
WAIT_MIN = 1.0  # requests waiting on average (Little's law) from which a ceiling holds the rate
WAIT_SHARE = 0.5  # ... and the share of the application's time they make
# Every shape name classify_shape gives: what a reader of a stored document trusts as iofp's own words.
SHAPE_NAMES = (
    "flushes only", "batch sequential scan", "small-block sequential scan", "log append",
    "mixed sequential streams", "OLTP point-write/commit", "OLTP point-write", "OLTP point-read",
    "mixed OLTP", "large random / mixed",
)  # fmt: skip
COMMIT_BUSY = 0.2  # share of wall time spent in fsync (or flush) from which commits set the pace
COMMIT_SHARE = 0.2  # without latency: share of requests that are durability points, as a stand-in


def classify_shape(s: Scope) -> doc.Shape:
    m = s.mix
    data = m.reads + m.writes + m.discards
    rs = m.reads / data if data else 0.0
    ws = m.writes / data if data else 0.0
    size = s.size.mean_bytes or 0.0
    seq = s.sequential.share or 0.0
    d = s.durability
    commit = bool((d.flush_fua_share or 0) >= 0.05 or d.sync_calls)
    sequential = seq >= 0.5
    if not data:
        name = "flushes only"
    elif sequential and rs >= 0.7:
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
    return doc.Shape(
        name=name,
        basis={
            "read_share_of_data_ios": rs,
            "write_share_of_data_ios": ws,
            "mean_size_bytes": size,
            "sequential_share": seq,
            "durability_share": d.flush_fua_share,
            "sync_calls": bool(d.sync_calls),
        },
        rule="see fingerprint/classify.py: read/write-mostly >= 70%, sequential >= 0.5 (random below), "
        "small <= 32 KiB, large >= 64 KiB",
    )


def _fsync_latency(s: Scope) -> tuple[float | None, float | None, float | None]:
    """p50, p99 and mean of the latency a committer waits on: fsync as the application saw it (the
    most frequent call), else the device latency of the flush requests."""
    calls = s.durability.sync_calls
    if calls:
        main = max(calls.values(), key=lambda c: c.calls)
        return main.p50_us, main.p99_us, main.mean_us
    flush = (s.latency or {}).get("flush")
    if flush is not None:
        return flush.p50_us, flush.p99_us, flush.mean_us
    return None, None, None


def classify_bound(s: Scope) -> doc.Bound:
    d = s.durability
    lat = s.latency or {}
    size = s.size.mean_bytes or 0.0
    seq = s.sequential.share or 0.0
    service_known = bool(lat)
    wait = waiting(s)
    commit_rate = d.commits_per_s if d.sync_calls else d.flush_fua_per_s
    p50, p99, mean = _fsync_latency(s)
    busy = commit_rate * mean / 1e6 if commit_rate is not None and mean is not None else None
    numbers = {
        "iops": s.intensity.iops,
        "mbps": s.intensity.mbps,
        "mean_size_bytes": size,
        "sequential_share": seq,
        "durability_share": d.flush_fua_share,
        "commit_rate_per_s": commit_rate,
        "fsync_p50_us": p50,
        "fsync_p99_us": p99,
        "fsync_mean_us": mean,
        "commit_busy_share": busy,
        "mean_inflight": s.inflight.mean if s.inflight else None,
        "latency_p99_us": lat["all"].p99_us if "all" in lat else None,
        **_wait_numbers(s, wait),
    }
    share = d.flush_fua_share
    committing = commit_rate is not None and commit_rate >= 1
    commit_heavy = share is not None and share >= COMMIT_SHARE
    # The measured busy share, when there is one, overrules the count: a flush-heavy stream whose
    # flushes return in microseconds is paced by something else (see the docstring).
    fsync_bound = committing and (busy >= COMMIT_BUSY if busy is not None else commit_heavy)
    if wait is not None and wait.requests >= WAIT_MIN and wait.share >= WAIT_SHARE:
        verdict, why = "capped", _capped_why(s, wait)
    elif fsync_bound:
        verdict = "fsync-latency-bound"
        why = f"{commit_rate:,.0f} commits/s"
        if share is not None:
            why += f", flush/FUA are {share:.0%} of requests"
        if busy is not None:
            spent = share_text(busy, COMMIT_BUSY)
            why += f"; fsync p50 {p50:,.0f} µs, p99 {p99:,.0f} µs, {spent} of wall time spent in it"
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
            why += f" ({numbers['iops']:,.0f} IOPS mean)"
    if verdict != "capped" and wait is not None:
        why += f"; the device keeps up ({wait.requests:.2f} requests waiting {wait.where})"
    if not fsync_bound and committing and commit_heavy and busy is not None:
        why += (
            f"; commits are {share:.0%} of requests ({commit_rate:,.0f}/s) but fsync takes "
            f"{share_text(busy, COMMIT_BUSY)} of wall time (mean {mean:,.0f} µs), under the "
            f"{COMMIT_BUSY:.0%} at which commits set the pace"
        )
    if not service_known:
        why += "; demand-side only: the trace has no latency, so whether the device set the pace is unknown"
    return doc.Bound(
        verdict=verdict, side="demand+service" if service_known else "demand-only", why=why, numbers=numbers
    )


def _wait_numbers(s: Scope, w: Wait | None) -> dict[str, float | None]:
    """How many requests waited before the device, and the latency the application saw."""
    app = (s.app_latency or {}).get("all")
    queue = (s.queue_latency or {}).get("all")
    return {
        "waiting_requests": None if w is None else w.requests,
        "waiting_share": None if w is None else w.share,
        "app_latency_mean_us": app.mean_us if app else None,
        "app_latency_p99_us": app.p99_us if app else None,
        "queue_latency_p99_us": queue.p99_us if queue else None,
    }


def _capped_why(s: Scope, w: Wait) -> str:
    rate = f"{s.intensity.iops:,.0f} IOPS" if s.intensity.iops is not None else "its rate"
    if (s.size.mean_bytes or 0) >= 64 * KIB and s.intensity.mbps is not None:
        rate += f" ({s.intensity.mbps:,.1f} MB/s)"
    why = f"held at {rate} with {w.requests:.1f} requests waiting {w.where}"
    if w.where == "above the device":
        why += " (a cgroup's I/O limit, a throttle, or a host short of CPU)"
    else:
        why += " (the device takes no more: its ceiling)"
    why += ": a cap, not your demand"
    dev, app = (s.latency or {}).get("all"), (s.app_latency or {}).get("all")
    if app is not None and dev is not None:
        why += f"; the application waits p99 {_us(app.p99_us)}, the device answers p99 {_us(dev.p99_us)}"
    return why


def _us(v: float) -> str:
    return f"{v / 1e3:,.1f} ms" if v >= 10_000 else f"{v:,.0f} µs"
