"""bpf/btf.py against bpftool's own reading of the running kernel's BTF: every field the probes read
must have the offset and size bpftool reports (a wrong one is a wrong read in the kernel)."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess

import pytest

from bpf.btf import BTF, PTR, STRUCT, VMLINUX_BTF, kernel_btf
from bpf.loader import KERNEL_FIELDS, OVERLAY_FIELDS

_TYPE = re.compile(r"^\[(\d+)\] (\w+) '([^']*)'(.*)$")
_MEMBER = re.compile(r"^\t'([^']*)' type_id=(\d+) bits_offset=(\d+)(?: bitfield_size=(\d+))?$")
_ATTR = re.compile(r"(\w+)=(\d+)")


def bpftool_types() -> dict[int, dict]:
    raw = subprocess.run(
        ["bpftool", "btf", "dump", "file", str(VMLINUX_BTF), "format", "raw"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    types: dict[int, dict] = {}
    cur: dict | None = None
    for line in raw.splitlines():
        if m := _TYPE.match(line):
            cur = {"kind": m[2], "name": m[3], "members": []} | {k: int(v) for k, v in _ATTR.findall(m[4])}
            types[int(m[1])] = cur
        elif (m := _MEMBER.match(line)) and cur is not None:
            cur["members"].append((m[1], int(m[2]), int(m[3])))
    return types


def size_of(types: dict[int, dict], tid: int) -> int:
    t = types[tid]
    if t["kind"] in ("TYPEDEF", "CONST", "VOLATILE", "RESTRICT", "TYPE_TAG"):
        return size_of(types, t["type_id"])
    if t["kind"] == "PTR":
        return 8
    if t["kind"] == "ARRAY":
        return size_of(types, t["type_id"]) * t["nr_elems"]
    return t["size"]


def find(types: dict[int, dict], tid: int, member: str) -> tuple[int, int] | None:
    """(bit offset, type id) of `member`, looking inside anonymous structs/unions."""
    for name, mtid, bits in types[tid]["members"]:
        if name == member:
            return bits, mtid
        if name == "(anon)":
            inner = find(types, mtid, member)
            if inner:
                return bits + inner[0], inner[1]
    return None


@pytest.mark.skipif(shutil.which("bpftool") is None, reason="needs bpftool (scripts/setup.sh installs it)")
@pytest.mark.skipif(not VMLINUX_BTF.exists(), reason="needs kernel BTF")
def test_every_probed_field_matches_bpftool() -> None:
    types = bpftool_types()
    structs = {t["name"]: tid for tid, t in types.items() if t["kind"] in ("STRUCT", "UNION")}
    ours = kernel_btf()
    # overlayfs is built into this kernel (in vmlinux's BTF); as a module it has its own file
    fields = list(KERNEL_FIELDS.values()) + list(OVERLAY_FIELDS.values())
    for struct_name, member, size in fields:
        bits, mtid = find(types, structs[struct_name], member) or pytest.fail(f"{struct_name}.{member}")
        assert ours.member(struct_name, member) == (bits // 8, size_of(types, mtid)), (struct_name, member)
        assert size is None or size_of(types, mtid) == size  # what the program reads


@pytest.mark.skipif(not VMLINUX_BTF.exists(), reason="needs kernel BTF")
def test_a_modules_split_btf_continues_vmlinuxs_ids_and_strings() -> None:
    # A module's BTF (e.g. /sys/kernel/btf/overlay) numbers its types after vmlinux's and its
    # strings after vmlinux's string section, and refers to vmlinux's types by their ids.
    base = kernel_btf()
    first = len(base.types)  # the module's first type id
    task = base.struct_id("task_struct")
    strings = b"\0iofp_mod\0owner\0next\0"
    off = len(base._strings)  # the split format's string base
    name, owner, nxt = off + 1, off + 1 + len("iofp_mod\0"), off + 1 + len("iofp_mod\0owner\0")
    types = struct.pack("<III", 0, PTR << 24, task)  # id first: struct task_struct *
    types += struct.pack("<III", name, STRUCT << 24 | 2, 24)  # id first + 1
    types += struct.pack("<III", owner, first, 0) + struct.pack("<III", nxt, first, 128)
    header = struct.pack("<HBBIIIII", 0xEB9F, 1, 0, 24, 0, len(types), len(types), len(strings))
    blob = header + types + strings
    mod = BTF(blob, base)
    assert mod.struct_id("iofp_mod") == first + 1
    assert mod.member("iofp_mod", "next") == (16, 8)
    assert mod.member("task_struct", "tgid") == base.member("task_struct", "tgid")
    assert mod.resolve(mod.types[first].size) is base.types[task]
