"""The quarterly view of a fleet: per service, the spread of the headline figures across its hosts
and days, and the hosts that stand out.

Every figure is read from a fingerprint document (iofp's own measurement; nothing is recomputed
here): IOPS (the whole trace's), the commit p99 (the most frequent fsync-family call's p99; the
block flush p99 where a trace has no sync table), the flush p99 (block flush requests) and the
peak/mean of IOPS over 1 s bins. The spreads are nearest-rank percentiles over host-days.

An outlier is a host whose median commit (or flush) p99 over its days is OUTLIER_RATIO times the
median of its peers' (the service's other hosts). Its own IOPS against its peers' tell why: at
about the same load (within IOPS_SAME) the device is slower (a bad disk); at a higher load the
workload is harder there.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.markup import escape
from rich.table import Table

OUTLIER_RATIO = 3.0
IOPS_SAME = 1.5  # a host's IOPS within 1.5x of its peers' is the same load
FIGURES = {  # key: (label, unit)
    "iops": ("IOPS", ""),
    "commit_p99_us": ("commit p99", "µs"),
    "flush_p99_us": ("flush p99", "µs"),
    "peak_to_mean": ("peak/mean 1s", "x"),
}
LATENCIES = ("commit_p99_us", "flush_p99_us")
KIND = "iofp-fleet-view"  # the view's JSON says what it is: iofp report draws it


def load(path: Path | str) -> dict[str, Any] | None:
    """The fleet view JSON at `path` (`iofp fleet --json`: a file, or an s3:// object), or None when
    it is not one; read as every JSON artifact is (iofp/artifact_json.py: bounded, its text one line)."""
    from iofp import artifact_json, objstore

    if (url := objstore.url_of(path)) is not None:
        if not url.key.endswith(".json") or objstore.head(url) is None:
            return None
    else:
        try:
            with open(path, "rb") as f:
                if b'"kind": "iofp-fleet-view"' not in f.read(64):
                    return None
        except OSError:
            return None
    view = artifact_json.load(path, "result", "write it again with iofp fleet --json")
    return view if isinstance(view, dict) and view.get("kind") == KIND else None


def headline(doc: dict[str, Any]) -> dict[str, float | None]:
    """The headline figures of one fingerprint document (its whole trace)."""
    w = doc["whole"]
    lat = w.get("latency") or {}
    flush = (lat.get("flush") or {}).get("p99_us")
    calls = w["durability"]["sync_calls"] or {}
    top = max(calls.values(), key=lambda c: c["calls"], default=None)
    commit = top["p99_us"] if top and top["calls"] else flush
    burst = (w.get("burstiness") or {}).get("1s") or {}
    return {"iops": w["intensity"]["iops"], "commit_p99_us": commit, "flush_p99_us": flush,
            "peak_to_mean": burst.get("peak_to_mean")}  # fmt: skip


@dataclass
class Spread:
    n: int
    min: float
    p25: float
    median: float
    p75: float
    max: float


def spread(values: list[float]) -> Spread | None:
    if not values:
        return None
    q = np.percentile(np.array(values, dtype=float), [0, 25, 50, 75, 100], method="inverted_cdf")
    return Spread(len(values), *(float(x) for x in q))


@dataclass
class Outlier:
    service: str
    host: str
    figure: str
    host_median: float
    peers_median: float
    ratio: float
    iops_ratio: float | None
    why: str


def _host_medians(rows: list[dict[str, Any]], key: str) -> dict[str, float]:
    by_host: dict[str, list[float]] = {}
    for r in rows:
        if (v := r["figures"].get(key)) is not None:
            by_host.setdefault(r["host"], []).append(v)
    return {h: statistics.median(vs) for h, vs in by_host.items()}


def outliers(service: str, rows: list[dict[str, Any]]) -> list[Outlier]:
    out = []
    iops = _host_medians(rows, "iops")
    for key in LATENCIES:
        med = _host_medians(rows, key)
        for host, v in sorted(med.items()):
            peers = [m for h, m in med.items() if h != host]
            if not peers or statistics.median(peers) <= 0:
                continue
            ratio = v / statistics.median(peers)
            if ratio < OUTLIER_RATIO:
                continue
            peer_iops = [m for h, m in iops.items() if h != host]
            ir = iops[host] / statistics.median(peer_iops) if host in iops and peer_iops else None
            same = ir is not None and 1 / IOPS_SAME <= ir <= IOPS_SAME
            why = ("the device: slower at its peers' load (a bad disk?)" if same
                   else "the workload: its load differs from its peers'")  # fmt: skip
            out.append(Outlier(service, host, key, v, statistics.median(peers), ratio, ir, why))
    return out


def quarterly(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The view of a fleet run's rows (fleet.job.fingerprint_task): spreads per service, outliers,
    and the traces that could not be read."""
    good = [{**r, "figures": headline(r["doc"])} for r in rows if r["status"] != "unreadable"]
    services: dict[str, Any] = {}
    found: list[Outlier] = []
    for service in sorted({r["service"] for r in good}):
        mine = [r for r in good if r["service"] == service]
        figures = {k: spread([v for r in mine if (v := r["figures"][k]) is not None]) for k in FIGURES}
        services[service] = {
            "hosts": len({r["host"] for r in mine}),
            "host_days": len(mine),
            "dates": [min(r["date"] for r in mine), max(r["date"] for r in mine)],
            "figures": {k: asdict(s) if s else None for k, s in figures.items()},
        }
        found += outliers(service, mine)
    return {
        "kind": KIND,
        "traces": len(rows),
        "made": sum(r["status"] == "made" for r in rows),
        "current": sum(r["status"] == "current" for r in rows),
        "unreadable": [{"trace": r["trace"], "error": r["error"]} for r in rows
                       if r["status"] == "unreadable"],
        "services": services,
        "outliers": [asdict(o) for o in found],
        "rule": f"outlier: a host's median p99 >= {OUTLIER_RATIO:g}x its peers' median; the device when "
        f"its IOPS are within {IOPS_SAME:g}x of theirs",
        "host_days": [{k: r[k] for k in ("trace", "host", "service", "date", "figures")} for r in good],
    }


def _num(v: float, unit: str) -> str:
    if unit == "x":
        return f"{v:.2f}"
    return f"{v:,.0f}" if v >= 100 else f"{v:,.1f}"


def render(view: dict[str, Any], console: Console) -> None:
    """The view at 80 columns: a table per service, then the outliers and the unreadable traces."""
    console.print(f"{view['traces']} traces: {view['made']} fingerprinted, {view['current']} current, "
                  f"{len(view['unreadable'])} unreadable")  # fmt: skip
    for service, s in view["services"].items():
        title = f"{service}: {s['hosts']} hosts, {s['host_days']} host-days, {s['dates'][0]}..{s['dates'][1]}"
        t = Table(box=None, pad_edge=False, header_style="bold underline")
        for col in ("figure", "min", "p25", "median", "p75", "max"):
            t.add_column(col, justify="left" if col == "figure" else "right", no_wrap=True)
        for key, (label, unit) in FIGURES.items():
            sp = s["figures"][key]
            cells = [_num(sp[c], unit) for c in ("min", "p25", "median", "p75", "max")] if sp else ["-"] * 5
            t.add_row(f"{label} {unit}".strip(), *cells)
        console.print()
        console.print(escape(title), style="bold")  # a table's own title wraps at the table's width
        console.print(t)
    console.print()
    for o in view["outliers"]:
        label = FIGURES[o["figure"]][0]
        console.print(escape(
            f"outlier: {o['service']} {o['host']}: {label} {o['host_median']:,.0f} µs, "
            f"{o['ratio']:.1f}x its peers' {o['peers_median']:,.0f} µs: {o['why']}"
        ))  # fmt: skip
    if not view["outliers"]:
        console.print(f"no outliers ({view['rule']})")
    for u in view["unreadable"]:
        console.print(escape(f"unreadable: {u['error']}"), style="red")
