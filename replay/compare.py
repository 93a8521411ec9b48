"""`iofp compare`: one row per candidate device, from replay results, for a procurement review.

Per result: demanded vs achieved IOPS and MB/s; p50/p99/p99.9 latency per op from iofp's capture of the
replay (nearest rank, sql/compare_latency.sql), or from fio's JSON clat percentiles when there is no
capture (fio 3.33 inflates async clat at iodepth > 1, so the capture is preferred and the
source is shown); flush latency from the captured flush requests and the fsync latency fio measured;
the commit rate (flushes per second achieved); the fidelity verdict; and the SLO verdict.

The SLO is iofp/slo.py's grammar (the one every command uses); a device passes when every term holds.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from iofp import duck
from iofp.contract import open_trace
from iofp.errors import IofpError
from iofp.slo import Slo, format_ns
from replay import results

OPS = ("read", "write", "flush")
PCTS = {"p50": "50.000000", "p99": "99.000000", "p99.9": "99.900000"}


@dataclass
class Row:
    result: str
    device: str
    demanded_iops: float
    demanded_mbps: float
    achieved_iops: float | None
    achieved_mbps: float | None
    latency_source: str
    latency_ns: dict[str, dict[str, float | None]] = field(default_factory=dict)  # op -> pct -> ns
    fsync_p50_ns: float | None = None
    fsync_p99_ns: float | None = None
    commits_per_s: float | None = None
    fidelity: str = "not measured"
    slo: str = "n/a"
    slo_failures: list[str] = field(default_factory=list)

    def latency(self, op: str, pct: str) -> float | None:
        if op in ("fsync", "commit"):
            return {"p50": self.fsync_p50_ns, "p99": self.fsync_p99_ns}.get(pct)
        return (self.latency_ns.get(op) or {}).get(pct)


def compare(paths: list[Path], slo: Slo) -> list[Row]:
    rows = []
    for p in paths:
        root, rec = results.load(p)
        row = _row(root, rec)
        _judge_slo(row, slo)
        rows.append(row)
    return rows


def _row(root: Path, rec: dict[str, Any]) -> Row:
    conv, fio = rec["conversion"], rec["fio"].get("summary") or {}
    if fio and "span_ms" not in fio:  # recorded before span_ms: from fio's kept JSON, else job_runtime
        doc = results.parse_fio_json(raw.read_text()) if (raw := root / "fio.json").is_file() else None
        fio = results.fio_summary(doc) if doc else {**fio, "span_ms": fio.get("job_runtime_ms")}
    span_s = max(conv["duration_us"] / 1e6, 1e-6)
    row = Row(
        result=str(root),
        device=rec["labels"].get("device") or rec["target"].get("name") or Path(rec["target"]["path"]).name,
        demanded_iops=conv["kept"] / span_s,
        demanded_mbps=conv["bytes"] / span_s / 1e6,
        achieved_iops=None,
        achieved_mbps=None,
        latency_source="fio",
    )
    fid = rec.get("fidelity") or {}
    if fid.get("status") == "measured":
        row.fidelity = f"{fid['verdict']}, {fid['timing']}"
    sync = fio.get("sync") or {}
    row.fsync_p50_ns = (sync.get("lat_percentile_ns") or {}).get(PCTS["p50"])
    row.fsync_p99_ns = (sync.get("lat_percentile_ns") or {}).get(PCTS["p99"])
    capture = root / "capture"
    if fid.get("status") == "measured" and capture.is_dir():
        _from_capture(row, capture)
    else:
        _from_fio(row, fio)
    return row


def _from_capture(row: Row, capture: Path) -> None:
    con = duck.connect()
    try:
        open_trace(capture).relation(con).create_view("io")
        per_op = duck.query(con, "replay.sql", "compare_latency", {"comm": "fio"})
    except IofpError:
        return _from_fio(row, {})
    finally:
        con.close()
    if not per_op:
        return None
    row.latency_source = "capture"
    first, last = min(r["first_ns"] for r in per_op), max(r["last_ns"] for r in per_op)
    span_s = max((last - first) / 1e9, 1e-6)
    row.achieved_iops = sum(r["ios"] for r in per_op) / span_s
    row.achieved_mbps = sum(r["bytes"] for r in per_op if r["op"] in ("read", "write")) / span_s / 1e6
    for r in per_op:
        row.latency_ns[r["op"]] = {"p50": r["p50_ns"], "p99": r["p99_ns"], "p99.9": r["p999_ns"]}
        if r["op"] == "flush":
            row.commits_per_s = r["ios"] / span_s
    return None


def _from_fio(row: Row, fio: dict[str, Any]) -> None:
    # Not job_runtime: fio sums it over the jobs of a multi-stream replay (results.fio_summary).
    runtime_s = (fio.get("span_ms") or 0) / 1e3
    if runtime_s > 0:
        ios = sum((fio.get(d) or {}).get("total_ios", 0) for d in ("read", "write", "trim", "sync"))
        row.achieved_iops = ios / runtime_s
        row.achieved_mbps = (
            sum((fio.get(d) or {}).get("io_bytes", 0) for d in ("read", "write")) / runtime_s / 1e6
        )
        syncs = (fio.get("sync") or {}).get("total_ios", 0)
        row.commits_per_s = syncs / runtime_s if syncs else None
    for d in ("read", "write"):
        pct = (fio.get(d) or {}).get("clat_percentile_ns") or {}
        if (fio.get(d) or {}).get("total_ios"):
            row.latency_ns[d] = {k: pct.get(v) for k, v in PCTS.items()}


def _judge_slo(row: Row, slo: Slo) -> None:
    if not slo:
        return
    row.slo_failures = slo.failures(row)
    row.slo = "fail: " + "; ".join(row.slo_failures) if row.slo_failures else "pass"


fmt_ns = format_ns


def _num(v: float | None, spec: str = ",.0f") -> str:
    return "-" if v is None else format(v, spec)


HEADERS = [
    "device", "IOPS demanded", "IOPS achieved", "MB/s demanded", "MB/s achieved",
    "read p50/p99/p99.9", "write p50/p99/p99.9", "flush p50/p99", "fsync p99", "commits/s",
    "latency from", "fidelity", "SLO",
]  # fmt: skip


def cells(r: Row) -> list[str]:
    def lat(op: str, keys: tuple[str, ...]) -> str:
        d = r.latency_ns.get(op)
        return "-" if not d else " / ".join(fmt_ns(d.get(k)) for k in keys)

    return [
        r.device,
        _num(r.demanded_iops),
        _num(r.achieved_iops),
        _num(r.demanded_mbps, ".1f"),
        _num(r.achieved_mbps, ".1f"),
        lat("read", ("p50", "p99", "p99.9")),
        lat("write", ("p50", "p99", "p99.9")),
        lat("flush", ("p50", "p99")),
        fmt_ns(r.fsync_p99_ns),
        _num(r.commits_per_s),
        r.latency_source,
        r.fidelity,
        r.slo,
    ]


def render(rows: list[Row], fmt: str) -> str:
    if fmt == "json":
        return json.dumps([asdict(r) for r in rows], indent=2)
    if fmt == "markdown":
        lines = ["| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
        lines += ["| " + " | ".join(cells(r)) + " |" for r in rows]
        return "\n".join(lines)
    from rich.console import Console
    from rich.table import Table

    table = Table(*HEADERS, title="iofp compare: candidate devices")
    for r in rows:
        table.add_row(*cells(r))
    console = Console(width=240, record=True)
    with console.capture() as cap:
        console.print(table)
    return cap.get()
