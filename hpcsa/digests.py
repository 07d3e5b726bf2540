"""Hash functions that do not load OpenSSL.

``import hashlib`` loads OpenSSL's libcrypto for the algorithms only it provides: 3.4 MiB of every process's
memory (more than numpy's core library), and a few milliseconds of each command's start. The commands here
need BLAKE2b (content keys and stable names) and MD5 (the names hpcrun and LLVM give GPU binaries), which
CPython implements itself in its ``_blake2`` and ``_md5`` modules (the ones :mod:`hashlib` falls back to);
they are used directly, and hashlib's only where an interpreter was built without them.

The price is speed: BLAKE2b hashes 0.45-0.8 GB/s, half of what OpenSSL's SHA-256 does with the CPU's SHA
instructions. A second ``hpcsa prof`` of a real 1,024-thread run hashes its 18 MB of structure files in
38-41 ms instead of 19 (the import of OpenSSL alone took 5 ms of each command).
"""

from __future__ import annotations

from typing import Any, BinaryIO

try:
    from _blake2 import blake2b
    from _md5 import md5
except ImportError:  # pragma: no cover - an interpreter without CPython's own hash modules
    from hashlib import blake2b, md5

#: Bytes of a content digest (BLAKE2b-256: the same length as the SHA-256 it replaced).
CONTENT_DIGEST_SIZE = 32

#: Bytes read at a time when hashing a file (as :func:`hashlib.file_digest`).
READ_SIZE = 1 << 18


def content_digest(data: bytes | memoryview = b"") -> Any:
    """A BLAKE2b-256 hash object (``update``, ``hexdigest``): the key of anything cached by its content."""
    return blake2b(data, digest_size=CONTENT_DIGEST_SIZE)


def file_digest(fh: BinaryIO, digest: Any) -> Any:
    """``digest`` updated with the rest of the open file ``fh``, read in pieces into one buffer."""
    buf = bytearray(READ_SIZE)
    view = memoryview(buf)
    while size := fh.readinto(buf):  # type: ignore[attr-defined]
        digest.update(view[:size])
    return digest


__all__ = ["CONTENT_DIGEST_SIZE", "blake2b", "content_digest", "file_digest", "md5"]
