"""The codecs compressed GPU device code uses, from PyPI libraries, each bounded by the size its header declares.

* zstd (``zstandard``): NVIDIA fatbin entries of CUDA 12.8+ toolkits' default and ``size``/``balance``
  compression modes, and clang offload bundles (``CCOB``, method 1);
* LZ4 block format (``lz4.block``): NVIDIA fatbin entries of ``--compress-mode=speed`` (and, by the flag
  they share, the LZ-style compression of older toolkits);
* zlib (Python's ``zlib``): clang offload bundles (``CCOB``, method 0).

Every function returns exactly ``size`` bytes or raises :class:`CodecError` with one line saying what is
wrong; a stream that would grow past ``size`` is cut there (a corrupt header cannot make us allocate more
than it declares, and that is checked against a limit first).
"""

from __future__ import annotations

import zlib

import lz4.block
import zstandard

# No GPU code object comes near this; a header declaring more is corrupt, not big.
MAX_IMAGE = 1 << 32
# A byte of LZ4 input adds at most 255 bytes of match length (LZ4 Block Format Description).
LZ4_MAX_RATIO = 255


class CodecError(ValueError):
    """Compressed data that does not decompress to what its header declares."""


def _check_size(size: int) -> None:
    if size <= 0 or size > MAX_IMAGE:
        raise CodecError(f"declares an uncompressed size of {size} bytes")


def zstd(data: bytes, size: int) -> bytes:
    _check_size(size)
    pieces, got = [], 0
    try:  # read in pieces: memory follows the data's real output, not a (maybe corrupt) declared size
        with zstandard.ZstdDecompressor().stream_reader(data) as reader:
            while got <= size:
                piece = reader.read(min(size + 1 - got, 1 << 20))
                if not piece:
                    break
                pieces.append(piece)
                got += len(piece)
        out = b"".join(pieces)
    except zstandard.ZstdError as exc:
        raise CodecError(f"zstd data is corrupt ({exc})") from None
    return _exact(out, size, "zstd")


def lz4_block(data: bytes, size: int) -> bytes:
    _check_size(size)
    if size > LZ4_MAX_RATIO * len(data) + 16:  # the output buffer is allocated whole: refuse the impossible
        raise CodecError(f"{len(data)} bytes of LZ4 block data cannot decompress to the {size} bytes the header "
                         f"says (LZ4 expands at most {LZ4_MAX_RATIO}-fold)")
    try:
        out = lz4.block.decompress(data, uncompressed_size=size)
    except lz4.block.LZ4BlockError as exc:
        raise CodecError(f"LZ4 block data is corrupt or truncated ({exc})") from None
    return _exact(out, size, "LZ4")


def zlib_(data: bytes, size: int) -> bytes:
    _check_size(size)
    dobj = zlib.decompressobj()
    try:
        out = dobj.decompress(data, size + 1)
    except zlib.error as exc:
        raise CodecError(f"zlib data is corrupt ({exc})") from None
    if len(out) > size:
        raise CodecError(f"zlib data decompresses to more than the {size} bytes the header says")
    if not dobj.eof:
        raise CodecError(f"zlib data is truncated ({len(out)} of {size} bytes decompressed)")
    return _exact(out, size, "zlib")


def _exact(out: bytes, size: int, codec: str) -> bytes:
    if len(out) > size:
        raise CodecError(f"{codec} data decompresses to more than the {size} bytes the header says")
    if len(out) < size:
        raise CodecError(f"{codec} data ends after {len(out)} of the {size} bytes the header says; truncated or "
                         "corrupt")
    return out


def zstd_compress(data: bytes, level: int = 19) -> bytes:
    """For the writers (tests and fixtures): one zstd frame with the content size in its header."""
    return zstandard.ZstdCompressor(level=level).compress(data)


def lz4_block_compress(data: bytes) -> bytes:
    return lz4.block.compress(data, mode="high_compression", store_size=False)


def zlib_compress(data: bytes) -> bytes:
    return zlib.compress(data, 9)


DECOMPRESS = {"zstd": zstd, "lz4": lz4_block, "zlib": zlib_}
COMPRESS = {"zstd": zstd_compress, "lz4": lz4_block_compress, "zlib": zlib_compress}
