"""A minimal reader of the kernel's BTF (/sys/kernel/btf/vmlinux): struct member offsets and enum values.

The bcc program is compiled against whatever kernel headers the distro ships (on the lab machine: 6.1
headers for a 6.18 kernel), so no struct layout from a header can be trusted. Every kernel field the
program reads is located here, in the running kernel's own type information, and handed to the C code
as a -D define. Only what iofp needs is implemented: structs/unions (with anonymous members), typedef
chains, array sizes and enums, and a module's split BTF (/sys/kernel/btf/MODULE: its type ids and
string offsets continue vmlinux's). Format: Documentation/bpf/btf.rst.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cache
from pathlib import Path

BTF_DIR = Path("/sys/kernel/btf")
VMLINUX_BTF = BTF_DIR / "vmlinux"

BTF_MAGIC = 0xEB9F
# kinds (include/uapi/linux/btf.h)
INT, PTR, ARRAY, STRUCT, UNION, ENUM, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT = range(1, 12)
FUNC, FUNC_PROTO, VAR, DATASEC, FLOAT, DECL_TAG, TYPE_TAG, ENUM64 = range(12, 20)
_MODIFIERS = {TYPEDEF, VOLATILE, CONST, RESTRICT, TYPE_TAG}


class BTFError(Exception):
    """The BTF is missing, unreadable, or lacks a type or member iofp needs."""


@dataclass(frozen=True)
class Member:
    name: str
    type_id: int
    bit_offset: int
    bitfield_size: int


@dataclass(frozen=True)
class BType:
    kind: int
    name: str
    size: int  # byte size for INT/STRUCT/UNION/ENUM; referenced type id for PTR/TYPEDEF/...
    members: tuple[Member, ...] = ()
    enum_values: tuple[tuple[str, int], ...] = ()
    array: tuple[int, int] = (0, 0)  # ARRAY: (element type id, number of elements)


class BTF:
    def __init__(self, data: bytes, base: BTF | None = None) -> None:
        """`base`: vmlinux's BTF when `data` is a module's split BTF."""
        if len(data) < 24:
            raise BTFError("BTF blob too short")
        magic, _version, _flags, hdr_len = struct.unpack_from("<HBBI", data, 0)
        if magic != BTF_MAGIC:
            raise BTFError(f"bad BTF magic {magic:#x}")
        type_off, type_len, str_off, str_len = struct.unpack_from("<IIII", data, 8)
        # a module's string offsets continue vmlinux's
        own = data[hdr_len + str_off : hdr_len + str_off + str_len]
        self._strings = (base._strings if base else b"") + own
        self.types: list[BType | None] = list(base.types) if base else [None]  # type id 0 is void
        self._by_name: dict[tuple[int, str], int] = dict(base._by_name) if base else {}
        self._parse(data[hdr_len + type_off : hdr_len + type_off + type_len])

    def _str(self, off: int) -> str:
        end = self._strings.index(b"\0", off)
        return self._strings[off:end].decode()

    def _parse(self, blob: bytes) -> None:
        pos = 0
        while pos < len(blob):
            name_off, info, size_or_type = struct.unpack_from("<III", blob, pos)
            pos += 12
            kind = (info >> 24) & 0x1F
            vlen = info & 0xFFFF
            kind_flag = info >> 31
            name = self._str(name_off)
            members: tuple[Member, ...] = ()
            values: tuple[tuple[str, int], ...] = ()
            array = (0, 0)
            if kind in (INT, VAR, DECL_TAG):
                pos += 4
            elif kind == ARRAY:
                elem, _index_type, nelems = struct.unpack_from("<III", blob, pos)
                array = (elem, nelems)
                pos += 12
            elif kind in (STRUCT, UNION):
                ms = []
                for _ in range(vlen):
                    m_name, m_type, m_off = struct.unpack_from("<III", blob, pos)
                    pos += 12
                    if kind_flag:
                        ms.append(Member(self._str(m_name), m_type, m_off & 0xFFFFFF, m_off >> 24))
                    else:
                        ms.append(Member(self._str(m_name), m_type, m_off, 0))
                members = tuple(ms)
            elif kind == ENUM:
                vs = []
                for _ in range(vlen):
                    e_name, e_val = struct.unpack_from("<Ii", blob, pos)
                    pos += 8
                    vs.append((self._str(e_name), e_val))
                values = tuple(vs)
            elif kind == ENUM64:
                vs = []
                for _ in range(vlen):
                    e_name, lo, hi = struct.unpack_from("<III", blob, pos)
                    pos += 12
                    vs.append((self._str(e_name), lo | (hi << 32)))
                values = tuple(vs)
            elif kind == FUNC_PROTO:
                pos += 8 * vlen
            elif kind == DATASEC:
                pos += 12 * vlen
            elif kind not in (PTR, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, FLOAT, TYPE_TAG):
                raise BTFError(f"unknown BTF kind {kind}")
            tid = len(self.types)
            self.types.append(BType(kind, name, size_or_type, members, values, array))
            if name and kind in (STRUCT, UNION, ENUM, ENUM64, TYPEDEF, FUNC):
                self._by_name.setdefault((kind, name), tid)

    # ---- queries --------------------------------------------------------------------------

    def struct_id(self, name: str) -> int:
        tid = self._by_name.get((STRUCT, name)) or self._by_name.get((UNION, name))
        if tid is None:
            raise BTFError(f"kernel BTF has no struct {name}")
        return tid

    def has_typedef(self, name: str) -> bool:
        return (TYPEDEF, name) in self._by_name

    def typedef_id(self, name: str) -> int:
        """The type id of typedef `name` (a BTF tracepoint attaches by its btf_trace_* typedef's id)."""
        tid = self._by_name.get((TYPEDEF, name))
        if tid is None:
            raise BTFError(f"kernel BTF has no typedef {name}")
        return tid

    def resolve(self, tid: int) -> BType | None:
        """Follow typedefs and qualifiers to the underlying type."""
        t = self.types[tid]
        while t is not None and t.kind in _MODIFIERS:
            t = self.types[t.size]
        return t

    def _find(self, tid: int, member: str) -> tuple[int, Member] | None:
        """Bit offset and member `member` of struct `tid`, descending into anonymous members."""
        t = self.resolve(tid)
        if t is None or t.kind not in (STRUCT, UNION):
            return None
        for m in t.members:
            if m.name == member:
                return m.bit_offset, m
            if not m.name:
                inner = self._find(m.type_id, member)
                if inner is not None:
                    return m.bit_offset + inner[0], inner[1]
        return None

    def member(self, struct_name: str, member: str) -> tuple[int, int]:
        """(byte offset, byte size) of `struct_name.member`; raises BTFError if absent or a bitfield."""
        found = self._find(self.struct_id(struct_name), member)
        if found is None:
            raise BTFError(f"kernel BTF: struct {struct_name} has no member {member}")
        bit_off, m = found
        if m.bitfield_size or bit_off % 8:
            raise BTFError(f"kernel BTF: {struct_name}.{member} is a bitfield")
        return bit_off // 8, self.sizeof(m.type_id)

    def sizeof(self, tid: int) -> int:
        t = self.resolve(tid)
        if t is None:
            return 0
        if t.kind == PTR:
            return 8
        if t.kind in (INT, STRUCT, UNION, ENUM, ENUM64, FLOAT):
            return t.size
        if t.kind == ARRAY:
            return self.sizeof(t.array[0]) * t.array[1]
        raise BTFError(f"kernel BTF: no size for kind {t.kind}")

    def enum_value(self, name: str) -> int:
        """Value of an enumerator (e.g. "__REQ_FUA") in any enum."""
        for t in self.types:
            if t is not None and t.kind in (ENUM, ENUM64):
                for n, v in t.enum_values:
                    if n == name:
                        return v
        raise BTFError(f"kernel BTF has no enumerator {name}")

    def enum_values(self, names: list[str]) -> dict[str, int]:
        wanted = set(names)
        out: dict[str, int] = {}
        for t in self.types:
            if t is not None and t.kind in (ENUM, ENUM64):
                for n, v in t.enum_values:
                    if n in wanted and n not in out:
                        out[n] = v
        missing = wanted - out.keys()
        if missing:
            raise BTFError(f"kernel BTF has no enumerator {sorted(missing)[0]}")
        return out


@cache
def kernel_btf(path: Path = VMLINUX_BTF) -> BTF:
    try:
        return BTF(path.read_bytes())
    except OSError as e:
        raise BTFError(f"cannot read {path}: {e.strerror}") from None


def btf_with_struct(name: str, module: str, base: BTF | None = None) -> BTF | None:
    """The BTF that describes struct `name`: vmlinux's (`base`, else read) if the code is built in,
    else the loaded module's (split on vmlinux's); None when neither has it (module not loaded, or
    no BTF)."""
    base = base or kernel_btf()
    try:
        base.struct_id(name)
        return base
    except BTFError:
        pass
    path = BTF_DIR / module
    try:
        btf = BTF(path.read_bytes(), base)
        btf.struct_id(name)
        return btf
    except (OSError, BTFError):
        return None
