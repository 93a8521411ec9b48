"""The record layout shared by the eBPF program (bpf/iofp_record.h) and Python (bpf/record.py)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, needs_root

from bpf.record import BATCH_HDR, IO_DTYPE, SYNC_DTYPE

DTYPES = {"iofp_io_rec": IO_DTYPE, "iofp_sync_rec": SYNC_DTYPE, "iofp_batch_hdr": BATCH_HDR}


def c_layout(tmp_path: Path) -> dict[str, dict[str, tuple[int, int]]]:
    exe = tmp_path / "record_layout"
    cc = subprocess.run(
        ["gcc", "-O0", "-I", str(REPO / "bpf"), "-o", str(exe), str(REPO / "tests" / "record_layout.c")],
        capture_output=True,
        text=True,
    )
    assert cc.returncode == 0, cc.stderr
    layout: dict[str, dict[str, tuple[int, int]]] = {}
    for line in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines():
        struct, field, off, size = line.split()
        layout.setdefault(struct, {})[field] = (int(off), int(size))
    return layout


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc (apt install gcc)")
def test_numpy_dtypes_match_the_c_header(tmp_path: Path) -> None:
    layout = c_layout(tmp_path)
    for struct, dtype in DTYPES.items():
        c = layout[struct]
        assert c.pop("SIZE")[1] == dtype.itemsize, struct
        py = {name: (dtype.fields[name][1], dtype.fields[name][0].itemsize) for name in dtype.names}
        assert c == py, struct


@needs_root
def test_the_program_refuses_to_compile_with_a_wrong_record_size() -> None:
    pytest.importorskip("bcc", reason="needs bcc (apt install python3-bpfcc)")
    from bcc import BPF

    from bpf.loader import SRC, KernelOptions, cflags, test_compile

    test_compile()  # the real sizes compile and pass the verifier
    wrong = [f for f in cflags(KernelOptions(syscalls=False)) if not f.startswith("-DIOFP_IO_REC_SIZE=")]
    wrong.append(f"-DIOFP_IO_REC_SIZE={IO_DTYPE.itemsize + 8}")
    with pytest.raises(Exception, match="compile"):
        BPF(src_file=str(SRC).encode(), cflags=wrong)


def test_counter_names_match_the_header_enum() -> None:
    from bpf.record import COUNTERS

    header = (REPO / "bpf" / "iofp_record.h").read_text()
    enum = header[header.index("enum iofp_counter") : header.index("IOFP_NCOUNTERS")]
    names = [line.split()[0].rstrip(",") for line in enum.splitlines() if line.strip().startswith("IOFP_CNT")]
    assert names == ["IOFP_CNT_" + c.upper() for c in COUNTERS]


def test_record_sink_keeps_every_record_across_growth_and_reuses_released_buffers() -> None:
    import numpy as np

    from bpf.loader import _Sink

    recs = np.zeros(10, IO_DTYPE)
    recs["sector"] = np.arange(10)
    sink = _Sink(IO_DTYPE, 3 * IO_DTYPE.itemsize)  # too small: must grow without losing records
    for _ in range(5):
        sink.append(recs.ctypes.data, recs.nbytes)
    first = sink.take()
    assert first["sector"].tolist() == list(range(10)) * 5
    assert len(sink.take()) == 0  # nothing new
    held = first.base
    sink.release(first)
    later = []
    for _ in range(2):  # the buffer being filled now was allocated at take(); the released one is next
        sink.append(recs.ctypes.data, 2 * IO_DTYPE.itemsize)
        later.append(sink.take())
    assert later[1].base is held  # filled again, not a fresh allocation
    assert [a["sector"].tolist() for a in later] == [[0, 1], [0, 1]]
