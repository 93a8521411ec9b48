"""CLI commands of this stage; `register(app)` adds them to the `iofp` typer app."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    pass
