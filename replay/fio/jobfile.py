"""The one writer of what fio reads: job files, option values on its command line, and the file names
in iologs. Every value goes through here, so that none can say more than it was meant to.

fio's job file is a command language (fio 3.33's init.c `__parse_jobs_ini`, parse.c, options.c):
a line is read with fgets into 8,192 bytes (a longer one goes on as the next line), a line whose
first character after blanks and control characters is `;` or `#` is a comment, `[name]` starts a
job (any name starting with "global" is the global section), `include FILE` reads another file, and
an option's value is cut at the first `;` or `#` and stripped of blanks at both ends
(`strip_blank_end`). Every value then has `${VAR}` replaced by the environment's VAR and the
keywords `$pagesize`, `$mb_memory`, `$ncpus` by numbers, with arithmetic handed to bc
(`fio_option_dup_subs`, `fio_keyword_replace`). `filename=` (and `read_iolog=`) take several files
separated by `:`; a `:` that belongs to the name is written `\\:` (options.c `get_next_str`; the
HOWTO's `filename`). `exec_prerun=` runs a shell command. An iolog line is read with
`sscanf("%llu %256s %256s %llu %u")` (iolog.c): a file name ends at the first blank and at 256 bytes.

So:
* free text (a comment: a fingerprint's tool version, a trace's path) is one line of printable text,
  cut into lines well under fio's 8,192 bytes (`JobFile.comment`);
* a job's name is a plain word that does not start with "global";
* a value holds no control character, no `;`, `#` or `$`, no blank at either end, and is refused
  otherwise (fio has no way to escape them); a path is absolute and has its `:` escaped;
* an iolog names its file by an absolute path with no blank or control character, at most 255 bytes.

Refusals are BadInput (one line naming the value and what to do), raised before anything is written.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from iofp.errors import BadInput
from iofp.terminal import has_control, one_line

LINE_MAX = 8192  # fio's OPT_LEN_MAX: a longer line is read as two
COMMENT_WIDTH = 100  # where free text wraps; a line of iofp's own may be given more
COMMENT_MAX = 2000  # characters of one comment's text: the rest is cut ("...")
VALUE_MAX = 4000  # fio copies a value into OPT_LEN_MAX bytes, substitutions included
IOLOG_NAME_MAX = 255  # sscanf's %256s, with room to spare
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
_KEY = re.compile(r"[a-z][a-z0-9_]*")
_UNSAFE = ";#$"  # fio cuts a value at ; and #, and substitutes ${VAR} and $keyword


def _shown(value: str) -> str:
    text = one_line(value)
    return repr(text if len(text) <= 80 else text[:77] + "...")


def value(key: str, v: object) -> str:
    """`v` as fio will read it for option `key`, or BadInput."""
    text = str(v)
    why = None
    if has_control(text):
        why = "a control character (a newline would start an option of its own)"
    elif text != text.strip():
        why = "blanks at an end (fio strips them)"
    elif bad := sorted({c for c in text if c in _UNSAFE}):
        why = f"{' and '.join(repr(c) for c in bad)} (fio cuts a value at ; and #, and substitutes $)"
    elif len(text) > VALUE_MAX:
        why = f"more than {VALUE_MAX} characters"
    if why is not None:
        raise BadInput(f"{_shown(text)}: fio's {key}= cannot hold it: it has {why}; rename it, or use "
                       "a path without them (a link to it will do)")  # fmt: skip
    return text


def path_value(key: str, p: Path | str) -> str:
    """An absolute path for `key` (filename, read_iolog, ...), its `:` escaped as fio documents."""
    text = str(p)
    if not text.startswith("/"):
        raise BadInput(f"{_shown(text)}: fio's {key}= needs an absolute path here")
    return value(key, text).replace(":", "\\:")


def iolog_name(p: Path | str) -> str:
    """The file name an iolog line gives fio: one word, absolute, at most IOLOG_NAME_MAX bytes."""
    text = str(p)
    if not text.startswith("/"):
        raise BadInput(f"{_shown(text)}: fio iologs need an absolute path, e.g. {Path(text).absolute()}")
    if has_control(text) or any(c.isspace() for c in text):
        raise BadInput(f"{_shown(text)}: fio iologs need a path without blanks or control characters; "
                       "rename it, or link it to a plain name")  # fmt: skip
    if len(text.encode()) > IOLOG_NAME_MAX:
        raise BadInput(f"{_shown(text)}: fio reads at most {IOLOG_NAME_MAX} bytes of a file name")
    return text


class JobFile:
    """A fio job file built a line at a time, every line checked (see the module's rules)."""

    def __init__(self) -> None:
        self._lines: list[str] = []

    def comment(self, text: str, indent: str = "", width: int = COMMENT_WIDTH) -> JobFile:
        """Free text as comment lines: one line of printable text, cut to COMMENT_MAX characters
        and wrapped at `width` (long words broken), each line `; ` + `indent` first."""
        flat = one_line(text)
        if len(flat) > COMMENT_MAX:
            flat = flat[: COMMENT_MAX - 3] + "..."
        first, rest = "; " + indent, ";" + " " * (len(indent) + 3)
        wrapped = textwrap.wrap(flat, min(width, 1000), initial_indent=first, subsequent_indent=rest,
                                break_on_hyphens=False) or [first.rstrip()]  # fmt: skip
        self._lines += wrapped
        return self

    def blank(self) -> JobFile:
        self._lines.append("")
        return self

    def section(self, name: str) -> JobFile:
        """`[name]`: `global`, or a job's name, a plain word that fio will not take for global."""
        if name != "global" and (not _NAME.fullmatch(name) or name.startswith("global")):
            raise BadInput(f"{_shown(name)}: not a fio job name (letters, digits, _ . + -; not global...)")
        self._lines.append(f"[{name}]")
        return self

    def set(self, key: str, v: object | None = None) -> JobFile:
        """`key=value` (or a bare `key`), the value checked by `value`."""
        self._lines.append(_key(key) if v is None else f"{_key(key)}={value(key, v)}")
        return self

    def path(self, key: str, p: Path | str) -> JobFile:
        """`key=PATH`, absolute, its `:` escaped (`path_value`)."""
        self._lines.append(f"{_key(key)}={path_value(key, p)}")
        return self

    def from_env(self, key: str, var: str) -> JobFile:
        """`key=${VAR}`: the one substitution iofp means (a fio-job's target, given when run)."""
        if not re.fullmatch(r"[A-Z][A-Z0-9_]*", var):
            raise BadInput(f"{_shown(var)}: not an environment variable's name")
        self._lines.append(f"{_key(key)}=${{{var}}}")
        return self

    def text(self) -> str:
        assert all(len(ln.encode()) < LINE_MAX for ln in self._lines)
        return "\n".join(self._lines) + "\n"


def _key(key: str) -> str:
    if not _KEY.fullmatch(key):
        raise BadInput(f"{_shown(key)}: not a fio option")
    return key
