"""NVIDIA fatbins: the containers nvcc puts device code in (``nvcc -fatbin`` files, the ``.nv_fatbin``
section of host executables and libraries), with their compressed entries.

NVIDIA does not document the layout. What is declared here was read from the bytes nvcc 13.0 writes and
checked as follows (``tests/structure/gpu/test_containers.py`` repeats every check where nvcc is installed):

* A container is a 16-byte header (magic ``0xBA55ED50``, version 1, header size, payload size) followed by
  entries, each an entry header (its own size in the header: 0x50 for ELF, 0x70 for PTX, which carries the
  source name and options) and its payload, padded to 8 bytes. A host ELF's ``.nv_fatbin`` holds one or
  more containers back to back.
* Entry flags: bit 0x2000 marks a payload compressed in the LZ4 *block* format (no frame; what
  ``--compress-mode=speed`` writes), bit 0x8000 one compressed as a zstd frame (the default, ``size`` and
  ``balance`` modes of CUDA 13). Bit 0x2000 is also the flag of the "LZ-style" compression of older
  toolkits (``-Xfatbin=-compress-all`` before zstd); public reimplementations of its decoder decode the
  LZ4 block format, and it is read as such here, but no older toolkit's output was at hand to check. Then the u32 at
  +0x10 is the exact compressed length (the payload is padded past it) and the u64 at +0x38 the
  uncompressed length.
* Verified: for ``callgraph.cu`` built with ``nvcc -fatbin -arch=sm_80 -lineinfo -Xfatbin=-compress-all``
  under each ``--compress-mode`` (default, size, speed, balance), the decompressed ELF entry is
  byte-identical to the cubin ``nvcc -cubin`` emits for the same source and options, and to what
  ``cuobjdump -xelf all`` extracts; uncompressed entries (``-Xfatbin=-compress=false``) hold that same
  cubin as is. Fatbins made by :func:`build` are read back by ``cuobjdump -xelf`` to the same cubin.

Only ELF entries (cubins) are decompressed: PTX is not code hpcsa places samples in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from hpcsa.core.binfmt import Builder, align, field_offset, layout, records
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import FormatError
from hpcsa.structure.gpu import decompress

MAGIC = 0xBA55ED50
MAGIC_BYTES = MAGIC.to_bytes(4, "little")
VERSION = 1
KIND_PTX = 1
KIND_ELF = 2
FLAG_64BIT = 0x1
FLAG_LINUX = 0x10
FLAG_LZ4 = 0x2000
FLAG_ZSTD = 0x8000
CODEC_FLAGS = {"lz4": FLAG_LZ4, "zstd": FLAG_ZSTD}

HEADER = layout("<", 16, [("magic", 0, "u4"), ("version", 4, "u2"), ("header_size", 6, "u2"),
                          ("payload_size", 8, "u8")])
ENTRY = layout("<", 64, [
    ("kind", 0, "u2"),                 # 1 PTX, 2 ELF
    ("entry_version", 2, "u2"),        # 0x0101 in every entry seen
    ("header_size", 4, "u4"),          # from the entry's start to its payload
    ("payload_size", 8, "u8"),         # padded to 8 bytes
    ("compressed_size", 16, "u4"),     # exact length of compressed data (0 when not compressed)
    ("ptx_address_size", 20, "u4"),    # 64 in PTX entries, 0 in ELF ones
    ("tool_version", 24, "u4"),        # not interpreted
    ("arch", 28, "u4"),                # SM number: 80 = sm_80
    ("name_offset", 32, "u4"),         # source name (from the entry's start), PTX and ELF
    ("name_size", 36, "u4"),
    ("flags", 40, "u8"),
    ("reserved", 48, "u8"),
    ("uncompressed_size", 56, "u8"),   # length after decompression (0 when not compressed)
])


@dataclass(frozen=True)
class FatbinEntry:
    kind: int
    arch: int
    codec: str | None   # "zstd", "lz4" or None (stored as is)
    data: bytes         # the payload, decompressed
    offset: int         # of the entry header in the data read


def _codec(flags: int) -> str | None:
    found = [name for name, bit in CODEC_FLAGS.items() if flags & bit]
    if len(found) > 1:
        raise ValueError(f"flags {flags:#x} name two codecs")
    return found[0] if found else None


def read_container(data: bytes | memoryview, path: str, offset: int = 0, kinds: Sequence[int] = (KIND_ELF,),
                   limit: int | None = None) -> tuple[list[FatbinEntry], int]:
    """The entries of ``kinds`` in the container at ``offset`` (decompressed), and the container's end
    (which must not pass ``limit``, the end of the section holding it)."""
    limit = len(data) if limit is None else min(limit, len(data))
    where = f"NVIDIA fatbin at offset {offset:#x}"

    def fail(problem: str) -> FormatError:
        return FormatError(path, f"{where}: {problem}")

    if offset + HEADER.itemsize > limit:
        raise fail("the container header is truncated")
    head = np.frombuffer(data, HEADER, 1, offset)[0]
    if int(head["magic"]) != MAGIC:
        raise fail("no fatbin magic 0xBA55ED50")
    if int(head["version"]) != VERSION:
        raise fail(f"container version {int(head['version'])} is not supported (hpcsa reads version {VERSION})")
    start = offset + int(head["header_size"])
    end = start + int(head["payload_size"])
    if int(head["header_size"]) < HEADER.itemsize or end > limit:
        raise fail(f"the container ({int(head['payload_size'])} bytes after a {int(head['header_size'])}-byte "
                   f"header) runs past the end of the data ({limit - offset} bytes); truncated or corrupt")
    out: list[FatbinEntry] = []
    pos = start
    while pos < end:
        if pos + 16 > end:
            raise fail(f"entry header at {pos:#x} is truncated")
        e = _entry_header(data, pos, end)
        hsize, psize = int(e["header_size"]), int(e["payload_size"])
        if hsize < 16 or pos + hsize + psize > end:
            raise fail(f"entry at {pos:#x} ({hsize}-byte header, {psize}-byte payload) runs past the container "
                       f"end {end:#x}; truncated or corrupt")
        if int(e["kind"]) in kinds:
            out.append(_entry(data, pos, e, fail))
        pos += hsize + psize
    return out, end


def _entry_header(data: bytes | memoryview, pos: int, end: int) -> np.void:
    """The entry header at ``pos``; fields past a shorter header than :data:`ENTRY` read as zero."""
    raw = bytearray(data[pos:min(pos + ENTRY.itemsize, end)])
    raw += bytes(ENTRY.itemsize - len(raw))
    at = field_offset(ENTRY, "header_size")  # needed first: it says how much of the 64 bytes is header
    hsize = int.from_bytes(raw[at:at + 4], "little")
    if hsize < ENTRY.itemsize:
        raw[max(hsize, 16):] = bytes(ENTRY.itemsize - max(hsize, 16))
    return np.frombuffer(bytes(raw), ENTRY, 1)[0]


def _entry(data: bytes | memoryview, pos: int, e: np.void, fail: Callable[[str], FormatError]) -> FatbinEntry:
    hsize, psize = int(e["header_size"]), int(e["payload_size"])
    payload = bytes(data[pos + hsize:pos + hsize + psize])
    try:
        codec = _codec(int(e["flags"]))
        if codec is not None:
            if hsize < ENTRY.itemsize:
                raise ValueError(f"a compressed entry with a {hsize}-byte header (no uncompressed size)")
            csize = int(e["compressed_size"])
            if csize == 0 or csize > psize:
                raise ValueError(f"compressed size {csize} does not fit the {psize}-byte payload")
            payload = decompress.DECOMPRESS[codec](payload[:csize], int(e["uncompressed_size"]))
    except ValueError as exc:
        raise fail(f"entry at {pos:#x} (sm_{int(e['arch'])}): {exc}") from None
    return FatbinEntry(int(e["kind"]), int(e["arch"]), codec, payload, pos)


def read_all(data: bytes | memoryview, path: str, start: int = 0, end: int | None = None,
             kinds: Sequence[int] = (KIND_ELF,)) -> list[FatbinEntry]:
    """Every container from ``start`` up to ``end`` (containers follow each other, maybe after padding)."""
    end = len(data) if end is None else end
    out: list[FatbinEntry] = []
    pos = start
    view = bytes(data[start:end])
    while True:
        at = view.find(MAGIC_BYTES, pos - start)
        if at < 0:
            return out
        got, stop = read_container(data, path, start + at, kinds, end)
        out += got
        pos = stop


def build(entries: Sequence[tuple[int, int, bytes, str | None]]) -> bytes:
    """A fatbin container of ``(kind, arch, payload, codec)`` entries: the writing twin of
    :func:`read_container` (tests and fixtures use it to make compressed and damaged fatbins)."""
    body = Builder("<")
    for kind, arch, payload, codec in entries:
        stored = payload if codec is None else decompress.COMPRESS[codec](payload)
        padded = align(len(stored), 8)
        flags = FLAG_64BIT | FLAG_LINUX | (CODEC_FLAGS[codec] if codec else 0)
        head = records(ENTRY, 1, kind=kind, entry_version=0x0101, header_size=ENTRY.itemsize,
                       payload_size=padded, compressed_size=len(stored) if codec else 0, arch=arch,
                       flags=flags, uncompressed_size=len(payload) if codec else 0)
        body.array(head).raw(stored).pad_to(8)
    head = records(HEADER, 1, magic=MAGIC, version=VERSION, header_size=HEADER.itemsize, payload_size=len(body))
    return head.tobytes() + bytes(body.buf)
