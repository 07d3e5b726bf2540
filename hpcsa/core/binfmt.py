"""Binary layouts declared as data, shared by every reader and writer.

A fixed-size record is declared once with :func:`layout` as a table of
``(field, offset, type)``; the result is a numpy structured dtype, so a reader
views a whole section with one ``np.frombuffer`` and a writer fills an array of
the same dtype and emits ``tobytes()``. Variable-length parts (length-prefixed
strings, NUL-terminated strings, lists) go through :class:`Cursor` and
:class:`Builder`, which check every bound and report problems as
:class:`~hpcsa.core.errors.FormatError` naming the file.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Sequence
from typing import Any, Literal, TypeVar, cast

import numpy as np

from hpcsa.core.errors import FormatError
from hpcsa.core.fileio import map_input

Field = tuple[str, int, str]


def layout(endian: str, size: int, fields: Sequence[Field]) -> np.dtype:
    """A structured dtype of ``size`` bytes with each field at its declared offset.

    ``endian`` is ``'<'`` or ``'>'``; types are numpy codes without byte order
    (``u1 u2 u4 u8 i8 f8``, or ``S<n>``/``V<n>`` for raw bytes).
    """
    if endian not in "<>":
        raise ValueError(endian)
    names, formats, offsets = [], [], []
    for name, offset, code in fields:
        dt = np.dtype(code)
        if dt.kind in "uifc" and dt.itemsize > 1:
            dt = dt.newbyteorder(cast(Literal["<", ">"], endian))  # one of the two, checked above
        if offset + dt.itemsize > size:
            raise ValueError(f"field {name} overflows a {size}-byte record")
        names.append(name)
        formats.append(dt)
        offsets.append(offset)
    return np.dtype({"names": names, "formats": formats, "offsets": offsets, "itemsize": size})


def field_names(dtype: np.dtype) -> tuple[str, ...]:
    """The fields of a structured ``dtype``, in order (its ``names``: numpy's are None for a plain dtype)."""
    names = dtype.names
    if names is None:
        raise TypeError(f"{dtype} is not a structured dtype")
    return names


def field_offset(dtype: np.dtype, name: str) -> int:
    """The offset in bytes of the field ``name`` of a structured ``dtype``."""
    fields = dtype.fields
    if fields is None:
        raise TypeError(f"{dtype} is not a structured dtype")
    return fields[name][1]


Aligned = TypeVar("Aligned", int, np.ndarray)


def align(value: Aligned, to: int) -> Aligned:
    """``value`` (a number, or an array of them) rounded up to a multiple of ``to``."""
    return (value + to - 1) // to * to


class Blob:
    """A whole input file as read-only bytes (memory-mapped when it is large)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self.data: bytes | mmap.mmap = map_input(self.path, map_from=1 << 20)

    def __len__(self) -> int:
        return len(self.data)

    def fail(self, problem: str) -> FormatError:
        return FormatError(self.path, problem)

    def bytes(self, offset: int, size: int, what: str) -> bytes:
        self.check(offset, size, what)
        return bytes(self.data[offset : offset + size])

    def check(self, offset: int, size: int, what: str) -> None:
        if offset < 0 or size < 0 or offset + size > len(self.data):
            if offset >= len(self.data) or offset < 0:
                raise self.fail(f"{what} at offset {offset:#x} lies beyond the end of the file "
                                f"({len(self.data)} bytes); the file is truncated or corrupt")
            raise self.fail(f"{what} ({size} bytes at {offset:#x}) runs past the end of the file "
                            f"({len(self.data)} bytes); the file is truncated or corrupt")

    def array(self, dtype: np.dtype, offset: int, count: int, what: str) -> np.ndarray:
        """``count`` records of ``dtype`` at ``offset``, bounds-checked (never allocates more than the file)."""
        if count < 0:
            raise self.fail(f"{what}: negative count {count}")
        self.check(offset, count * dtype.itemsize, what)
        return np.frombuffer(self.data, dtype=dtype, count=count, offset=offset)

    def record(self, dtype: np.dtype, offset: int, what: str) -> np.void:
        return self.array(dtype, offset, 1, what)[0]

    def cstring(self, offset: int, what: str = "string") -> str:
        """A NUL-terminated UTF-8 string at ``offset``."""
        if offset < 0 or offset >= len(self.data):
            raise self.fail(f"{what} pointer {offset:#x} lies outside the file")
        end = self.data.find(b"\0", offset)
        if end < 0:
            raise self.fail(f"{what} at {offset:#x} is not NUL-terminated")
        raw = self.data[offset:end]
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError:
            return bytes(raw).decode("utf-8", errors="surrogateescape")


_INT = {1: "B", 2: "H", 4: "I", 8: "Q"}


class Cursor:
    """Sequential, bounds-checked reading of variable-length parts of a :class:`Blob`."""

    def __init__(self, blob: Blob, pos: int, end: int | None, endian: str, section: str) -> None:
        self.blob = blob
        self.pos = pos
        self.end = len(blob) if end is None else min(end, len(blob))
        self.endian = endian
        self.section = section

    def fail(self, problem: str) -> FormatError:
        return self.blob.fail(f"{self.section}: {problem}")

    def take(self, size: int, what: str) -> bytes:
        if size < 0 or self.pos + size > self.end:
            raise self.fail(f"{what} ({size} bytes at {self.pos:#x}) runs past the end of the section "
                            f"(ends at {self.end:#x}); the file is truncated or corrupt")
        raw = bytes(self.blob.data[self.pos : self.pos + size])
        self.pos += size
        return raw

    def uint(self, size: int, what: str) -> int:
        return struct.unpack(self.endian + _INT[size], self.take(size, what))[0]

    def u8(self, what: str = "u8") -> int:
        return self.uint(1, what)

    def u16(self, what: str = "u16") -> int:
        return self.uint(2, what)

    def u32(self, what: str = "u32") -> int:
        return self.uint(4, what)

    def u64(self, what: str = "u64") -> int:
        return self.uint(8, what)

    def f64(self, what: str = "f64") -> float:
        return struct.unpack(self.endian + "d", self.take(8, what))[0]

    def count(self, size: int, item_size: int, what: str) -> int:
        """A list length, refused when the remaining bytes cannot possibly hold it."""
        n = self.uint(size, what)
        if n * item_size > self.end - self.pos:
            raise self.fail(f"{what} says {n} entries but only {self.end - self.pos} bytes remain")
        return n

    def lstring(self, what: str = "string") -> str:
        """A u32 length followed by that many bytes (hpcrun's ``str``)."""
        n = self.count(4, 1, f"{what} length")
        raw = self.take(n, what)
        return raw.decode("utf-8", errors="surrogateescape")

    def array(self, dtype: np.dtype, count: int, what: str) -> np.ndarray:
        arr = self.blob.array(dtype, self.pos, count, f"{self.section}: {what}")
        if self.pos + count * dtype.itemsize > self.end:
            raise self.fail(f"{what} runs past the end of the section")
        self.pos += count * dtype.itemsize
        return arr


class Builder:
    """Appends binary data; the writing twin of :class:`Cursor`."""

    def __init__(self, endian: str) -> None:
        self.endian = endian
        self.buf = bytearray()

    def __len__(self) -> int:
        return len(self.buf)

    def raw(self, data: bytes | bytearray | memoryview) -> Builder:
        self.buf += data
        return self

    def uint(self, size: int, value: int) -> Builder:
        self.buf += struct.pack(self.endian + _INT[size], value)
        return self

    def u8(self, value: int) -> Builder:
        return self.uint(1, value)

    def u16(self, value: int) -> Builder:
        return self.uint(2, value)

    def u32(self, value: int) -> Builder:
        return self.uint(4, value)

    def u64(self, value: int) -> Builder:
        return self.uint(8, value)

    def f64(self, value: float) -> Builder:
        self.buf += struct.pack(self.endian + "d", value)
        return self

    def lstring(self, text: str) -> Builder:
        raw = text.encode("utf-8", errors="surrogateescape")
        return self.u32(len(raw)).raw(raw)

    def pad_to(self, boundary: int) -> Builder:
        self.buf += bytes(align(len(self.buf), boundary) - len(self.buf))
        return self

    def array(self, arr: np.ndarray) -> Builder:
        self.buf += arr.tobytes()
        return self


def records(dtype: np.dtype, rows: int, **columns: Any) -> np.ndarray:
    """A zero-filled array of ``dtype`` with the named columns assigned (padding stays zero)."""
    arr = np.zeros(rows, dtype=dtype)
    for name, value in columns.items():
        arr[name] = value
    return arr
