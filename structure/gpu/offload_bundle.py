"""Clang offload bundles: how HIP (and OpenMP offload) ship AMD GPU code objects, plain or compressed.

The layouts follow clang's ``OffloadBundler.cpp`` (LLVM 14 for the plain bundle; LLVM 18-20 for the
compressed one) and the Clang documentation page "Clang Offload Bundler":

* a plain bundle: the 24-byte magic ``__CLANG_OFFLOAD_BUNDLE__``, a u64 entry count, then per entry a u64
  offset (from the bundle's start), a u64 size, a u64 target-triple length and the triple
  (``hipv4-amdgcn-amd-amdhsa--gfx90a``, ``host-x86_64-unknown-linux-gnu-``); the code objects follow;
* a compressed bundle (``--offload-compress``): the magic ``CCOB``, a u16 version and u16 method
  (0 zlib, 1 zstd), then by version: v1 u32 uncompressed size; v2 u32 total size (header included) and u32
  uncompressed size; v3 u64 total size and u64 uncompressed size; always a u64 hash (the low 64 bits of the
  MD5 of the uncompressed bundle) and then the compressed plain bundle. Version 1 records no total size:
  its compressed stream is read to its end.

Host executables and libraries carry bundles in their ``.hip_fatbin`` section (several, one per
translation unit, each at a 4096-byte boundary). :func:`build` and :func:`build_compressed` are the
writing twins of the readers; a plain bundle from :func:`build` is byte-identical to what
``clang-offload-bundler -type=bc`` (LLVM 14) writes for the same inputs, and unbundles with it
(checked in ``tests/structure/gpu/test_containers.py`` where the tool is installed).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from hpcsa.core.binfmt import Builder, align, layout, records
from hpcsa.core.dataclass import dataclass
from hpcsa.core.digests import md5
from hpcsa.core.errors import FormatError
from hpcsa.structure.gpu import decompress

MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CCOB_MAGIC = b"CCOB"
CCOB_VERSIONS = (1, 2, 3)
METHODS = {0: "zlib", 1: "zstd"}   # llvm::compression::Format

BUNDLE_HEADER = layout("<", 32, [("magic", 0, "S24"), ("count", 24, "u8")])
BUNDLE_ENTRY = layout("<", 24, [("offset", 0, "u8"), ("size", 8, "u8"), ("triple_size", 16, "u8")])
CCOB_COMMON = layout("<", 8, [("magic", 0, "S4"), ("version", 4, "u2"), ("method", 6, "u2")])
CCOB_HEADERS = {
    1: layout("<", 20, [("magic", 0, "S4"), ("version", 4, "u2"), ("method", 6, "u2"),
                        ("uncompressed_size", 8, "u4"), ("hash", 12, "u8")]),
    2: layout("<", 24, [("magic", 0, "S4"), ("version", 4, "u2"), ("method", 6, "u2"), ("total_size", 8, "u4"),
                        ("uncompressed_size", 12, "u4"), ("hash", 16, "u8")]),
    3: layout("<", 32, [("magic", 0, "S4"), ("version", 4, "u2"), ("method", 6, "u2"), ("total_size", 8, "u8"),
                        ("uncompressed_size", 16, "u8"), ("hash", 24, "u8")]),
}


@dataclass(frozen=True)
class BundleEntry:
    triple: str
    data: bytes
    container: str      # "offload bundle" or "CCOB v3 (zstd)" ...
    codec: str | None


def truncated_md5(data: bytes) -> int:
    """The hash a compressed bundle records: MD5's first 8 bytes as a little-endian u64 (LLVM's
    ``MD5Result::low``)."""
    return int.from_bytes(md5(data).digest()[:8], "little")


def read_bundle(data: bytes | memoryview, path: str, offset: int = 0, limit: int | None = None,
                container: str = "offload bundle", codec: str | None = None, where: str | None = None
                ) -> tuple[list[BundleEntry], int]:
    """The entries of the plain bundle at ``offset`` and the end of its last entry; ``container`` labels
    them, ``where`` starts error messages."""
    limit = len(data) if limit is None else min(limit, len(data))
    where = where or f"{container} at offset {offset:#x}"

    def fail(problem: str) -> FormatError:
        return FormatError(path, f"{where}: {problem}")

    if offset + BUNDLE_HEADER.itemsize > limit:
        raise fail("the bundle header is truncated")
    head = np.frombuffer(data, BUNDLE_HEADER, 1, offset)[0]
    if bytes(head["magic"]) != MAGIC:
        raise fail("no __CLANG_OFFLOAD_BUNDLE__ magic")
    count = int(head["count"])
    pos = offset + BUNDLE_HEADER.itemsize
    if count * BUNDLE_ENTRY.itemsize > limit - pos:
        raise fail(f"says {count} entries, more than its {limit - offset} bytes can hold; truncated or corrupt")
    out: list[BundleEntry] = []
    end = pos
    for i in range(count):
        if pos + BUNDLE_ENTRY.itemsize > limit:
            raise fail(f"entry {i} header is truncated")
        e = np.frombuffer(data, BUNDLE_ENTRY, 1, pos)[0]
        tsize, start, size = int(e["triple_size"]), offset + int(e["offset"]), int(e["size"])
        pos += BUNDLE_ENTRY.itemsize
        if pos + tsize > limit:
            raise fail(f"entry {i}: its {tsize}-byte target name runs past the end; truncated or corrupt")
        triple = bytes(data[pos:pos + tsize]).decode("utf-8", errors="replace")
        pos += tsize
        if start + size > limit:
            raise fail(f"entry {i} ({triple}): {size} bytes at {int(e['offset']):#x} run past the end of the "
                       f"bundle ({limit - offset} bytes); truncated or corrupt")
        out.append(BundleEntry(triple, bytes(data[start:start + size]), container, codec))
        end = max(end, start + size)
    return out, end


def read_compressed(data: bytes | memoryview, path: str, offset: int = 0, limit: int | None = None
                    ) -> tuple[list[BundleEntry], int]:
    """The entries of the ``CCOB`` compressed bundle at ``offset`` and the end of its compressed data."""
    limit = len(data) if limit is None else min(limit, len(data))

    def fail(problem: str) -> FormatError:
        return FormatError(path, f"compressed offload bundle (CCOB) at offset {offset:#x}: {problem}")

    if offset + CCOB_COMMON.itemsize > limit:
        raise fail("the header is truncated")
    common = np.frombuffer(data, CCOB_COMMON, 1, offset)[0]
    version, method = int(common["version"]), int(common["method"])
    if bytes(common["magic"]) != CCOB_MAGIC:
        raise fail("no CCOB magic")
    if version not in CCOB_HEADERS:
        raise fail(f"version {version} is not supported (hpcsa reads versions 1 to 3)")
    if method not in METHODS:
        raise fail(f"compression method {method} is not known (0 zlib, 1 zstd)")
    dtype = CCOB_HEADERS[version]
    if offset + dtype.itemsize > limit:
        raise fail(f"the version {version} header is truncated")
    head = np.frombuffer(data, dtype, 1, offset)[0]
    codec = METHODS[method]
    start = offset + dtype.itemsize
    if version == 1:
        stop = limit
    else:
        total = int(head["total_size"])
        if total < dtype.itemsize or offset + total > limit:
            raise fail(f"its total size {total} does not fit the {limit - offset} bytes there; truncated or "
                       "corrupt")
        stop = offset + total
    size = int(head["uncompressed_size"])
    payload = bytes(data[start:stop])
    try:
        if version == 1:  # no total size: the compressed stream ends where its codec says
            payload, stop = _one_stream(payload, codec, start, size)
        plain = decompress.DECOMPRESS[codec](payload, size)
    except ValueError as exc:
        raise fail(str(exc)) from None
    if truncated_md5(plain) != int(head["hash"]):
        raise fail(f"the decompressed bundle does not match the hash in the header ({int(head['hash']):#018x}); "
                   "corrupt")
    entries, _ = read_bundle(plain, path, 0, None, f"CCOB v{version} ({codec})", codec,
                             f"compressed offload bundle (CCOB v{version}) at offset {offset:#x}: its bundle")
    return entries, stop


def _one_stream(payload: bytes, codec: str, start: int, size: int) -> tuple[bytes, int]:
    """The bytes of the single zlib stream or zstd frame that ``payload`` begins with, and where it ends
    (fed in pieces, so a stream that decompresses past ``size`` stops there)."""
    if codec == "zlib":
        dobj: Any = zlib.decompressobj()
        errors: tuple[type[Exception], ...] = (zlib.error,)
    else:
        import zstandard

        dobj, errors = zstandard.ZstdDecompressor().decompressobj(), (zstandard.ZstdError,)
    fed = produced = 0
    try:
        while not dobj.eof and fed < len(payload) and produced <= size:
            produced += len(dobj.decompress(payload[fed:fed + (1 << 16)]))
            fed = min(fed + (1 << 16), len(payload))
    except errors as exc:
        raise ValueError(f"{codec} data is corrupt ({exc})") from None
    if not dobj.eof:
        raise ValueError(f"{codec} data is truncated or longer than the {size} bytes the header says")
    n = fed - len(dobj.unused_data)
    return payload[:n], start + n


def read_any(data: bytes | memoryview, path: str, offset: int = 0, limit: int | None = None
             ) -> tuple[list[BundleEntry], int]:
    """The plain or compressed bundle at ``offset``."""
    if bytes(data[offset:offset + 4]) == CCOB_MAGIC:
        return read_compressed(data, path, offset, limit)
    return read_bundle(data, path, offset, limit)


def read_all(data: bytes | memoryview, path: str, start: int = 0, end: int | None = None) -> list[BundleEntry]:
    """Every bundle from ``start`` to ``end`` (a ``.hip_fatbin`` section: bundles after padding)."""
    end = len(data) if end is None else end
    out: list[BundleEntry] = []
    pos = start
    while pos < end:
        hits = [h for h in (_find(data, MAGIC, pos, end), _find(data, CCOB_MAGIC, pos, end)) if h >= 0]
        if not hits:
            break
        got, stop = read_any(data, path, min(hits), end)
        out += got
        pos = max(stop, min(hits) + 4)
    return out


def _find(data: bytes | memoryview, magic: bytes, start: int, end: int) -> int:
    if isinstance(data, memoryview):
        data = bytes(data[start:end])
        at = data.find(magic)
        return at + start if at >= 0 else -1
    return data.find(magic, start, end)


def build(entries: Sequence[tuple[str, bytes]], alignment: int = 1) -> bytes:
    """A plain bundle of ``(triple, data)`` entries, each placed at a multiple of ``alignment`` (clang's
    ``-bundle-align``; 1 by default, as clang-offload-bundler 14 writes)."""
    head = Builder("<").array(records(BUNDLE_HEADER, 1, magic=MAGIC, count=len(entries)))
    size = len(head) + sum(BUNDLE_ENTRY.itemsize + len(t.encode()) for t, _ in entries)
    offsets = []
    for _, blob in entries:
        size = align(size, alignment)
        offsets.append(size)
        size += len(blob)
    for (triple, blob), off in zip(entries, offsets, strict=True):
        raw = triple.encode()
        head.array(records(BUNDLE_ENTRY, 1, offset=off, size=len(blob), triple_size=len(raw))).raw(raw)
    for (_, blob), off in zip(entries, offsets, strict=True):
        head.raw(bytes(off - len(head))).raw(blob)
    return bytes(head.buf)


def build_compressed(bundle: bytes, version: int = 3, codec: str = "zstd") -> bytes:
    """A ``CCOB`` compressed bundle holding the plain ``bundle`` (what ``clang --offload-compress`` makes)."""
    method = {v: k for k, v in METHODS.items()}[codec]
    payload = decompress.COMPRESS[codec](bundle)
    dtype = CCOB_HEADERS[version]
    fields = {"magic": CCOB_MAGIC, "version": version, "method": method, "uncompressed_size": len(bundle),
              "hash": truncated_md5(bundle)}
    if version > 1:
        fields["total_size"] = dtype.itemsize + len(payload)
    return records(dtype, 1, **fields).tobytes() + payload
