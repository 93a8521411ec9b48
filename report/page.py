"""The one HTML page every report is: a title and a body in `page.html` (its inline CSS, no script, no
network), so that traces and results read alike."""

from __future__ import annotations

import html
from importlib import resources
from string import Template


def page(title: str, body: str) -> str:
    """The page titled "iofp report: `title`" around `body` (HTML)."""
    tpl = Template(resources.files(__package__).joinpath("page.html").read_text())
    return tpl.substitute(title=html.escape("iofp report: " + title), body=body)
