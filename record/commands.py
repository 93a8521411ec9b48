"""CLI commands of the recorder stage: `iofp record` and `iofp iostat`; `register(app)` adds them."""

from __future__ import annotations

from pathlib import Path

import typer

from iofp.output import JSON_HELP, echo, emit_json, json_target
from iofp.slo import HELP as SLO_HELP
from iofp.values import parse_duration_ns, parse_labels, parse_size_bytes


def _options(device: list[str], output: Path, history: str, keep: str, trigger: list[str], window: str,
             hold: str | None, after: str, cooldown: str, max_incidents: int, at: list[str],
             duration: str | None, label: list[str], no_syscalls: bool, data_calls: bool,
             dsync_writes: bool, witness: str) -> object:  # fmt: skip
    """The command line's values as RecordOptions (each parsed by the project's one rule)."""
    from iofp import slo
    from record import RecordOptions

    return RecordOptions(
        output=output, devices=list(device), history_ns=parse_duration_ns(history, "--history"),
        keep_bytes=parse_size_bytes(keep, "--keep", "2GiB or 500MiB"),
        trigger=slo.parse(trigger, "--trigger") if trigger else None,
        window_ns=parse_duration_ns(window, "--window"),
        for_ns=parse_duration_ns(hold, "--for") if hold else None,
        after_ns=parse_duration_ns(after, "--after", allow_zero=True),
        cooldown_ns=parse_duration_ns(cooldown, "--cooldown", allow_zero=True), max_incidents=max_incidents,
        at=list(at), duration_s=parse_duration_ns(duration, "--duration") / 1e9 if duration else None,
        labels=parse_labels(label), syscalls=not no_syscalls, data_calls=data_calls,
        dsync_writes=dsync_writes, witness=witness,
    )  # fmt: skip


def record_cmd(
    device: list[str] = typer.Option(
        [], "--device", "-d", help="Block device to record, e.g. nvme0n1 (repeatable; default all)."
    ),
    output: Path = typer.Option(
        Path("recorder"),
        "--output",
        "-o",
        help="The recorder's directory: its ring, summary and incidents (new, or its own from an earlier "
        "run: a restart keeps them).",
    ),
    history: str = typer.Option("10m", "--history", help="Keep this much of the last I/O in the ring."),
    keep: str = typer.Option(
        "2GiB", "--keep", help="At most this much disk for the ring (the oldest dropped first, counted)."
    ),
    trigger: list[str] = typer.Option(
        [], "--trigger", metavar="TERMS", help="Save an incident when a window misses this SLO. " + SLO_HELP
    ),
    window: str = typer.Option("1s", "--window", help="The trigger's window (whole seconds)."),
    hold: str | None = typer.Option(
        None, "--for", help="Fire only when the SLO is missed this long (default: one window)."
    ),
    after: str = typer.Option("2m", "--after", help="An incident also keeps this long after its trigger."),
    cooldown: str = typer.Option("5m", "--cooldown", help="No new incident this soon after one closed."),
    max_incidents: int = typer.Option(
        20, "--max-incidents", help="Save no more incidents than this in DIR/incidents."
    ),
    at: list[str] = typer.Option(
        [], "--at", help="Also save an incident at this local time every day, HH:MM[:SS] (repeatable)."
    ),
    duration: str | None = typer.Option(
        None, "--duration", help="Stop after this long (default: until SIGTERM or Ctrl-C)."
    ),
    label: list[str] = typer.Option([], "--label", help="key=value kept in every incident's metadata."),
    no_syscalls: bool = typer.Option(False, "--no-syscalls", help="Do not record fsync-family syscalls."),
    data_calls: bool = typer.Option(
        False,
        "--data-calls/--no-data-calls",
        help="Also record the application's O_DIRECT and libaio calls (an incident's calls table: the "
        "wait a device cap hides from the block layer); ~1 µs more CPU an I/O.",
    ),
    dsync_writes: bool = typer.Option(
        False,
        "--dsync-writes/--no-dsync-writes",
        help="Also record writes on files opened O_DSYNC as commits (PostgreSQL's open_datasync); "
        "probes every write(2) on the machine, ~0.3 µs each.",
    ),
    witness: str = typer.Option("agent", "--witness", help="As iofp capture's --witness."),
    dump: Path | None = typer.Option(
        None,
        "--dump",
        metavar="DIR",
        help="Do not record: ask the recorder running into DIR to save an incident now (as SIGUSR1 does).",
    ),
    json_out: str | None = typer.Option(None, "--json", help=JSON_HELP),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --json file."),
) -> None:
    """The flight recorder: keep the last minutes of block I/O in a bounded ring on disk, always on;
    save an incident (an ordinary trace: the history before and --after after) when the I/O misses
    --trigger; keep a per-second summary of the whole run (iofp iostat).

    Runs until SIGTERM or Ctrl-C (an incident being written is completed); SIGUSR1 or iofp record
    --dump DIR saves one now. A restart keeps the ring and the summaries.

    Example: sudo iofp record --device nvme0n1 -o /var/lib/iofp/rec --history 10m --keep 2GiB
    --trigger 'commit.p99<=5ms,iops<=30000' --after 2m
    """
    from record import dump as dump_now
    from record import record, render_summary

    json_target(json_out, force=force)
    if dump is not None:
        echo(f"Saving an incident: {dump_now(dump)}", json_out)
        return
    opts = _options(device, output, history, keep, trigger, window, hold, after, cooldown, max_incidents, at,
                    duration, label, no_syscalls, data_calls, dsync_writes, witness)  # fmt: skip
    summary = record(opts)
    echo("\n".join(render_summary(summary)), json_out)
    if (path := emit_json(json_out, summary.to_dict(), force=force)) is not None:
        echo(f"Wrote {path}.", json_out)


def iostat_cmd(
    root: Path = typer.Argument(..., metavar="DIR", help="The recorder's directory (iofp record -o)."),
    between: tuple[str, str] | None = typer.Option(
        None,
        "--between",
        help="From T1 to T2, local time: HH:MM[:SS] or YYYY-MM-DDTHH:MM[:SS] (default: the last 10 "
        "minutes recorded).",
    ),
    every: str | None = typer.Option(None, "--every", help="One row per this long (default: ~60 rows)."),
    device: str | None = typer.Option(None, "--device", "-d", help="Only this device."),
    json_out: str | None = typer.Option(None, "--json", help=JSON_HELP),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --json file."),
) -> None:
    """The recorder's per-second summary as iostat -x shows a device: r/s, w/s, f/s, MB/s, await,
    aqu-sz, commits, and p99/p99.9 per op, for any span of the run (even when no trigger fired).

    Example: iofp iostat /var/lib/iofp/rec --between 14:30 14:45
    """
    from record import iostat, render_iostat

    json_target(json_out, force=force)
    step = parse_duration_ns(every, "--every") // 10**9 or 1 if every else None
    view = iostat(root, between, step, device)
    echo("\n".join(render_iostat(view)), json_out)
    if (path := emit_json(json_out, view.to_dict(), force=force)) is not None:
        echo(f"Wrote {path}.", json_out)


def register(app: typer.Typer) -> None:
    app.command("record")(record_cmd)
    app.command("iostat")(iostat_cmd)
