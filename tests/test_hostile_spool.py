"""A hostile spool handed to `iofp recover` (a killed capture's trace travels like any other): its
JSON deep or odd, a segment declaring terabytes of records, records no capture writes, a device name
that is a path, and links out of the trace, read or written through. Each is one line, exit 2,
before any work; nothing outside the trace is read or created. A whole spool is still recovered.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from helpers import run_iofp

from bpf.record import IO_DTYPE, SYNC_DTYPE, InflightFixes, ReqBits
from bpf.spool import CAPTURE, SEGMENT, Spool
from iofp.contract import SPOOL, TraceMeta

BITS = ReqBits(op_mask=0xFF, ops={0: "read", 1: "write"}, sync=1 << 11, meta=1 << 12, fua=1 << 17,
               preflush=1 << 18, rahead=1 << 19, atomic=None, rwbs_op={0: "R", 1: "W"})  # fmt: skip
DEEP = "[" * 100_000 + "]" * 100_000


def spooled(root: Path, *, compress: bool) -> Path:
    """A trace whose capture was killed after spooling one segment of ten reads (of a pid now gone)."""
    root.mkdir()
    s = Spool(root, 1 << 30, compress=compress)
    s.start(0, BITS, {7 << 20: "loop9"}, TraceMeta(source="test"))
    s.put((np.zeros(10, IO_DTYPE), np.zeros(0, SYNC_DTYPE), ({}, {}), InflightFixes({}, ())))
    doc = json.loads((root / SPOOL / CAPTURE).read_text())
    (root / SPOOL / CAPTURE).write_text(json.dumps({**doc, "pid": 2**22 + 1}))  # above pid_max's default
    return root


def _edit(name: str, change: Callable[[dict], object]) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        path = root / SPOOL / (CAPTURE if name == CAPTURE else f"000001/{SEGMENT}")
        doc = json.loads(path.read_text())
        got = change(doc)
        path.write_text(got if isinstance(got, str) else json.dumps(doc))

    return edit


def _link_out(name: str) -> Callable[[Path], None]:
    def link(root: Path) -> None:
        outside = root.parent / f"outside-{name.replace('/', '-')}"
        (root / name).rename(outside) if (root / name).exists() else outside.mkdir()
        (root / name).symlink_to(outside)

    return link


def _garbage(root: Path) -> None:
    (root / SPOOL / "000001" / "io.bin").write_bytes(os.urandom(IO_DTYPE.itemsize * 100))


# (what the attacker did, compressed spool?, the damage, what the one line says)
CASES = {
    "capture.json nested deep": (True, _edit(CAPTURE, lambda d: json.dumps(d)[:-1] + f', "x": {DEEP}}}'),
                                 "capture.json: JSON nested deeper than 64 levels"),
    "segment.json nested deep": (True, _edit(SEGMENT, lambda d: json.dumps(d)[:-1] + f', "x": {DEEP}}}'),
                                 "segment.json: JSON nested deeper than 64 levels"),
    "10 TB to decompress": (True, _edit(SEGMENT, lambda d: d["raw_bytes"].update(io=10**13)),
                            "9,313.2 GiB of records, more than an interval of a capture holds here"),
    "a part record": (True, _edit(SEGMENT, lambda d: d["raw_bytes"].update(io=IO_DTYPE.itemsize * 3 + 1)),
                      "is no whole number of records"),
    "odd in-flight fixes": (True, _edit(SEGMENT, lambda d: d.update(early={"1": ["x"]})),
                            "segment.json: a field is missing or odd (ValueError"),
    "an op no capture records": (True, _edit(CAPTURE, lambda d: d["bits"]["ops"].update({"2": "exec"})),
                                 "capture.json is unreadable (ValueError: an op iofp does not record"),
    "a device name that is a path": (True, _edit(CAPTURE, lambda d: d["names"].update({"1": "../dev/vda"})),
                                     "device name '../dev/vda': a path, not a name"),
    "random records": (False, _garbage, "a segment's records are damaged"),
    "records linked out of the trace": (False, _link_out(f"{SPOOL}/000001/io.bin"),
                                        "io.bin: a spooled file leads out of"),
    "a segment linked out of the trace": (False, _link_out(f"{SPOOL}/000001"), "a spooled file leads out of"),
    "the table recover writes linked out": (True, _link_out("io"),
                                            "io is a link, and recover writes the trace's files there"),
}  # fmt: skip


@pytest.mark.parametrize("case", CASES)
def test_a_hostile_spool_is_one_line_before_any_work(case, tmp_path):
    compress, attack, words = CASES[case]
    root = spooled(tmp_path / "t", compress=compress)
    attack(root)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    code, out, err = run_iofp("recover", root)
    assert (code, out) == (2, ""), err
    assert err.startswith("iofp: ") and err.count("\n") == 1 and words in err, err
    if case != "random records":  # found while encoding, after the files before it were written
        assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before  # nothing written


@pytest.mark.parametrize("compress", [True, False])
def test_a_whole_spool_is_recovered(compress, tmp_path):
    root = spooled(tmp_path / "t", compress=compress)
    code, out, err = run_iofp("recover", root)
    assert code == 0 and out.startswith("Recovered 10 block requests"), err


def test_a_segment_half_removed_by_a_kill_is_left_out_and_cleared(tmp_path):
    """The writer had encoded segment 1 and was removing it when the capture was killed: recover
    encodes segment 2 alone (segment 1 is in the trace already) and leaves no spool behind."""
    root = spooled(tmp_path / "t", compress=False)
    s = Spool(root, 1 << 30, compress=False)
    s._seq = 1  # the second segment of the same capture
    s.put((np.zeros(3, IO_DTYPE), np.zeros(0, SYNC_DTYPE), ({}, {}), InflightFixes({}, ())))
    seg1 = root / SPOOL / "000001"
    gone = seg1.with_name(".000001.gone")
    seg1.rename(gone)  # remove_segment's first step, then the kill, its records half deleted
    (gone / "io.bin").unlink()
    code, out, err = run_iofp("recover", root)
    assert code == 0 and out.startswith("Recovered 3 block requests"), (out, err)
    assert not (root / SPOOL).exists()


def test_a_segment_encoded_but_not_removed_is_not_encoded_twice(tmp_path, monkeypatch):
    """The writer had written segment 1's file and was killed before removing the segment: recover
    encodes segment 2 alone, and the trace holds every record once."""
    import pyarrow.parquet as pq

    from bpf.capture import recover
    from iofp.errors import BadInput

    root = spooled(tmp_path / "t", compress=False)
    s = Spool(root, 1 << 30, compress=False)
    s._seq = 1
    s.put((np.zeros(3, IO_DTYPE), np.zeros(0, SYNC_DTYPE), ({}, {}), InflightFixes({}, ())))

    def killed(self, seg):
        raise KeyboardInterrupt  # as a kill between the segment's files and its removal

    with monkeypatch.context() as m:
        m.setattr(Spool, "taken", killed)
        with pytest.raises(BadInput):
            recover(root)
    assert sorted(p.name for p in (root / SPOOL).iterdir() if p.name[0].isdigit()) == ["000001", "000002"]

    def rows() -> int:
        return sum(pq.ParquetFile(p).metadata.num_rows for p in (root / "io").glob("part-*.parquet"))

    assert rows() == 10  # segment 1's file is in the trace
    code, out, err = run_iofp("recover", root)
    assert code == 0 and out.startswith("Recovered 3 block requests"), (out, err)
    assert rows() == 13
    assert not (root / SPOOL).exists()
