"""Fixed-width byte strings (numpy ``S<width>``) that mostly agree, held as the bytes where they differ.

The file names of one measurement share most of their bytes: hpcrun names a profile
``<program>-<rank>-<thread>-<host id>-<pid>-<generation>.hpcrun`` (HPCToolkit's user manual, "hpcrun's
output"), so of a 45-byte name a quarter of a million profiles vary in 9 positions. A table that keeps
every profile's name from the start of ``hpcsa prof`` to its end keeps those 9 bytes per name, and the 36
they share once. Selection, concatenation and sorting work on the varying bytes alone: positions where
all strings agree cannot decide an order, so the varying bytes sort as the whole strings do.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hpcsa.core.dataclass import dataclass


@dataclass(frozen=True, eq=False)
class PackedStrings:
    """Strings of ``width`` bytes (NUL-padded, as in a numpy ``S<width>`` array): the bytes of ``template``
    except at positions ``varying``, where string ``i`` has ``rest[i]``."""

    template: bytes        # the shared bytes (NUL where the strings vary)
    varying: np.ndarray    # int64 positions where they differ, ascending
    rest: np.ndarray       # uint8 [strings, len(varying)]

    @classmethod
    def pack(cls, strings: np.ndarray | Sequence[bytes]) -> PackedStrings:
        """``strings`` (an ``S`` array, or bytes) packed: the positions where all agree kept once."""
        array = np.asarray(strings, dtype=bytes).reshape(-1)
        if array.dtype.itemsize == 0 or not len(array):  # (``S0``: no bytes to view)
            return cls(b"\0" * (array.dtype.itemsize if len(array) else 0), np.zeros(0, np.int64),
                       np.zeros((len(array), 0), np.uint8))
        matrix = np.ascontiguousarray(array).view(np.uint8).reshape(len(array), array.dtype.itemsize)
        varying = np.flatnonzero((matrix != matrix[0]).any(axis=0))
        template = matrix[0].copy()
        template[varying] = 0
        return cls(template.tobytes(), varying.astype(np.int64), np.ascontiguousarray(matrix[:, varying]))

    @classmethod
    def concat(cls, parts: Sequence[PackedStrings]) -> PackedStrings:
        """The strings of ``parts`` one after the other: their varying bytes joined where the parts were
        packed alike (slices of one packing, as a listing's batches are), else packed again."""
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return cls.pack([])
        first = parts[0]
        if all(p.template == first.template and np.array_equal(p.varying, first.varying) for p in parts):
            return cls(first.template, first.varying, np.concatenate([p.rest for p in parts]))
        width = max(p.width for p in parts)
        return cls.pack(np.concatenate([p.unpacked().astype(f"S{width}") for p in parts]))

    @property
    def width(self) -> int:
        return len(self.template)

    @property
    def nbytes(self) -> int:
        return len(self.template) + self.varying.nbytes + self.rest.nbytes

    def __len__(self) -> int:
        return len(self.rest)

    def __getitem__(self, i: int) -> bytes:
        """String ``i``, without its padding (as numpy gives an ``S`` array's item)."""
        row = bytearray(self.template)
        for position, byte in zip(self.varying.tolist(), self.rest[i].tolist(), strict=True):
            row[position] = byte
        return bytes(row).rstrip(b"\0")

    def take(self, index: np.ndarray) -> PackedStrings:
        """Strings ``index``, in that order (packed alike: their concatenation stays cheap)."""
        return PackedStrings(self.template, self.varying, self.rest[np.asarray(index, np.int64)])

    def unpacked(self) -> np.ndarray:
        """The strings as an ``S<width>`` array (a copy of every byte: for a few, or for a moment)."""
        if not self.width:
            return np.zeros(len(self), "S1")
        matrix = np.empty((len(self), self.width), np.uint8)
        matrix[:] = np.frombuffer(self.template, np.uint8)
        matrix[:, self.varying] = self.rest
        return matrix.view(f"S{self.width}").reshape(-1)

    def argsort(self) -> np.ndarray:
        """A stable order of the strings by their bytes (that of ``np.argsort`` on :meth:`unpacked`)."""
        if not self.rest.shape[1]:
            return np.arange(len(self), dtype=np.int64)
        keys = np.ascontiguousarray(self.rest).view(f"S{self.rest.shape[1]}").reshape(-1)
        return np.argsort(keys, kind="stable")

    def is_ascii(self) -> bool:
        return self.template.isascii() and not (self.rest >= 0x80).any()

    def equals(self, other: PackedStrings) -> bool:
        """The same strings in the same order (however each was packed)."""
        if len(self) != len(other):
            return False
        if self.template == other.template and np.array_equal(self.varying, other.varying):
            return bool(np.array_equal(self.rest, other.rest))
        return bool(np.array_equal(self.unpacked(), other.unpacked()))
