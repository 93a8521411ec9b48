"""Every command is registered and documented: the README shows each one the app has, and every
command function the stages define is one the app has (tests/test_cli.py runs each --help's example)."""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterator

import pytest
import typer
from conftest import REPO

from cli.app import app


def product_packages() -> list[str]:
    """The product's top-level packages, as pyproject.toml ships them: a new stage is searched too."""
    shipped = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    return sorted({p.split(".")[0] for p in shipped})


def _commands(group: typer.Typer, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    cmd = typer.main.get_command(group)
    out = []

    def walk(c, path):
        subs = getattr(c, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, (*path, name))
        else:
            out.append(path)

    walk(cmd, prefix)
    return out


COMMANDS = _commands(app)


def _callbacks(group: typer.Typer) -> Iterator[str]:
    """module:function of every callback the app runs: its commands', its groups' and their own."""
    for info in [group.registered_callback, *group.registered_commands]:
        if info is not None and info.callback is not None:
            yield f"{info.callback.__module__}:{info.callback.__name__}"
    for sub in group.registered_groups:
        yield from _callbacks(sub.typer_instance)


# typer's own, and iofp/output.py's one declaration of --json and --force
OPTION_MAKERS = ("typer.Option", "typer.Argument", "json_option", "force_option")


def command_functions() -> set[str]:
    """module:function of every function in the product that takes typer options or arguments: the
    commands the stages define, found in the source, whether or not anything registers them."""
    out = set()
    for path in sorted(p for package in product_packages() for p in (REPO / package).rglob("*.py")):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef):
                defaults = [*node.args.defaults, *node.args.kw_defaults]
                if any(isinstance(d, ast.Call) and ast.unparse(d.func) in OPTION_MAKERS
                       for d in defaults):  # fmt: skip
                    out.add(f"{module}:{node.name}")
    return out


def test_every_command_a_stage_defines_is_registered():
    """A command written and never registered is caught here; one registered and never documented by
    the README tests below, which run over the app's own list."""
    defined, registered = command_functions(), set(_callbacks(app))
    assert len(COMMANDS) >= 17 and len(defined) == len(registered)
    assert defined - registered == set()
    assert registered - defined == set()


def test_the_readme_commands_table_lists_exactly_the_apps_commands():
    table = (REPO / "README.md").read_text().split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`iofp ([a-z][a-z-]*(?: [a-z][a-z-]*)?)", table))
    assert listed == {" ".join(c) for c in COMMANDS}


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_readme_shows_every_command(command):
    readme = (REPO / "README.md").read_text()
    assert re.search(rf"\biofp {re.escape(' '.join(command))}\b", readme), (
        f"README never shows iofp {' '.join(command)}"
    )
