"""CLI command `iofp probe` (registered by replay/commands.py)."""

from __future__ import annotations

import signal
from pathlib import Path

import typer

from iofp.output import echo, emit_json, force_option, json_option, json_target
from iofp.values import parse_labels, parse_size_bytes
from replay.probe import plan as probe_plan


def probe_cmd(
    target: Path = typer.Argument(..., help="A block device, or a file (a new one needs --size)."),
    like: Path | None = typer.Option(
        None,
        "--like",
        help="A fingerprint JSON: shape the cells like its workload (read and write size, reads' "
        "queue depths in flight p50/p99, commit concurrency).",
    ),
    cells: str = typer.Option(
        ",".join(probe_plan.CELLS),
        "--cells",
        help="Which to run: randread (cell 1), sweep (cell 1 at each --qd), seq (cell 2), commit "
        "(cell 3), tail (cell 4, 80% of cell 1's max IOPS; needs randread or sweep).",
    ),
    qd: str | None = typer.Option(
        None, "--qd", help="Queue depths of the sweep (default 1,2,4,8,16,32,64,128; --quick: 1,4,16,64)."
    ),
    runtime: str | None = typer.Option(
        None, "--runtime", help="Length of each run (default 10s; --quick: 3s)."
    ),
    quick: bool = typer.Option(
        False, "--quick", help="Short runs and a coarse sweep: a first look in ~1 min."
    ),
    reads_only: bool = typer.Option(False, "--reads-only", help="Read cells only (allowed on any target)."),
    precondition: str = typer.Option(
        "none",
        "--precondition",
        help="Write the probed span first: fill (one sequential 128KiB pass), snia (two, SNIA PTS's "
        "2x capacity), none.",
    ),
    size: str | None = typer.Option(
        None, "--size", help="Probe the first BYTES of the target (default: all)."
    ),
    label: list[str] = typer.Option([], "--label", help="name=value recorded with the result (repeatable)."),
    output: Path | None = typer.Option(
        None,
        "-o",
        "--output",
        help="Results directory (default results/probe-TARGET-TIME), or s3://BUCKET/PREFIX (shipped "
        "when the probe ends).",
    ),
    json_out: str | None = json_option(),
    allow_destructive: bool = typer.Option(
        False, "--allow-destructive", help="Write even to a device that is mounted, partitioned or formatted."
    ),
    force: bool = force_option("an existing output"),
) -> None:
    """Measure a candidate device: random small reads at the production queue depth, sequential
    throughput, the fsync-bounded commit rate, tail latency at 80% load, and the queue-depth knee.

    Example: iofp probe /dev/loop3 --like samples/fingerprints/market-open.fp.json --label device=ram-loop
    """
    from replay.fio import Stopped
    from replay.probe import render as probe_render
    from replay.probe import run as probe
    from store import results_output

    dest = results_output(output or probe.default_output(target), probe.ARTIFACTS, force=force)
    opts = probe_plan.ProbeOptions(
        target=target, output=dest.local, cells=probe_plan.parse_cells(cells),
        qd=probe_plan.parse_qd(qd) if qd is not None else None, quick=quick, reads_only=reads_only,
        runtime_ns=probe_plan.parse_runtime_ns(runtime) if runtime is not None else None,
        precondition=probe_plan.parse_precondition(precondition), labels=parse_labels(label),
        size=parse_size_bytes(size, "--size") if size is not None else None,
        allow_destructive=allow_destructive, force=force,
    )  # fmt: skip
    json_target(json_out, force=force)
    with dest:  # s3://: shipped when it ends (a failed or stopped probe's record too)
        path, result = probe.probe(opts, like, note=lambda s: typer.echo(s, err=True))
        echo(probe_render.summary(result), json_out)
        emit_json(json_out, result.to_dict(), force=force)
        if result.interrupted:
            raise Stopped(probe_render.stopped_line(result), signal.Signals[result.interrupted])
    if (shipped := dest.finish()) is not None:
        echo(shipped, json_out)
    echo(f"Wrote {dest.shown(path)}; every fio run's raw artifacts are in runs/ beside it.", json_out)


def register(app: typer.Typer) -> None:
    app.command("probe")(probe_cmd)


__all__ = ["probe_cmd", "register"]
