"""The loaded program's lifecycle: what a closed capture leaves in the process."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import needs_root


def bpf_mappings() -> list[str]:
    """This process's mappings of BPF maps (the ring buffer, the in-flight table), as /proc lists them."""
    return [line for line in Path("/proc/self/maps").read_text().splitlines() if "anon_inode:bpf-map" in line]


@needs_root
@pytest.mark.slow  # ~0.8 s of compiling per capture, more beside a CPU hog
def test_a_closed_capture_leaves_no_map_mapped_even_while_its_object_is_kept() -> None:
    """The in-flight table (2^16 slots, 5 MiB) is read through a mapping, which holds the map in the
    kernel until it is unmapped: a recorder or a test that opens captures one after another must not
    keep one per capture until the process exits (close() unmaps it, whoever holds the object)."""
    pytest.importorskip("bcc", reason="needs bcc (apt install python3-bpfcc)")
    from bpf.loader import KernelCapture, KernelOptions, _kernel_at_least

    if not _kernel_at_least(5, 5):
        pytest.skip("needs BPF_F_MMAPABLE arrays (v5.5): before, the in-flight table is copied, not mapped")
    before = bpf_mappings()
    kept = []
    # nothing attached: the block probes attach in start(), the syscall ones are left out
    small = KernelOptions(syscalls=False, witness="off", sink_bytes=1 << 20, hand_over_bytes=1 << 20,
                          ringbuf_bytes=1 << 20)  # fmt: skip
    for _ in range(3):
        kc = KernelCapture(small)
        try:
            opened = bpf_mappings()
            assert kc._slots_view is not None, "the in-flight table was not mapped: this test shows nothing"
            assert len(opened) > len(before), opened
        finally:
            kc.close()
        kept.append(kc)
        left = sorted(set(bpf_mappings()) - set(before))
        assert bpf_mappings() == before, f"left mapped after close(): {left}"
    kc.close()  # a second close is harmless


def held_fds() -> dict[str, int]:
    """This process's open BPF programs and perf events (a tracepoint attachment), by /proc's name."""
    kinds = {"anon_inode:bpf-prog": "programs", "anon_inode:[perf_event]": "perf_events"}
    out = dict.fromkeys(kinds.values(), 0)
    for fd in Path("/proc/self/fd").iterdir():
        try:
            kind = kinds.get(os.readlink(fd))
        except OSError:  # the directory's own fd, closed since
            continue
        if kind:
            out[kind] += 1
    return out


@needs_root
@pytest.mark.slow  # two compiles of the program with its syscall probes, ~3 s each
def test_a_refused_typed_variant_is_detached_and_the_probe_read_variant_runs() -> None:
    """The syscall probes' typed fd lookups are refused by this kernel's verifier (placed past
    files_struct's end, as another kernel's layout would put them): the probe-read variant loads, the
    reason is kept, and the refused attempt's programs, which bcc attached one by one until one was
    refused, are not left attached (nor held) beside it."""
    pytest.importorskip("bcc", reason="needs bcc (apt install python3-bpfcc)")
    from bpf.loader import KernelCapture, KernelOptions

    before = held_fds()
    kc = KernelCapture(KernelOptions(witness="off", refuse_typed=True, sink_bytes=1 << 20,
                                     hand_over_bytes=1 << 20, ringbuf_bytes=1 << 20))  # fmt: skip
    try:
        assert (kc.fd_lookup or "").startswith("probe_read: typed refused: "), kc.fd_lookup
        held = held_fds()
        syscall_probes = sum(n.startswith(b"tracepoint__") for n in kc.bpf.funcs)
        assert syscall_probes > 10 and len(kc.bpf.tracepoint_fds) == syscall_probes
        assert held["programs"] - before["programs"] == len(kc.bpf.funcs), (held, before, len(kc.bpf.funcs))
        assert held["perf_events"] - before["perf_events"] == syscall_probes, (held, before)
    finally:
        kc.close()
    assert held_fds() == before
