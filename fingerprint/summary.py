"""The terminal summary of a fingerprint: whole trace, steady state, spikes, and the bound."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table


def _num(v: Any, fmt: str = "{:,.0f}") -> str:
    return "-" if v is None else fmt.format(v)


def _pct(v: Any) -> str:
    return "-" if v is None else f"{v:.1%}"


def _lat(s: dict[str, Any], op: str, key: str) -> Any:
    return ((s.get("latency") or {}).get(op) or {}).get(key)


def _reads(s: dict[str, Any]) -> str:
    return f"{_pct(s['mix']['read_share_count'])} / {_pct(s['mix']['read_share_bytes'])}"


def _kib(v: float | None) -> str:
    return _num(None if v is None else v / 1024, "{:,.1f}")


def _mib(v: float | None) -> str:
    return _num(None if v is None else v / 2**20, "{:,.1f}")


def _inflight(s: dict[str, Any]) -> str:
    i = s["inflight"]
    return "-" if not i else f"{i['mean']:.1f} / {i['p99']}"


def _burst(s: dict[str, Any]) -> str:
    b = s["burstiness"]
    return f"{_num(b['100ms']['peak_to_mean'], '{:.1f}')} / {_num(b['1s']['peak_to_mean'], '{:.1f}')}"


def _lats(
    s: dict[str, Any], op: str = "all", keys: tuple[str, ...] = ("p50_us", "p99_us", "p99_9_us")
) -> str:
    if _lat(s, op, "p50_us") is None:
        return "-"
    return " / ".join(f"{_lat(s, op, k):,.0f}" for k in keys)


ROWS: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
    ("I/Os", lambda s: _num(s["ios"])),
    ("seconds", lambda s: _num(s["seconds"], "{:,.1f}")),
    ("IOPS (mean)", lambda s: _num(s["intensity"]["iops_mean"], "{:,.1f}")),
    ("MB/s (mean)", lambda s: _num(s["intensity"]["mbps_mean"], "{:,.2f}")),
    ("reads by count / bytes", _reads),
    ("mean size (KiB)", lambda s: _kib(s["size"]["mean_bytes"])),
    ("sequential", lambda s: _pct(s["sequential"]["share"])),
    ("in-flight mean / p99", _inflight),
    ("inter-arrival CV", lambda s: _num(s["interarrival"]["cv"], "{:.2f}")),
    ("peak/mean 100ms / 1s", _burst),
    ("dispersion (1s)", lambda s: _num(s["burstiness"]["1s"]["index_of_dispersion"], "{:.1f}")),
    ("flush+FUA /s", lambda s: _num(s["durability"]["flush_rate_per_s"], "{:,.1f}")),
    ("fsync-family /s", lambda s: _num(s["durability"]["commit_rate_per_s"], "{:,.1f}")),
    # `all` is reads and writes (compute.DATA_LATENCY_OPS); flushes have their own row
    ("r+w latency p50 / p99 / p99.9 (µs)", _lats),
    ("flush latency p50 / p99 (µs)", lambda s: _lats(s, "flush", ("p50_us", "p99_us"))),
    ("footprint (MiB)", lambda s: _mib(s["footprint"]["bytes"])),
    ("I/O on hottest 1% blocks", lambda s: _pct(s["footprint"]["hot_1pct_io_share"])),
    ("shape", lambda s: s["shape"]["class"]),
    ("bound", lambda s: s["bound"]["verdict"]),
]


def render(fp: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    prov = fp["provenance"]
    scopes = [(n, fp[n]) for n in ("whole", "steady", "spike", "between") if fp.get(n)]
    title = (
        f"{prov['source']} · {', '.join(prov['devices']) or '-'} · {prov['duration_s']:,.1f} s · "
        f"window {fp['params']['window_s']:g} s"
    )
    t = Table(title=title, title_justify="left")
    t.add_column("")
    for name, s in scopes:
        t.add_column(f"{name} ({s['windows']} win)", justify="right")
    for label, get in ROWS:
        t.add_row(label, *(get(s) for _, s in scopes))
    console.print(t)
    reg = fp["regimes"]
    console.print(
        f"steady: {reg['steady_windows']} of {reg['windows']} windows; spike threshold "
        f"{reg['spike_threshold_iops']:,.1f} IOPS or {reg.get('spike_threshold_mbps', 0):,.2f} MB/s "
        f"(steady median {reg['steady_median_iops']:,.1f} IOPS, {reg.get('steady_median_mbps', 0):,.2f} MB/s)"
    )
    if reg.get("sparse"):
        console.print(f"[yellow]{reg['sparse']['hint']}[/yellow]")
    for sp in reg["spikes"][:5]:
        console.print(
            f"  spike {sp['start_s']:,.1f}-{sp['end_s']:,.1f} s ({sp['duration_s']:g} s): peak "
            f"{sp['peak_iops']:,.0f} IOPS, mean {sp['mean_iops']:,.0f}, "
            f"peak/mean {_num(sp['peak_to_mean'], '{:.1f}')}"
        )
    if len(reg["spikes"]) > 5:
        console.print(f"  ... and {len(reg['spikes']) - 5} more spikes (see --json)")
    if prov.get("lost_events"):
        console.print(f"[red]the capture lost {prov['lost_events']:,} events[/red]: {prov['loss']}")
    b = fp["bound"]
    console.print(f"[bold]{fp['shape']['class']}, {b['verdict']}[/bold] ({b['side']}): {b['why']}")
