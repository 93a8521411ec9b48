"""The options of replay's commands, declared once: the selection and mapping options `iofp iolog`,
`replay` and `headroom` share (`selection_options` -> `SelectionArgs`), the target and fio options
`replay` and `headroom` share (`run_options` -> `RunArgs`), and the one place they become the runner's
`ReplayOptions` (`replay_options`). Each set is one keyword-only dataclass a command receives whole,
so the commands cannot drift apart and no option is passed by position.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from iofp.errors import BadInput
from iofp.output import force_option
from iofp.values import parse_labels, parse_size_bytes
from iofp.windows import BETWEEN_HELP, DEFAULT_WINDOW, parse_between, parse_window_option

if TYPE_CHECKING:
    from replay.iolog import Selection
    from replay.run import ReplayOptions


@dataclass(frozen=True, kw_only=True)
class SelectionArgs:
    """The options iolog, replay and headroom share: what to replay and how it maps onto the target,
    as given (each value checked and converted once, by the property or method that reads it)."""

    device: str | None
    between: tuple[str, str] | None
    regime: str | None
    window: str | None
    time_scale: float = 1.0  # headroom chooses its own scales: the option is not declared there
    target_size: str | None
    align: str | None
    reads_only: bool
    force: bool

    @property
    def target_bytes(self) -> int | None:
        return None if self.target_size is None else parse_size_bytes(self.target_size, "--target-size")

    @property
    def align_bytes(self) -> int | None:
        return None if self.align is None else parse_size_bytes(self.align, "--align", "4KiB or 512")

    def words(self) -> list[str]:
        """The selection and mapping options as given, as command-line words (for a Next: hint that
        runs the same selection through another command)."""
        out: list[str] = []
        for flag, value in (("--device", self.device), ("--regime", self.regime), ("--window", self.window),
                            ("--target-size", self.target_size), ("--align", self.align)):  # fmt: skip
            out += [flag, value] if value is not None else []
        out += ["--between", *self.between] if self.between else []
        out += ["--time-scale", f"{self.time_scale:g}"] if self.time_scale != 1.0 else []
        return out + (["--reads-only"] if self.reads_only else [])

    def selection(self) -> Selection:
        from replay.iolog import Selection

        window_ns = parse_window_option(self.window)
        if self.window is not None and self.regime is None:  # --between and the whole trace have no windows
            raise BadInput(
                f"--window {self.window} is the width of --regime's windows; add --regime steady or "
                "--regime spike, or leave --window out"
            )
        sel = Selection(
            device=self.device,
            between=parse_between(*self.between) if self.between else None,
            regime=self.regime,
            reads_only=self.reads_only,
            window_ns=window_ns,
        )
        sel.check()
        return sel


_WINDOW_HELP = (
    f"Width of --regime's windows, as for iofp fingerprint (default {DEFAULT_WINDOW}, the fingerprint's "
    "rule; at least 1ms): pass the fingerprint's --window, if it had one, to select the windows it names."
)
_SHARED: dict[str, tuple[Any, Any]] = {
    "device": (
        str | None,
        typer.Option(None, "--device", help="Replay only this device of the trace (default: all of them)."),
    ),
    "between": (
        tuple[str, str] | None,
        typer.Option(
            None,
            "--between",
            help="Only I/Os issued in [T1, T2): " + BETWEEN_HELP,
            metavar="T1 T2",
        ),
    ),
    "regime": (
        str | None,
        typer.Option(
            None,
            "--regime",
            help="spike: the fingerprint's rank-1 (biggest) spike; steady: the longest steady-state run; "
            "baseline: the longest run of windows in no spike.",
        ),
    ),
    # None, not the default itself, so that a --window with no --regime to use it can be told from none.
    "window": (str | None, typer.Option(None, "--window", help=_WINDOW_HELP)),
    "time_scale": (
        float,
        typer.Option(1.0, "--time-scale", help="Replay X times as fast (0.5 = half speed).", metavar="X"),
    ),
    "target_size": (
        str | None,
        typer.Option(
            None, "--target-size", help="Fold offsets into the first SIZE of the target (256MiB, 1GiB)."
        ),
    ),
    "align": (
        str | None,
        typer.Option(
            None,
            "--align",
            help="Round offsets down and sizes up to this (4KiB; default: the target's logical block size, "
            "or 512 bytes).",
        ),
    ),
    "reads_only": (
        bool,
        typer.Option(False, "--reads-only", help="Replay reads alone (always allowed on any target)."),
    ),
    "force": (bool, force_option("an existing output")),
}


@dataclass(frozen=True, kw_only=True)
class RunArgs:
    """The options replay and headroom share: the target, and how fio replays the plan on it."""

    target: Path
    fold: bool
    iodepth: int | None
    engine: str
    streams: str | None
    pace: str
    label: list[str]
    allow_destructive: bool


_RUN: dict[str, tuple[Any, Any]] = {
    "target": (
        Path,
        typer.Option(
            ...,
            "--target",
            help="Block device, or a new regular file (an existing one only with --allow-destructive).",
        ),
    ),
    "fold": (
        bool,
        typer.Option(False, "--fold", help="Fold offsets into the whole target when it is too small."),
    ),
    "iodepth": (
        int | None,
        typer.Option(
            None,
            "--iodepth",
            help="Every data job's queue depth (default: each stream's own peak in flight).",
        ),
    ),
    "engine": (
        str,
        typer.Option(
            "auto",
            "--engine",
            help="fio ioengine of the data jobs: auto (psync at QD1 for a stream that never had two I/Os "
            "in flight, as its submitter issued them; libaio at its peak in-flight for the others), "
            "libaio, io_uring, psync or pvsync2. Commit jobs are always psync.",
        ),
    ),
    "streams": (
        str | None,
        typer.Option(
            None,
            "--streams",
            help="pid: one fio job per submitting process (top 8 by I/Os, the rest in one), so one "
            "process's fsyncs do not stall the others; single: one job. Default: pid when the "
            "selection has more than one pid. Commit jobs come on top either way.",
        ),
    ),
    "pace": (
        str,
        typer.Option(
            "absolute",
            "--pace",
            help="absolute: a version 2 log with a `wait` per millisecond, fio 3.33's only absolute "
            "clock: no drift (duration and per-second IOPS exact), but each I/O lands within ~1 ms of its "
            "time and a millisecond's I/Os go back to back; auto: a v3 log keeping sub-ms gaps, with "
            "fio's per-I/O overhead measured on the target first (~1.5 s of reads) and pre-paid "
            "(it drifts by what that measurement misses: a few %); off: the trace's own gaps; or a fixed "
            "overhead, e.g. 20us.",
        ),
    ),
    "label": (
        list[str],
        typer.Option([], "--label", help="name=value recorded with the result (repeatable)."),
    ),
    "allow_destructive": (
        bool,
        typer.Option(
            False,
            "--allow-destructive",
            help="Write even to a device that is mounted, partitioned or formatted, or over an existing "
            "file.",
        ),
    ),
}


def _shared_options(
    options: dict[str, tuple[Any, Any]], make: Callable[..., Any], arg: str, without: tuple[str, ...] = ()
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator adding `options` (less `without`, which keep their defaults) to a command; it
    receives them as one `arg` built by `make`. Declared once, so commands cannot drift apart."""
    names = [n for n in options if n not in without]

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(fn)
        own = [p for p in sig.parameters.values() if p.name != arg]
        added = [
            inspect.Parameter(
                n, inspect.Parameter.KEYWORD_ONLY, default=options[n][1], annotation=options[n][0]
            )
            for n in names
        ]

        @functools.wraps(fn)
        def command(**kw: Any) -> Any:
            return fn(**{arg: make(**{n: kw.pop(n) for n in names})}, **kw)

        command.__signature__ = sig.replace(parameters=[*own, *added])  # type: ignore[attr-defined]
        command.__annotations__ = {k: v for k, v in fn.__annotations__.items() if k != arg} | {
            n: options[n][0] for n in names
        }
        return command

    return decorate


def selection_options(
    fn: Callable[..., Any] | None = None, *, without: tuple[str, ...] = ()
) -> Callable[..., Any]:
    """Add the selection and mapping options to a command; it receives them as `args: SelectionArgs`.
    `without=("time_scale",)` for a command that chooses the scale itself (headroom)."""
    decorate = _shared_options(_SHARED, functools.partial(_selection_args), "args", without)
    return decorate if fn is None else decorate(fn)


def _selection_args(**kw: Any) -> SelectionArgs:
    return SelectionArgs(**kw)


def run_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add the target and fio options replay and headroom share; the command receives `run: RunArgs`."""
    return _shared_options(_RUN, RunArgs, "run")(fn)


def replay_options(
    args: SelectionArgs, run: RunArgs, output: Path, *, fidelity: bool = True
) -> ReplayOptions:
    """The shared options as the runner's ReplayOptions (the one place they are put together)."""
    from replay.run import ReplayOptions

    return ReplayOptions(
        target=run.target,
        output=output,
        selection=args.selection(),
        time_scale=args.time_scale,
        target_size=args.target_bytes,
        fold=run.fold,
        align=args.align_bytes,
        iodepth=run.iodepth,
        engine=run.engine,
        streams=run.streams,
        pace=run.pace,
        labels=parse_labels(run.label),
        allow_destructive=run.allow_destructive,
        fidelity=fidelity,
        force=args.force,
    )
