"""Text from artifacts is inert on a terminal: no control character reaches it raw.

Traces, fingerprints and results travel between teams and vendors, and their text (a device's name,
a label, a process name, a path) ends up in what iofp prints. An escape sequence in it would clear
the screen, retitle the window, move the cursor over a verdict or hide a line; a carriage return or
a bidi override would make a line read differently from what it says. So:

* every stream iofp writes to (stdout, stderr) escapes the control characters it is given, but the
  newline and the tab (`inert`; `install` wraps the streams, at the entry point);
* text read from an artifact is one line (`one_line`: the newline escaped too), when it is read
  (iofp/artifact_json.py), so no field of an artifact can start a line of iofp's output;
* what iofp itself draws with escape sequences (rich's styles, the capture's live line) goes to the
  stream underneath (`raw`), its artifact text escaped on the way in (`console`).

Escapes are shown as Python writes them (\\x1b, \\n, \\u202e): visible, and not the character.
Imports no stage.
"""

from __future__ import annotations

import io
import re
import sys
from typing import Any, TextIO

from rich.console import Console
from rich.text import Text

# C0 controls, DEL, C1 controls, the bidi embeddings/overrides/isolates and the Unicode line and
# paragraph separators (which some terminals and editors break lines at)
_LINE_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_TEXT_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(m: re.Match[str]) -> str:
    c = m[0]
    return _NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def one_line(text: str) -> str:
    """`text` as one line of printable text: every control character (the newline too) escaped."""
    return _LINE_UNSAFE.sub(_escape, text)


def inert(text: str) -> str:
    """`text` with every control character but the newline and the tab escaped."""
    return _TEXT_UNSAFE.sub(_escape, text)


def has_control(text: str) -> bool:
    return _LINE_UNSAFE.search(text) is not None


class InertStream(io.TextIOBase):
    """A text stream that escapes what `inert` escapes before it reaches the stream underneath."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, s: str) -> int:
        self.stream.write(inert(s))
        return len(s)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.stream, "encoding", "utf-8")

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return getattr(self.stream, "errors", None)


def install() -> None:
    """Wrap sys.stdout and sys.stderr (once): everything printed from here on is inert."""
    if not isinstance(sys.stdout, InertStream):
        sys.stdout = InertStream(sys.stdout)
    if not isinstance(sys.stderr, InertStream):
        sys.stderr = InertStream(sys.stderr)


def raw(stream: Any) -> Any:
    """The stream under an InertStream: for what iofp itself writes with escape sequences."""
    return stream.stream if isinstance(stream, InertStream) else stream


class _InertConsole(Console):
    """rich's Console, writing styles to the raw stream, with every string it renders (printed text,
    table cells, headers) made inert first; emoji codes (`:b:`) are left as written."""

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(inert(text), **kwargs)


def console(*, stderr: bool = False) -> Console:
    """The rich Console for iofp's tables and styled lines, on stdout (or stderr)."""
    stream = raw(sys.stderr if stderr else sys.stdout)
    return _InertConsole(file=stream, emoji=False, highlight=False)
