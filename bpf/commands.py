"""CLI commands of this stage; `register(app)` adds them to the `iofp` typer app."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from iofp.output import echo, emit_json, force_option, json_option, json_target
from iofp.signals import StopRequest, stop_on_signals
from iofp.values import parse_duration_ns, parse_labels, parse_size_bytes

if TYPE_CHECKING:
    from bpf.capture import CaptureOptions, CaptureSummary




def capture_cmd(
    device: list[str] = typer.Option(
        [], "--device", "-d", help="Block device to trace, e.g. loop3 (repeatable; default all)."
    ),
    duration: str | None = typer.Option(
        None, "--duration", help="Stop after this long, e.g. 30s or 5m (default: until Ctrl-C)."
    ),
    output: Path = typer.Option(
        Path("trace"),
        "--output",
        "-o",
        help="Trace directory to create (must be new or empty); or s3://BUCKET/PREFIX, a lake: "
        "the trace ships to PREFIX/host=/service=/date=/ as each file completes (needs --label service=).",
    ),
    label: list[str] = typer.Option(
        [], "--label", help="key=value stored in the trace's metadata (repeatable)."
    ),
    comm: str | None = typer.Option(
        None, "--comm", help="Only requests/syscalls submitted by this command name."
    ),
    pid: int | None = typer.Option(
        None, "--pid", help="Only requests/syscalls submitted by this process id."
    ),
    rotate: str = typer.Option(
        "5s", "--rotate", help="One complete Parquet file per interval this long (see --spool for when)."
    ),
    buffer: str = typer.Option(
        "64MiB", "--buffer", help="Write a file early past this many bytes of records (bounds memory)."
    ),
    spool: str = typer.Option(
        "2GiB",
        "--spool",
        help="Keep up to this many bytes of raw records on disk (in the trace) while the CPU is busy, "
        "and encode them when it is free; 0: encode every interval as it ends.",
    ),
    witness: str = typer.Option(
        "agent",
        "--witness",
        help="Whose block completions a tracefs instance also records, for those the kernel runs no "
        "BPF program for: agent (PID 1's threads: a VM agent's, where the host hides its contexts), "
        "all (any task; costs ~0.4 µs per completion), off.",
    ),
    json_out: str | None = json_option(),
    force: bool = force_option("an existing, non-empty output directory (and --json file)"),
    no_syscalls: bool = typer.Option(False, "--no-syscalls", help="Do not trace fsync-family syscalls."),
    data_calls: bool = typer.Option(
        True,
        "--data-calls/--no-data-calls",
        help="Also trace the application's O_DIRECT and libaio calls (the calls table: the wait a device "
        "cap hides from the block layer); ~1 µs more CPU an I/O.",
    ),
    at: str | None = typer.Option(
        None, "--at", help="Start at this local time, HH:MM[:SS] (today, else tomorrow), e.g. 09:14."
    ),
) -> None:
    """Record every block request (and fsync-family syscall) into a Parquet trace with eBPF.

    Ends cleanly on --duration, Ctrl-C or SIGTERM; every file written is complete. Prints a line
    every --rotate interval while it runs (every second on a terminal): requests/s, MB/s, sync
    calls/s, events lost, files written; then a summary. Lost events are counted in the kernel and
    reported.

    Example: sudo iofp capture --device nvme0n1 --duration 60s --label service=orders -o orders-peak
    """
    from bpf.capture import CaptureOptions, loss_warning, render_summary
    from store import SHIP_WAIT_S, trace_output

    target = trace_output(output, parse_labels(label))  # s3://LAKE: written to a spool, shipped
    opts = CaptureOptions(
        output=target.local,
        on_file=target.on_file,
        devices=list(device),
        duration_s=parse_duration_ns(duration, "--duration") / 1e9 if duration else None,
        labels=parse_labels(label),
        comm=comm,
        pid=pid,
        rotate_s=parse_duration_ns(rotate, "--rotate") / 1e9,
        buffer_bytes=parse_size_bytes(buffer, "--buffer"),
        spool_bytes=0 if spool.strip() == "0" else parse_size_bytes(spool, "--spool", "2GiB, 500MiB or 0"),
        force=force,
        syscalls=not no_syscalls,
        data_calls=data_calls,
        witness=witness,
    )
    json_target(json_out, force=force)
    with stop_on_signals() as stop:  # held until the summary is printed: a late Ctrl-C cannot cut it
        if at is not None:
            _wait_for_start(at, opts, stop)
        summary = _run(opts, stop)
        if (warning := loss_warning(summary)) is not None:
            typer.echo(f"iofp: {warning}", err=True)
        echo("\n".join(render_summary(summary)), json_out)
        if (shipped := target.finish(SHIP_WAIT_S)) is not None:
            echo(shipped, json_out)
        if (path := emit_json(json_out, summary.to_dict(), force=force)) is not None:
            echo(f"Wrote {path}.", json_out)


def _run(opts: CaptureOptions, stop: StopRequest) -> CaptureSummary:
    """The capture, with its "recording" line and its live line (bpf.capture.progress_line)."""
    from bpf.capture import capture, progress_line

    ready = threading.Event()
    threading.Thread(target=_announce, args=(ready, opts), daemon=True).start()
    try:
        return capture(opts, stop.event, ready=ready, progress=progress_line(opts.rotate_s))
    finally:
        if sys.stderr.isatty():
            typer.echo(err=True)  # end the live line: what follows starts on a line of its own


def _wait_for_start(at: str, opts: CaptureOptions, stop: StopRequest) -> None:
    """Check the options now, then wait for --at; a stop signal while waiting writes nothing."""
    from datetime import datetime

    from bpf.capture import validate
    from bpf.schedule import next_occurrence, wait_until

    when = next_occurrence(at, datetime.now())
    validate(opts)
    typer.echo(f"iofp: waiting until {when:%Y-%m-%d %H:%M:%S} to start (Ctrl-C to cancel)", err=True)
    if not wait_until(when, stop.event):
        raise stop.interrupted("the capture had not begun; nothing was written")


def _announce(ready: threading.Event, opts: CaptureOptions) -> None:
    """One line on stderr once the probes are attached, so scripts know when to start the load."""
    ready.wait()
    what = ", ".join(opts.devices) or "all devices"
    typer.echo(f"iofp: recording {what} into {opts.output} (Ctrl-C to stop)", err=True)


def recover_cmd(
    trace: Path = typer.Argument(..., help="The trace directory of a capture that was killed."),
    json_out: str | None = json_option(),
    force: bool = force_option(),
) -> None:
    """Add to a killed capture's trace the records it had spooled and not yet encoded.

    A capture encodes its spool itself when it ends (Ctrl-C, SIGTERM, --duration); only kill -9
    or a crash leaves one behind. The trace stays marked incomplete: the interval the capture held
    in memory is lost.

    Example: iofp recover orders-peak
    """
    from bpf.capture import recover

    json_target(json_out, force=force)
    summary = recover(trace)
    echo(
        f"Recovered {summary.io_events:,} block requests and {summary.sync_events:,} sync calls into "
        f"{summary.files:,} files of {trace}.",
        json_out,
    )
    if (path := emit_json(json_out, summary.to_dict(), force=force)) is not None:
        echo(f"Wrote {path}.", json_out)


def doctor_cmd(
    json_out: str | None = json_option(),
    force: bool = force_option(),
) -> None:
    """Check that this machine can capture: privileges, tracefs, BTF, tracepoints, bcc, headers, fio.

    Mounts tracefs if it is missing. Prints each missing piece with the command that fixes it on
    Debian, Ubuntu and RHEL. Exits 0 only when capture can work.

    Example: sudo iofp doctor
    """
    from bpf.doctor import capture_ready, doctor_checks

    json_target(json_out, force=force)
    checks = doctor_checks(mount=True)
    ready = capture_ready(checks)
    for c in checks:
        mark = "ok  " if c.ok else ("FAIL" if c.required else "warn")
        echo(f"{mark} {c.name}: {c.detail}", json_out)
        for family, fix in [] if c.ok else c.fix.items():
            echo(f"       fix ({family}): {fix}", json_out)
    echo("capture: ready" if ready else "capture: NOT ready (fix the FAIL lines above)", json_out)
    if path := emit_json(json_out, {"ready": ready, "checks": [c.__dict__ for c in checks]}, force=force):
        echo(f"Wrote {path}.", json_out)
    raise typer.Exit(0 if ready else 3)


def register(app: typer.Typer) -> None:
    app.command("capture")(capture_cmd)
    app.command("recover")(recover_cmd)
    app.command("doctor")(doctor_cmd)
