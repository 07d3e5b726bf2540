"""Files written by CUPTI's PC-sampling utility library (``libpcsamplingutil``, ``CuptiUtilPutPcSampData``).

Layout (little-endian; observed on files written by NVIDIA's own library: CUPTI
documents the utility's API, ``pcsamplingutil.h``, but not its file schema)::

    u32 version (= 1), u32 buffer count
    per buffer: u64 record count, u64 stall-reason count, u64 selected-reason count, u64 byte size,
                then a FlatBuffers table (file identifier "CUPS") of that size:
        0 -> table { 5 -> table { 1 selected indices [u32], 7 reason indices [u32], 8 reason names [str] } }
        3 totalSamples, 4 droppedSamples, 7 rangeId (u64), 8 [PCData], ...
    PCData: 1 cubinCrc, 2 pcOffset (u64), 4 functionName, 5 functionIndex (u32),
            6 [struct {u32 reason index; u32 samples}], 7 correlationId (u32; 0 in continuous mode)

Reason indices are device specific, so the name table travels with the data
(only some buffers repeat it; the last one seen applies). The FlatBuffers are
walked with the ``flatbuffers`` package's schema-less ``Table``; every offset is
checked against the buffer first, so a corrupt file gives one error line.
"""

from __future__ import annotations

import os
import struct
from typing import Any

import numpy as np
from flatbuffers import encode
from flatbuffers import number_types as N
from flatbuffers.table import Table

from hpcsa.core.errors import FormatError, UnsupportedError
from hpcsa.ingest import model as M
from hpcsa.ingest.stalls import stall_class
from hpcsa.ingest.vendors import Probe, VendorReader, register

#: How the PC sampling API names a stall reason: ``smsp__pcsamp_warps_issue_stalled_<reason>[_not_issued]``.
STALL_METRIC_PREFIX = "smsp__pcsamp_warps_issue_stalled_"

SUPPORTED_VERSIONS = (1,)
IDENT = b"CUPS"


def recognise(probe: Probe) -> bool:
    head = probe.head
    return len(head) >= 48 and head[44:48] == IDENT and struct.unpack_from("<I", head, 0)[0] < 1 << 16


class _Tab:
    """A FlatBuffers table with bounds-checked field access."""

    def __init__(self, path: str, buf: bytearray, pos: int) -> None:
        if not 0 <= pos <= len(buf) - 4:
            raise FormatError(path, f"FlatBuffers table offset {pos} lies outside its buffer")
        self.path, self.buf = path, buf
        vt = pos - encode.Get(N.SOffsetTFlags.packer_type, buf, pos)
        if not 0 <= vt <= len(buf) - 4:
            raise FormatError(path, "FlatBuffers vtable lies outside its buffer; the file is corrupt")
        self.t = Table(buf, pos)

    def off(self, field: int) -> int:
        return self.t.Offset(4 + 2 * field)

    def u(self, field: int, flags: type[Any] = N.Uint64Flags, default: int = 0) -> int:
        o = self.off(field)
        if not o:
            return default
        if self.t.Pos + o + flags.bytewidth > len(self.buf):
            raise FormatError(self.path, "FlatBuffers field runs past its buffer; the file is corrupt")
        return int(self.t.Get(flags, self.t.Pos + o))

    def table(self, field: int) -> _Tab | None:
        o = self.off(field)
        return _Tab(self.path, self.buf, self.t.Indirect(self.t.Pos + o)) if o else None

    def vector(self, field: int, item: int) -> tuple[int, int]:
        o = self.off(field)
        if not o:
            return 0, 0
        n, start = self.t.VectorLen(o), self.t.Vector(o)
        if start + n * item > len(self.buf):
            raise FormatError(self.path, "FlatBuffers vector runs past its buffer; the file is corrupt")
        return n, start

    def tables(self, field: int) -> list[_Tab]:
        n, start = self.vector(field, 4)
        return [_Tab(self.path, self.buf, self.t.Indirect(start + 4 * i)) for i in range(n)]

    def u32s(self, field: int) -> list[int]:
        n, start = self.vector(field, 4)
        return list(struct.unpack_from(f"<{n}I", self.buf, start)) if n else []

    def strings(self, field: int) -> list[str]:
        n, start = self.vector(field, 4)
        return [self.t.String(start + 4 * i).decode("utf-8", "replace") for i in range(n)]

    def string(self, field: int) -> str:
        o = self.off(field)
        return self.t.String(self.t.Pos + o).decode("utf-8", "replace") if o else ""


def read(path: str) -> M.GpuTrace:
    with open(path, "rb") as fh:
        data = fh.read()
    if len(data) < 8:
        raise FormatError(path, "too short for a CUPTI PC-sampling file")
    version, nbuf = struct.unpack_from("<II", data, 0)
    if version not in SUPPORTED_VERSIONS:
        raise UnsupportedError(path, f"CUPTI PC-sampling file version {version} is not supported "
                               f"(hpcsa reads version {', '.join(map(str, SUPPORTED_VERSIONS))})")
    tr = M.GpuTrace(source=f"cupti-pcsampling-util v{version}", path=path, clock="none (samples only)",
                    api_domain="CUDA")
    names: dict[int, str] = {}
    rows: list[tuple[int, int, int, int, int]] = []  # corr, symbol, pc, reason index, samples
    symbols: dict[tuple[int, str], int] = {}
    pos = 8
    for b in range(nbuf):
        if pos + 32 > len(data):
            raise FormatError(path, f"buffer {b} header runs past the end of the file; the file is truncated")
        _count, _nst, _nsel, size = struct.unpack_from("<QQQQ", data, pos)
        pos += 32
        if pos + size > len(data) or size < 8:
            raise FormatError(path, f"buffer {b} ({size} bytes) runs past the end of the file; truncated")
        buf = bytearray(data[pos:pos + size])
        pos += size
        if buf[4:8] != IDENT:
            raise FormatError(path, f"buffer {b} is not a CUPTI PC-sampling FlatBuffer (no 'CUPS' identifier)")
        root = _Tab(path, buf, encode.Get(N.UOffsetTFlags.packer_type, buf, 0))
        cfg = root.table(0)
        reasons = cfg.table(5) if cfg else None
        if reasons is not None:
            idx, nm = reasons.u32s(7), reasons.strings(8)
            if len(idx) == len(nm) and idx:
                names = dict(zip(idx, nm, strict=True))
        for pc in root.tables(8):
            crc, name = pc.u(1), pc.string(4)
            key = (crc, name)
            if key not in symbols:
                tr.code_objects.setdefault(crc, M.CodeObject(crc, "cubin", crc=crc))
                symbols[key] = tr.symbol(M.KernelSymbol(name, crc, function_index=pc.u(5, N.Uint32Flags)))
            n, start = pc.vector(6, 8)
            for i in range(n):
                reason, samples = struct.unpack_from("<II", buf, start + 8 * i)
                rows.append((pc.u(7, N.Uint32Flags), symbols[key], pc.u(2), reason, samples))
    if pos != len(data):
        raise FormatError(path, f"{len(data) - pos} bytes after the last buffer; the file is corrupt")
    if rows:
        a = np.array(rows, dtype=np.int64)
        cls = np.array([stall_class("cupti", names.get(int(r), "").removeprefix(STALL_METRIC_PREFIX)
                                    .removesuffix("_not_issued")) for r in a[:, 3]], np.uint8)
        tr.samples = M.table(M.SAMPLE_DTYPE, len(a), process=0, corr=a[:, 0], symbol=a[:, 1],
                             pc=a[:, 2], stall=cls, samples=a[:, 4], stall_samples=a[:, 4])
    tr.processes[0] = M.ProcessInfo(0, name=os.path.basename(path))
    return tr


register(VendorReader(name="cupti-pcsampling-util", label="CUPTI PC-sampling file", what="CUPTI PC-sampling file",
                      rank=50, recognise=recognise, read=lambda paths: read(paths[0])))
