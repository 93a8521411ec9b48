"""The `iofp` command as a whole: every help ends with an example, and a usage error (an unknown
option, a value of the wrong type) is one line and exit 2, like every other bad input."""

from __future__ import annotations

import os
import re
import shlex
import subprocess

import pytest
from conftest import REPO
from helpers import IOFP

from cli.app import app, command
from iofp import fingerprint_doc, slo
from iofp.errors import BadInput
from iofp.values import device_list, parse_duration_ns, parse_labels, parse_size_bytes
from iofp.windows import parse_window_option


def commands() -> list[list[str]]:
    out = [[]]
    out += [[c.name] for c in app.registered_commands]
    for g in app.registered_groups:
        out += [[g.name]] + [[g.name, c.name] for c in g.typer_instance.registered_commands]
    return out


@pytest.mark.parametrize("cmd", commands(), ids=lambda c: " ".join(c) or "iofp")
def test_every_help_ends_with_an_example(cmd: list[str]) -> None:
    r = subprocess.run([*IOFP, *cmd, "--help"], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert r.returncode == 0, r.stderr
    # after the last panel of options or commands (rich draws them in boxes), naming the command
    example = r.stdout.rfind("Example: ")
    assert example > max(r.stdout.rfind("╰"), 0), r.stdout
    assert r.stdout[example:].split()[1:3] in (["iofp", *cmd[:1]], ["sudo", "iofp"]) or not cmd, r.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["replay", "t", "--time-scale", "abc"], "iofp: Invalid value for '--time-scale'"),
        (["fingerprint"], "iofp: Missing argument 'TRACE'. (see: "),
        (["fingerprint", "t", "--no-such-option"], "iofp: No such option: --no-such-option"),
        (["nosuch"], "iofp: No such command 'nosuch'. (see: "),
        (["catalog", "show", "abc"], "iofp: Invalid value for 'ID'"),
    ],
)
def test_a_usage_error_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    r = subprocess.run([*IOFP, *args], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert r.returncode == 2
    assert r.stderr.startswith(message) and r.stderr.count("\n") == 1, r.stderr


SAMPLE = str(REPO / "samples" / "traces" / "market-open")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["fingerprint", SAMPLE, "--json", "/proc/x.json"], "iofp: cannot write /proc/x.json: "),
        (["report", SAMPLE, "-o", "{dir}", "--force"], "iofp: {dir} is a directory; name a file to write"),
        (["iolog", SAMPLE, "--regime", "spike", "-o", "/proc/x.iolog"], "iofp: cannot write /proc/x.iolog: "),
        (["iolog", SAMPLE, "--regime", "spike", "-o", "{dir}", "--force"], "iofp: {dir} is a directory"),
        (
            ["replay", "--repeat", "1",
             SAMPLE, "--target", "{dir}/new.img", "--between", "0", "1", "--no-fidelity",
             "--output", "/proc/x"],
            "iofp: cannot write the results to /proc/x: ",
        ),
        (["import", "msr", "{file}", "-o", "{file}", "--force"], "iofp: {file} is a file, not a trace"),
    ],
    ids=["fingerprint-json", "report-dir", "iolog-proc", "iolog-dir", "replay-proc", "import-file"],
)  # fmt: skip
def test_an_output_that_cannot_be_written_is_one_line_and_exit_2(tmp_path, args, message) -> None:
    (tmp_path / "f.csv").write_text("128166372003061629,src1,0,Read,7014609920,24576,41286\n")
    subst = {"dir": str(tmp_path), "file": str(tmp_path / "f.csv")}
    args = [a.format(**subst) for a in args]
    r = subprocess.run([*IOFP, *args], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 2 and r.stderr.startswith(message.format(**subst)), r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.csv"]  # nothing written, nothing lost
    assert (tmp_path / "f.csv").read_text().startswith("128166372003061629")


def test_every_command_that_writes_an_artifact_takes_dash_o(tmp_path) -> None:
    """A user's first guess, `-o`, names the output of every command that writes one: fingerprint's
    document too (its --json), not `No such option: -o`."""
    commands = command().commands
    for name in ("import", "fingerprint", "report", "iolog", "replay", "headroom", "probe", "fio-job"):
        assert any("-o" in p.opts for p in commands[name].params), name
    r = subprocess.run([*IOFP, "fingerprint", SAMPLE, "-o", tmp_path / "m.fp.json"], capture_output=True,
                       text=True, cwd=REPO, timeout=120)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert f"Wrote {tmp_path / 'm.fp.json'}." in r.stdout
    assert fingerprint_doc.load(tmp_path / "m.fp.json").provenance.io_span_s > 0


# ------------------------------------------------------------------------------------------------
# Every help example runs as pasted in bash: split as bash splits it (a `<` or `>` outside quotes
# is a redirection, `;` `&&` `|` end a command), then parsed by the real command's parser and each
# value by the rule the command applies to it (sizes, durations, SLO terms, labels).

BASH_CONTROL = {";", "&&", "||", "|"}


def examples() -> list[tuple[str, str]]:
    """(command path, its help's example text) for every command and group."""
    root = command()
    out = []

    def walk(cmd, path):
        text = " ".join((cmd.epilog or "").split())
        if "Example: " in text:
            out.append((" ".join(path) or "iofp", text.split("Example: ", 1)[1]))
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, (*path, name))

    walk(root, ())
    return out


def bash_commands(text: str) -> list[list[str]]:
    lex = shlex.shlex(text, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    words, out = list(lex), [[]]
    for w in words:
        if w in BASH_CONTROL:
            out.append([])
            continue
        assert not set(w) <= set("<>&|;()"), f"{text!r}: bash reads {w!r} as an operator (quote it)"
        out[-1].append(w)
    return [c for c in out if c]


VALUE_RULES = {
    "buffer": parse_size_bytes, "size": parse_size_bytes, "target_size": parse_size_bytes,
    "align": parse_size_bytes, "duration": parse_duration_ns, "rotate": parse_duration_ns,
    "runtime": parse_duration_ns, "window": lambda v, flag: parse_window_option(v),
    "slo": lambda v, flag: slo.parse(v), "label": lambda v, flag: parse_labels(v),
}  # fmt: skip


def parse(argv: list[str]):
    """The context the real command builds from `argv` (iofp ...), its values checked."""
    cmd, name, args, parent = command(), "iofp", argv, None
    while True:
        ctx = cmd.make_context(name, list(args), parent=parent)
        if not getattr(cmd, "commands", None):
            break
        name, cmd, args = cmd.resolve_command(ctx, [*ctx._protected_args, *ctx.args])
        parent = ctx
    for key, value in ctx.params.items():
        if key in VALUE_RULES and value not in (None, [], ()):
            VALUE_RULES[key](value, key)
    return ctx


@pytest.mark.parametrize(("where", "text"), examples(), ids=[w for w, _ in examples()])
def test_every_help_example_runs_as_pasted_in_bash(where, text):
    cmds = bash_commands(text)
    assert cmds, text
    for argv in cmds:
        argv = argv[1:] if argv[0] == "sudo" else argv
        assert argv[0] == "iofp", text
        ctx = parse(argv[1:])
        assert ctx.command.callback is not None, f"{text!r} names no command"


def test_the_example_check_catches_an_unquoted_slo_and_a_bad_size():
    with pytest.raises(AssertionError, match="bash reads '<' as an operator"):
        bash_commands("iofp compare r1 --slo p99<=2ms")
    with pytest.raises(BadInput, match="'256 MB' is not a size"):
        parse(["iolog", "t", "-o", "x.iolog", "--target-size", "256 MB"])


@pytest.mark.slow
def test_help_shows_no_python_types():
    for where, _ in examples():
        args = [] if where == "iofp" else where.split()
        r = subprocess.run([*IOFP, *args, "--help"], capture_output=True, text=True, cwd=REPO, timeout=60,
                           env={**os.environ, "COLUMNS": "200"})  # fmt: skip
        assert r.returncode == 0, r.stderr
        assert not re.search(r"<(bool|str|int|float|path|list\[[a-z]+\])>|\{[a-z_]+\}", r.stdout), r.stdout


def test_the_slo_grammar_shows_whole_in_help():
    """Rich reads [a|b] as markup and drops it: the grammar once lost its ops that way."""
    r = subprocess.run([*IOFP, "compare", "--help"], capture_output=True, text=True, cwd=REPO, timeout=60,
                       env={**os.environ, "COLUMNS": "300"})  # fmt: skip
    assert "OP.p50|p99|p99.9<=TIME (OP: read, write, all, flush, fsync or commit;" in r.stdout, r.stdout


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("512", 512),
        ("4KiB", 4096),
        ("64M", 64 << 20),
        ("1.5GiB", 3 << 29),
        ("2TiB", 2 << 40),
        ("1t", 1 << 40),
    ],
)
def test_sizes_take_binary_units_up_to_tib(text, size):
    assert parse_size_bytes(text, "--size") == size


def test_a_size_past_the_largest_offset_names_the_limit_in_a_unit_it_takes():
    with pytest.raises(BadInput, match=r"at most 1048576TiB"):
        parse_size_bytes("2000000TiB", "--size")


def test_devices_are_listed_as_counted():
    assert device_list(["10", "2", "sdb", "sda", "0", "nvme10n1", "nvme2n1"]) == (
        "0, 2, 10, nvme2n1, nvme10n1, sda, sdb"
    )
    assert device_list([]) == "-"
