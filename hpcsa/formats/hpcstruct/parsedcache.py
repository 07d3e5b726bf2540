"""A compact parsed form of each structure file, kept in a user cache so a second run skips the XML.

hpcprof parses every structure file on every run; for the large files of real
runs (a C library with its debug info gives a 7-8 MB ``.hpcstruct``) that XML
parse is most of a small aggregation's time. :func:`read_structure` returns
the same :class:`.StructureFile` as :func:`.hpcstruct.reader.read_hpcstruct`, through a
cache entry named by the BLAKE3-256 hash of the structure file's bytes: the columns of
every module (``scopes``, ``ranges``), its strings, and its statement address
map (``leaf_map``, the costliest query to derive) as raw numpy arrays.

Trust: an entry is used only if its name and its header both carry the hash
of the bytes just read, its format version is this one, and a CRC-32 of its
payload matches (a check against damage, not an attacker: the trust is the
hash of the structure file; a run checks every entry it maps, and CRC-32
does that at 3-4 GB/s); anything else (a truncated write, a changed file, a
stale or foreign entry, an unreadable directory) is ignored and the entry
rebuilt. Entries are written atomically. Nothing is ever unpickled: the
payload is numbers and UTF-8 text, checked before use. A lookup by path
(:func:`read_cached`, what ``hpcsa prof`` does) takes the hash of a file
whose status is the very one it had when it was hashed from a record beside
the entries (:mod:`.known_digests`: a file's bytes cannot change without its
status-change time), and reads the file only otherwise.

Where: ``$HPCSA_CACHE_DIR`` (empty or ``off``: no cache), else
``$XDG_CACHE_HOME/hpcsa``, else ``~/.cache/hpcsa``; entries go in its
``parsed-struct/`` directory. A measurement directory is never written to, so
read-only measurements work; when no cache directory can be written, every
run parses the XML (as without a cache), and where ``$HPCSA_CACHE_DIR`` named it
``hpcsa prof`` says so in one note (:func:`explicit_cache_problem`).

Size: the entries are kept under ``$HPCSA_CACHE_MAX`` bytes in all (``K``, ``M``
or ``G`` suffixes; default 2G; ``0`` or ``none``: no bound): after an entry is
written, the least recently used others are removed until the rest fit (an
entry is marked used each time it is read; the one just written always stays).
Several processes may do this at once: an entry removed under a reader's feet
is simply parsed again, and a mapped one stays readable until unmapped.
"""

from __future__ import annotations

import contextlib
import io
import json
import mmap
import os
import zlib
from pathlib import Path
from typing import BinaryIO

import numpy as np

from hpcsa.core.digests import content_digest, file_digest
from hpcsa.core.errors import HpcsaError
from hpcsa.core.outputs import atomic_file, directory_problem
from hpcsa.core.sizes import parse_size
from hpcsa.core.workers import trim_heap
from hpcsa.formats.hpcstruct import known_digests
from hpcsa.formats.hpcstruct.columns import PackedStrings
from hpcsa.formats.hpcstruct.model import RANGE, SCOPE, Module, StructureFile

MAGIC = b"HPCSA-PARSED-STRUCT\n"
# 2: string ends stored (strings decoded one at a time); 3: payload CRC-32 (was BLAKE2b); 4: named by BLAKE2b-256
# (was SHA-256, whose OpenSSL library costs every process 3.4 MiB); 5: named by BLAKE3-256, 3-4 times faster
# (:mod:`hpcsa.core.digests`)
FORMAT = 5
SUBDIR = "parsed-struct"
ALIGN = 64


DEFAULT_MAX = 2 << 30


def cache_limit() -> int | None:
    """The bound on the entries' total size in bytes (see the module docstring); None: unbounded."""
    text = os.environ.get("HPCSA_CACHE_MAX", "").strip()
    if not text:
        return DEFAULT_MAX
    if text.upper() in ("NONE", "OFF"):
        return None
    try:
        return parse_size(text) or None
    except ValueError:
        raise HpcsaError(None, f"HPCSA_CACHE_MAX={os.environ['HPCSA_CACHE_MAX']!r}: expected a size in bytes, "
                         "e.g. 500M or 2G (0: no bound)") from None


def cache_root() -> Path | None:
    """The cache directory (see the module docstring), or None when caching is off."""
    env = os.environ.get("HPCSA_CACHE_DIR")
    if env is not None:
        return None if env.strip() in ("", "off", "0") else Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "hpcsa"
    home = os.path.expanduser("~")
    return None if home == "~" else Path(home) / ".cache" / "hpcsa"


def explicit_cache_problem() -> str | None:
    """Why the cache directory that ``$HPCSA_CACHE_DIR`` names cannot be written, as a note for the user
    (every run then parses the XML), or None: it can be, caching is off, or the cache is the default one
    (a read-only home is not the user's choice; that run is silently uncached, as the docstring says)."""
    env = os.environ.get("HPCSA_CACHE_DIR")
    root = cache_root()
    if env is None or root is None:
        return None
    entries = root / SUBDIR
    try:
        entries.mkdir(parents=True, exist_ok=True)
        writable = os.access(entries, os.W_OK | os.X_OK)
    except OSError as exc:
        why = directory_problem(exc)
    else:
        if writable:
            return None
        why = "not writable"
    return f"$HPCSA_CACHE_DIR={env}: cannot hold the parsed structure files ({why}); they are parsed on every run"


def read_structure(path: str | os.PathLike[str]) -> StructureFile:
    """The structure file at ``path``, from its cache entry when a valid one exists (else parsed and stored)."""
    path = os.fspath(path)
    root = cache_root()
    got = _through_bytes(root, path) if root is not None else None
    if got is not None:
        return got[0]
    from hpcsa.formats.hpcstruct.reader import read_hpcstruct

    return read_hpcstruct(path)  # no cache, or the reader's words for the problem


def store_structure(path: str | os.PathLike[str]) -> str | None:
    """Parse the structure file at ``path`` into its cache entry unless a valid one exists; the hash of its
    bytes when a valid entry for them is there afterwards (then :func:`read_entry` maps it without hashing
    the file again), None when there is no cache or it cannot be written. Problems of the file itself are
    raised as by :func:`read_structure`.

    For the caller that found no entry (:func:`read_cached`): a large file in hpcstruct's form is parsed as
    it is read and hashed (never all of it in memory), and only then is an entry looked for."""
    root = cache_root()
    if root is None:
        return None
    path = os.fspath(path)
    from hpcsa.formats.hpcstruct.reader import read_hpcstruct
    from hpcsa.formats.hpcstruct.scan import SCAN_FROM, scan_file

    started, before = known_digests.clock_ns(), known_digests.status(path)
    with contextlib.suppress(OSError):
        if os.path.getsize(path) >= SCAN_FROM:
            got = scan_file(path)
            if got is not None:
                # What the scan freed goes back to the system before the entry's arrays are made: a worker
                # parsing a large file holds the run's largest memory here (libc's 7.6 MB file: 34 MiB over the
                # worker's own before, 29 MiB now; the 10 MB shape's first run peaked at 62-66 MiB, 56-59 now).
                trim_heap()
                sf, digest = got
                entry = root / SUBDIR / f"{digest}.bin"
                if _load(entry, digest) is None and not _store(entry, sf, path, digest, from_data=True):
                    return None
                known_digests.remember(root / SUBDIR, path, before, started, digest)
                return digest
    through = _through_bytes(root, path)
    if through is None:
        read_hpcstruct(path)  # reports the problem in the reader's words
        return None
    _, digest, stored = through
    if not stored:
        return None
    known_digests.remember(root / SUBDIR, path, before, started, digest)
    return digest


def read_entry(digest: str) -> StructureFile | None:
    """The cache entry of the structure file whose bytes hash to ``digest`` (as :func:`store_structure`
    returned it), if it is there and intact."""
    root = cache_root()
    return None if root is None else _load(root / SUBDIR / f"{digest}.bin", digest)


def _through_bytes(root: Path, path: str) -> tuple[StructureFile, str, bool] | None:
    """The structure file read whole: from its entry if a valid one exists, else parsed and stored; with its
    hash and whether a valid entry is there now. None when it cannot be read."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    digest = content_digest(data).hexdigest()
    entry = root / SUBDIR / f"{digest}.bin"
    sf = _load(entry, digest)
    if sf is not None:
        return sf, digest, True
    sf, from_data = _parse(path, data)
    del data
    return sf, digest, _store(entry, sf, path, digest, from_data)


def _parse(path: str, data: bytes) -> tuple[StructureFile, bool]:
    """The structure file, and whether it was parsed from ``data`` itself (the bytes hashed) rather than read
    again by the general reader (then it may have changed in between). The parsers are imported here, not
    with this module: a run whose structure files all have entries never loads them (5 ms)."""
    from hpcsa.formats.hpcstruct.scan import SCAN_FROM, scan
    from hpcsa.formats.hpcstruct.stream import read_with_expat

    sf = scan(data) if len(data) >= SCAN_FROM else None
    return (sf, True) if sf is not None else (read_with_expat(path), False)


def _store(entry: Path, sf: StructureFile, path: str, digest: str, from_data: bool = False) -> bool:
    if not from_data and _digest_of(path) != digest:  # changed while it was parsed
        return False
    limit = cache_limit()  # a bad setting is the user's to hear about, not a cache problem to skip
    with contextlib.suppress(OSError, HpcsaError):
        entry.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(entry) as out:
            write_entry(out, sf, digest)
        evict(entry.parent, limit, keep=entry)
        return True
    return False


def evict(directory: Path, limit: int | None, keep: Path | None = None) -> list[Path]:
    """Remove the least recently used entries of ``directory`` (by modification time, which a read sets)
    until the total size is within ``limit``; never ``keep``. The entries removed."""
    if limit is None:
        return []
    found = []
    with os.scandir(directory) as it:
        for e in it:
            if e.name.endswith(".bin") and e.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    st = e.stat(follow_symlinks=False)
                    found.append((st.st_mtime_ns, e.name, st.st_size))
    total = sum(size for _, _, size in found)
    removed = []
    for _, name, size in sorted(found):  # oldest first
        if total <= limit:
            break
        path = directory / name
        if keep is not None and path == keep:
            continue
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        total -= size
        removed.append(path)
    return removed


def read_cached(path: str | os.PathLike[str]) -> StructureFile | None:
    """The structure file at ``path`` if a valid cache entry for its present bytes exists (else None: the
    caller parses it, e.g. in a worker, with :func:`read_structure`)."""
    root = cache_root()
    if root is None:
        return None
    path = os.fspath(path)
    digest = known_digests.recall(root / SUBDIR, path)  # the file unchanged since it was hashed: not read again
    if digest is not None:
        found = _load(root / SUBDIR / f"{digest}.bin", digest)
        if found is not None:
            return found
    started, before = known_digests.clock_ns(), known_digests.status(path)
    digest = _digest_of(path)
    if digest is None:
        return None
    found = _load(root / SUBDIR / f"{digest}.bin", digest)
    if found is not None:
        known_digests.remember(root / SUBDIR, path, before, started, digest)
    return found


def remembered(path: str | os.PathLike[str]) -> bool:
    """Whether the structure file at ``path`` is unchanged since it was hashed (:mod:`.known_digests`) and an
    entry for its bytes is there, found without reading either: the entry is still to be checked when
    :func:`read_cached` maps it."""
    root = cache_root()
    if root is None:
        return False
    digest = known_digests.recall(root / SUBDIR, os.fspath(path))
    return digest is not None and os.path.isfile(root / SUBDIR / f"{digest}.bin")


def _digest_of(path: str) -> str | None:
    try:
        with open(path, "rb") as fh:
            return file_digest(fh, content_digest()).hexdigest()
    except OSError:
        return None


# -- encoding ---------------------------------------------------------------------------------------


def _packed_strings(m: Module) -> tuple[np.ndarray, np.ndarray]:
    """A module's strings as one UTF-8 buffer, joined by NUL, and the end of each (the offset of the NUL after
    it; the last one's is the buffer's length). Joined and encoded in one call where all are ASCII (the
    usual case: the byte length is the character length), one at a time otherwise."""
    strings = list(m.strings)
    joined = "\0".join(strings)
    if joined.count("\0") != max(len(strings) - 1, 0):
        raise HpcsaError(m.path, "a string holds NUL (cannot come from XML)")
    if joined.isascii():
        blob = joined.encode("ascii")
        lengths = np.fromiter(map(len, strings), np.int64, len(strings))
    else:
        encoded = [s.encode("utf-8", "surrogatepass") for s in strings]
        blob = b"\0".join(encoded)
        lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
    return np.frombuffer(blob, np.uint8), np.cumsum(lengths + 1) - 1


def _arrays_of(m: Module) -> dict[str, np.ndarray]:
    text, ends = _packed_strings(m)
    return {"scopes": m.scopes, "ranges": m.ranges, "leaf_map": m.leaf_map, "strings": text, "string_ends": ends}


def write_entry(out: BinaryIO, sf: StructureFile, digest: str) -> None:
    """Write the cache entry of ``sf``, parsed from a file whose content hash is ``digest``, to ``out``: the
    arrays are hashed in place, then written one at a time (never joined into one copy of the payload)."""
    layout: list[tuple[int, memoryview]] = []  # (padding before, bytes of the array)
    offset = 0
    modules = []
    payload_crc = 0
    for m in sf.modules:
        arrays = {}
        for name, arr in _arrays_of(m).items():
            data = np.ascontiguousarray(arr).view(np.uint8).data
            pad = -offset % ALIGN
            payload_crc = zlib.crc32(data, zlib.crc32(bytes(pad), payload_crc))
            layout.append((pad, data))
            offset += pad
            arrays[name] = [offset, len(arr)]
            offset += len(data)
        modules.append({"path": m.path, "id": m.id, "has_calls": m.has_calls, "has_v": m.has_v,
                        "n_strings": len(m.strings), "arrays": arrays})
    header = {"format": FORMAT, "source_digest": digest, "version": sf.version, "id": sf.id, "name": sf.name,
              "payload_crc32": payload_crc, "modules": modules}
    head = json.dumps(header, sort_keys=True).encode()
    prefix = MAGIC + len(head).to_bytes(8, "little") + head
    out.write(prefix + b"\0" * (-len(prefix) % ALIGN))
    for pad, data in layout:
        out.write(bytes(pad))
        out.write(data)


def encode(sf: StructureFile, digest: str) -> bytes:
    """The cache entry of ``sf`` as bytes (see :func:`write_entry`)."""
    buf = io.BytesIO()
    write_entry(buf, sf, digest)
    return buf.getvalue()


DTYPES = {"scopes": SCOPE, "ranges": RANGE, "leaf_map": RANGE, "strings": np.dtype(np.uint8),
          "string_ends": np.dtype(np.int64)}


def _load(entry: Path, digest: str) -> StructureFile | None:
    """The structure file in cache entry ``entry`` if it is intact and made from bytes with ``digest``."""
    try:
        with open(entry, "rb") as fh:
            data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # missing, unreadable, or empty (nothing to map)
        return None
    try:
        sf = decode(data, digest)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None
    if sf is not None:
        with contextlib.suppress(OSError):
            os.utime(entry)  # used now: the last to be evicted (see evict)
    return sf


def decode(data: bytes | mmap.mmap, digest: str) -> StructureFile | None:
    """Inverse of :func:`encode`; None unless every check passes (see the module docstring). From a mapped
    entry, the arrays are read-only views of the mapping (pages shared with the page cache, no copy)."""
    if not data[:len(MAGIC)] == MAGIC:
        return None
    n = int.from_bytes(data[len(MAGIC):len(MAGIC) + 8], "little")
    start = len(MAGIC) + 8
    header = json.loads(data[start:start + n])
    if header.get("format") != FORMAT or header.get("source_digest") != digest:
        return None
    base = start + n + (-(start + n) % ALIGN)
    payload = memoryview(data)[base:]
    if _payload_crc(data, base) != header["payload_crc32"]:
        return None
    sf = StructureFile(modules=[], version=str(header["version"]), id=int(header["id"]), name=header["name"])
    for mh in header["modules"]:
        arrays = {}
        for name, (offset, count) in mh["arrays"].items():
            dtype = DTYPES[name]
            if offset < 0 or count < 0 or offset + count * dtype.itemsize > len(payload):
                return None
            arrays[name] = np.frombuffer(payload, dtype, count, offset)
        text, ends = arrays["strings"], arrays["string_ends"]
        if len(ends) != mh["n_strings"] or (len(ends) and (int(ends[-1]) != len(text) or ends[0] < 0
                                                         or bool(np.any(np.diff(ends) <= 0)))):
            return None
        strings = PackedStrings(text, ends)
        m = Module(path=str(mh["path"]), scopes=arrays["scopes"], ranges=arrays["ranges"], strings=strings,
                   id=int(mh["id"]), has_calls=mh["has_calls"], has_v=bool(mh["has_v"]))
        m.__dict__["leaf_map"] = arrays["leaf_map"]  # the cached_property, computed when the entry was made
        if isinstance(data, mmap.mmap):
            m.__dict__["mapping"] = data  # for Module.release_pages
        sf.modules.append(m)
    return sf


HASH_PART = 1 << 20  # bytes of a mapped entry hashed at a time


def _payload_crc(data: bytes | mmap.mmap, base: int) -> int:
    """CRC-32 of ``data[base:]``. From a mapping, checked a part at a time and each part's pages dropped
    from this process right after (``madvise(MADV_DONTNEED)``: they stay in the page cache and fault back
    in only where an array is read), so checking a large entry does not leave all of it resident: a run
    touches the statements its samples hit, not the whole structure of libc."""
    if not isinstance(data, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED"):
        return zlib.crc32(memoryview(data)[base:])
    crc = 0
    view = memoryview(data)
    try:
        page = mmap.PAGESIZE
        for start in range(base, len(data), HASH_PART):
            end = min(len(data), start + HASH_PART)
            crc = zlib.crc32(view[start:end], crc)
            first = start - start % page
            data.madvise(mmap.MADV_DONTNEED, first, end - first)
    finally:
        view.release()
    return crc
