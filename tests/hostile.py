"""What the hostile-artifact tests share: the payloads an attacker writes into an artifact's text, the
generators that set every string field of a document to them in turn, and the checks that a payload
stayed in its field (job files through fio's own parser, terminal text, markdown, `Next:` hints, and
what was created on disk).

A payload names a canary file (CANARY, replaced by a path under the test's directory): the test
fails if the canary exists afterwards, whatever wrote it.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import types
import typing
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lab
import pyarrow.parquet as pq

CANARY = "@CANARY@"

# One payload per kind of attack; `combined` carries all of them in one string (a field set to it
# in turn covers every kind at once).
PAYLOADS: dict[str, str] = {
    "fio-job": f"v1\n[pwn]\nexec_prerun=touch {CANARY}\nfilename={CANARY}",
    "fio-option": f"v1\nexec_prerun=touch {CANARY}\nexec_postrun=touch {CANARY}",
    "fio-include": f"v1\ninclude {CANARY}",
    "fio-engine": f"v1\r\nioengine=external:{CANARY}",
    "fio-long-line": "; " + "A" * 8200 + f"exec_prerun=touch {CANARY}",  # fio reads 8,192-byte lines
    "fio-env": "${HOME}$pagesize*2",
    "colon": f"a:b:{CANARY}",
    "dotdot": "../../../../../../../tmp/../dev/shm/iofp-hostile",
    "slash": "/dev/vda",
    "glob": "t*?[a-z]{a,b}**",
    "escape": "\x1b[2J\x1b]0;pwn\x07\x9b31m\u202egnp.exe\x08\x7f",
    "markdown": "x | SLO | pass |\n| fake | row | pass |",
    "shell": f"x; touch {CANARY} $(touch {CANARY}) `touch {CANARY}` 'q\" #",
    "nul": "a\x00b",
}
PAYLOADS["combined"] = "".join(
    PAYLOADS[k] for k in ("colon", "glob", "shell", "markdown", "escape", "fio-job")
)

# Payloads that can be a file name (no NUL, no '/': one path component).
NAME_PAYLOADS = {
    k: v.replace("/", "_") for k, v in PAYLOADS.items() if "\x00" not in v and k != "fio-long-line"
}

# A line that only a payload could have started (after a newline it smuggled in).
_SMUGGLED = re.compile(
    r"(?m)^[\s\x00-\x1f]*(\[pwn\]|exec_prerun|exec_postrun|include\s|ioengine=external|filename=.*@CANARY@"
    r"|\| fake \|)"
)


def payload(name: str, canary: Path) -> str:
    return PAYLOADS[name].replace(CANARY, str(canary))


def string_fields(doc: Any, path: tuple = (), *, keys: bool = True) -> Iterator[tuple]:
    """The path of every string value and (with `keys`) every key of a JSON document (keys are text
    too: a label's name, a device's name), generated from the document itself, so that a new field
    is covered."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            if keys:
                yield (*path, ("key", k))
            yield from string_fields(v, (*path, k), keys=keys)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from string_fields(v, (*path, i), keys=keys)
    elif isinstance(doc, str):
        yield path


def typed_fields(doc: Any, tp: Any, path: tuple = (), kind: tuple = ()) -> Iterator[tuple]:
    """string_fields of a document whose shape is the dataclass `tp` (a fingerprint): the keys of its
    free-form objects (labels, devices, sync calls) are text, the names of its fields are not. One
    field of each kind per top-level part: the first of a list's items and of an object's keys stand
    for the rest (the same code renders them)."""
    seen: set[tuple] = set()
    for found, what in _typed(doc, tp, path, kind):
        if what not in seen:
            seen.add(what)
            yield found


def _typed(doc: Any, tp: Any, path: tuple, kind: tuple) -> Iterator[tuple[tuple, tuple]]:
    if typing.get_origin(tp) in (types.UnionType, typing.Union):
        tp = next(a for a in typing.get_args(tp) if a is not type(None))
    if dataclasses.is_dataclass(tp) and isinstance(doc, dict):
        hints = typing.get_type_hints(tp)
        for f in dataclasses.fields(tp):
            key = f.name.rstrip("_")
            if key in doc:
                where = kind or (key,)
                yield from _typed(doc[key], hints[f.name], (*path, key), (*where, tp.__name__, key))
    elif typing.get_origin(tp) is dict and isinstance(doc, dict):
        for k, v in doc.items():
            yield (*path, ("key", k)), (*kind, "<key>")
            yield from _typed(v, typing.get_args(tp)[1], (*path, k), (*kind, "*"))
    elif typing.get_origin(tp) is list and isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _typed(v, typing.get_args(tp)[0], (*path, i), (*kind, "#"))
    else:
        for p in string_fields(doc, path):
            yield p, (*kind, *(x if isinstance(x, str) else "#" for x in p[len(path) :]))


def with_field(doc: Any, path: tuple, value: str) -> Any:
    """A copy of `doc` with the string (or key) at `path` replaced by `value`."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(head, tuple):  # ("key", k): rename the key, keep its value
        return {(value if k == head[1] else k): v for k, v in doc.items()}
    if isinstance(doc, list):
        return [with_field(v, rest, value) if i == head else v for i, v in enumerate(doc)]
    return {k: (with_field(v, rest, value) if k == head else v) for k, v in doc.items()}


def every_string(doc: Any, value: str, keep: tuple[tuple, ...] = ()) -> Any:
    """A copy of `doc` with every string value (not key) replaced by `value` tagged with its position,
    so a payload that leaves its field says which field it came from; but the fields at the paths
    `keep` (a path ending in "*" matches any key there), which a reader checks against a closed list."""
    count = iter(range(1 << 30))

    def kept(path: tuple) -> bool:
        same = (k for k in keep if len(k) == len(path))
        return any(all(a in ("*", b) for a, b in zip(k, path, strict=True)) for k in same)

    def walk(v: Any, path: tuple) -> Any:
        if isinstance(v, dict):
            return {k: walk(x, (*path, k)) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x, (*path, i)) for i, x in enumerate(v)]
        if isinstance(v, str) and not kept(path):
            return f"f{next(count)}{value}"
        return v

    return walk(doc, ())


def field_id(path: tuple) -> str:
    return ".".join(f"<{p[1]}>" if isinstance(p, tuple) else str(p) for p in path)


# --------------------------------------------------------------------------------------------
# checks


# control characters, bidi overrides, and the emoji rich makes of `:b:`-like text
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\U0001f000-\U0001faff]")


def assert_inert(text: str, where: str) -> None:
    """Terminal text: no control character but newline and tab (no escape sequence, no bell, no
    backspace, no carriage return, no bidi override), and no line a payload started."""
    bad = _CONTROL.search(text)
    if bad is not None:
        name = unicodedata.name(bad[0], repr(bad[0]))
        raise AssertionError(f"{where}: raw {name} in {text[max(0, bad.start() - 60) : bad.end() + 20]!r}")
    assert_no_smuggled_line(text, where)


def assert_no_smuggled_line(text: str, where: str) -> None:
    found = _SMUGGLED.search(text)
    assert found is None, (
        f"{where}: a payload started a line: {text[max(0, found.start() - 80) : found.end() + 40]!r}"
    )


def assert_exit(code: int, err: str, where: str) -> None:
    """A command given a hostile artifact either works or refuses in one line (exit 2); a traceback
    would have failed the test already (the in-process runner lets it through)."""
    assert code in (0, 1, 2), (where, code, err)
    if code == 2:
        assert err.startswith("iofp: ") and err.count("\n") == 1, (where, err)


def assert_hints_quoted(text: str, where: str) -> None:
    """Every `Next:` hint is one shell command whose words are what iofp meant: up to the words that
    explain it (` (checks ...)`, ` on a scratch device`), it parses, and no word of it runs anything
    else (no `;`, `|`, `&`, `$(`, backquote outside quotes)."""
    for line in text.splitlines():
        _, sep, hint = line.partition("Next: ")
        if not sep or hint.startswith("open it"):
            continue
        hint = hint.split(" on a scratch device")[0]
        lexer = shlex.shlex(hint, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        tokens = []
        for tok in lexer:
            if tok.startswith("("):  # an unquoted "(" starts the explanation after the command
                break
            tokens.append(tok)
        ops = [w for w in tokens if w and set(w) <= set("();<>|&")]
        assert tokens and not ops, f"{where}: the hint {hint!r} holds shell operators {ops}"
        command = " ".join(shlex.quote(t) for t in tokens)
        assert "`" not in command.replace("'", "") or "'" in command, f"{where}: {hint!r}"


def fio_jobs(job: Path, env: dict[str, str] | None = None) -> list[list[str]]:
    """What fio makes of a job file, by its own parser: one list of option names per job (`fio
    --showcmd` prints a job file as the command line it amounts to), after `--parse-only` accepted it."""
    assert lab.has_fio()
    shown = lab.fio("--parse-only", "--showcmd", job, env={"DEV": "/dev/iofp-hostile-dev", **(env or {})},
                    check=False)  # fmt: skip
    assert shown.returncode == 0, f"{job}: fio --parse-only: {shown.stderr}"
    jobs: list[list[str]] = []
    for opt in re.findall(r"--([a-z_0-9]+)(?:=|\s|$)", shown.stdout):
        if opt == "name":
            jobs.append([])
        elif jobs:
            jobs[-1].append(opt)
        else:
            jobs.append([opt])
    return jobs


FIO_DANGEROUS = ("exec_prerun", "exec_postrun", "include", "ioengine=external", "write_iolog", "directory=")


def assert_job_file_holds(job: Path, expected: list[list[str]], where: str) -> None:
    """The job file parses, by fio, to the jobs and options `expected` (those of the same command on
    the clean artifact), and names nothing an attacker wants."""
    got = fio_jobs(job)
    assert got == expected, f"{where}: fio parses {job} as {got}, the clean artifact as {expected}"
    body = "\n".join(ln for ln in job.read_text().splitlines() if not ln.lstrip().startswith((";", "#")))
    for word in FIO_DANGEROUS:
        assert word not in body, f"{where}: {word} outside a comment of {job}"
    assert all(len(ln) < 4096 for ln in job.read_text().splitlines()), (
        f"{where}: a line of {job} fio would split"
    )


def tree(root: Path) -> set[Path]:
    """Every path under `root` (files, directories, links), not following links."""
    out: set[Path] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for n in (*dirnames, *filenames):
            out.add(Path(dirpath) / n)
    return out


def assert_nothing_created(before: set[Path], root: Path, allowed: list[Path], where: str) -> None:
    """Nothing appeared under `root` but inside `allowed` (the result's own paths)."""
    new = {p for p in tree(root) - before if not any(p == a or a in p.parents for a in allowed)}
    assert not new, f"{where}: created outside the result: {sorted(map(str, new))[:5]}"


def assert_markdown_table_rows(text: str, rows: int, where: str) -> None:
    """A markdown table whose rows all have as many cells as its header (a cell's payload added no
    column) and none of them a payload's (`| fake |`); `rows`: the clean artifact's count, which a
    record's own fields may change (a partial run has a status row), never a cell's text."""
    lines = [ln for ln in text.splitlines() if ln.startswith("|")]
    assert 2 < len(lines) <= rows + 2, f"{where}: {len(lines)} table rows, the clean one {rows}: {lines}"
    assert_no_smuggled_line(text, where)
    widths = {len(re.findall(r"(?<!\\)\|", ln)) for ln in lines}
    assert len(widths) == 1, f"{where}: rows of different widths {widths}"


# --------------------------------------------------------------------------------------------
# a Parquet footer that says what it likes: thrift compact protocol (parquet.thrift's FileMetaData)


def _varint(data: bytes, i: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        b = data[i]
        i += 1
        n |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return n, i


def _enc_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _skip(data: bytes, i: int, t: int) -> int:
    if t in (1, 2):  # a bool in a struct: its value is the type
        return i
    if t == 3:
        return i + 1
    if t in (4, 5, 6):
        return _varint(data, i)[1]
    if t == 7:
        return i + 8
    if t == 8:
        n, i = _varint(data, i)
        return i + n
    if t in (9, 10):
        head = data[i]
        i += 1
        size, et = head >> 4, head & 0x0F
        if size == 15:
            size, i = _varint(data, i)
        for _ in range(size):
            i = i + 1 if et in (1, 2) else _skip(data, i, et)
        return i
    if t == 11:
        size, i = _varint(data, i)
        if size:
            kv = data[i]
            i += 1
            for _ in range(size):
                i = _skip(data, _skip(data, i, kv >> 4), kv & 0x0F)
        return i
    assert t == 12, t
    return _struct(data, i, {})[1]


def _struct(
    data: bytes, i: int, patch: dict, out: bytearray | None = None, path: tuple = ()
) -> tuple[bytearray, int]:
    """Copy one struct from `data` at `i` into `out`, replacing the i64 fields whose (path, field id)
    `patch` names (field 4, row_groups, is descended into: RowGroup's num_rows is its field 3)."""
    out = bytearray() if out is None else out
    fid = 0
    while True:
        head = data[i]
        if head == 0:
            out.append(0)
            return out, i + 1
        start = i
        i += 1
        t, delta = head & 0x0F, head >> 4
        if delta:
            fid += delta
        else:
            z, i = _varint(data, i)
            fid = (z >> 1) ^ -(z & 1)
        key = (*path, fid)
        if t == 6 and key in patch:
            out += data[start:i] + _enc_varint(patch[key] << 1)
            i = _varint(data, i)[1]
        elif t == 9 and key == (4,):  # row_groups: list<RowGroup>
            lh = data[i]
            out += data[start : i + 1]
            i += 1
            size = lh >> 4
            if size == 15:
                size, j = _varint(data, i)
                out += data[i:j]
                i = j
            for _ in range(size):
                _, i = _struct(data, i, patch, out, (4,))
        else:
            j = _skip(data, i, t)
            out += data[start:j]
            i = j
    raise AssertionError("unreachable")


def declare_rows(path: Path, rows: int) -> None:
    """Rewrite a one-row-group Parquet file's footer to declare `rows` rows (the file and each row
    group), as a file crafted to make readers size their work by it would."""
    data = path.read_bytes()
    assert data[-4:] == b"PAR1"
    length = int.from_bytes(data[-8:-4], "little")
    footer = data[-8 - length : -8]
    new, end = _struct(footer, 0, {(3,): rows, (4, 3): rows})
    assert end == len(footer)
    path.write_bytes(data[: -8 - length] + bytes(new) + len(new).to_bytes(4, "little") + b"PAR1")


def declare_ts_max(path: Path, ts: int) -> None:
    """Rewrite a one-row-group Parquet file's footer so that its ts_ns statistics end at `ts` (its
    rows unchanged), as a file changed after it was written, or crafted to hide its span, would: the
    8-byte maximum replaced where the footer holds it (the statistics' max and max_value)."""
    data = bytearray(path.read_bytes())
    length = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - length
    md = pq.ParquetFile(path).metadata
    stats = md.row_group(0).column(md.schema.names.index("ts_ns")).statistics
    old = stats.max.to_bytes(8, "little", signed=True)
    at = data.find(old, start)
    assert at != -1
    while at != -1:
        data[at : at + 8] = ts.to_bytes(8, "little", signed=True)
        at = data.find(old, at + 8)
    path.write_bytes(bytes(data))
