"""The flight recorder: always on, the last minutes of block I/O kept in a bounded on-disk ring,
incidents saved as ordinary traces when the I/O itself misses an SLO, and a per-second summary of the
whole run.

Public API (other stages and the CLI enter here):

    record(RecordOptions(output=Path("/var/lib/iofp/rec"), devices=["nvme0n1"], trigger=slo.parse(...)))
    dump(Path("/var/lib/iofp/rec"))                     # ask the running recorder to save now
    iostat(Path("/var/lib/iofp/rec"), between=(lo, hi)) # the summary, as iostat -x would show it
    incidents(Path("/var/lib/iofp/rec"))                # what it saved (iofp report draws both)
"""

from record.control import dump
from record.incident import incidents
from record.iostat import Iostat, iostat, render_iostat
from record.options import RecordOptions
from record.recorder import RecordSummary, record, render_summary
from record.summary import SUMMARY, read_summary

__all__ = [
    "SUMMARY",
    "Iostat",
    "RecordOptions",
    "RecordSummary",
    "dump",
    "incidents",
    "iostat",
    "read_summary",
    "record",
    "render_iostat",
    "render_summary",
]
