"""Hash functions: BLAKE3 for content keys, and BLAKE2b and MD5 without loading OpenSSL.

The key of anything cached by its content (the parsed-structure cache, the structure files of a measurement
directory) is a BLAKE3-256 hash (the ``blake3`` package: the BLAKE3 team's bindings to their Rust crate).
A second ``hpcsa prof`` hashes every structure file it uses, on every run: BLAKE3 does 2.6-4 GB/s on one
core where BLAKE2b does 0.7-0.8 (the 33.5 MB of structure files of two benchmark runs: 12.5 ms against
46 ms), it releases the GIL while it hashes, and it is as strong a hash.

``import hashlib`` loads OpenSSL's libcrypto for the algorithms only it provides: 3.4 MiB of every process's
memory (more than numpy's core library), and a few milliseconds of each command's start. The other hashes
the commands need, BLAKE2b (stable names) and MD5 (the names hpcrun and LLVM give GPU binaries), CPython
implements itself in its ``_blake2`` and ``_md5`` modules (the ones :mod:`hashlib` falls back to); they are
used directly, and hashlib's only where an interpreter was built without them.
"""

from __future__ import annotations

import io
from typing import Any

from blake3 import blake3

try:
    from _blake2 import blake2b
    from _md5 import md5  # type: ignore[import-not-found]  # typeshed has no stub of CPython's private _md5
except ImportError:  # pragma: no cover - an interpreter without CPython's own hash modules
    from hashlib import blake2b, md5

#: Bytes of a content digest (BLAKE3's default length, as the SHA-256 and BLAKE2b-256 it replaced).
CONTENT_DIGEST_SIZE = 32

#: Bytes read at a time when hashing a file (as :func:`hashlib.file_digest`).
READ_SIZE = 1 << 18


def content_digest(data: bytes | memoryview = b"") -> Any:
    """A BLAKE3-256 hash object (``update``, ``hexdigest``): the key of anything cached by its content."""
    return blake3(data)


def file_digest(fh: io.BufferedIOBase, digest: Any) -> Any:
    """``digest`` updated with the rest of the open file ``fh``, read in pieces into one buffer."""
    buf = bytearray(READ_SIZE)
    view = memoryview(buf)
    while size := fh.readinto(buf):
        digest.update(view[:size])
    return digest


__all__ = ["CONTENT_DIGEST_SIZE", "blake2b", "content_digest", "file_digest", "md5"]
