"""The content hash of a structure file remembered by its status, so that a second run need not read it.

A second ``hpcsa prof`` finds each structure file's parsed-structure cache entry by the hash of the file's
bytes (:mod:`.parsedcache`), and hashing the 23 MB of a large C program's three structure files was half of
what finding their entries cost (the other half: checking the entries' CRC-32, which stays). Where a file
was hashed, its status (device, inode, size, modification and status-change times, in nanoseconds) is
written beside the entries (their directory's ``hashed/``), with the hash; a later lookup whose file has the very same status takes the
hash from there and does not read the file.

This is how git's index (``racy-git.txt`` in git's documentation) and ccache's direct mode trust a file
that has not changed, and why it is safe here: writing a file's bytes sets its status-change time, which no
program can set back (``utime`` sets the other two, and sets this one to now); replacing it gives another
inode or size. The clock that stamps a file is coarse (a kernel tick), so a file changed again within the
tick of the status that was hashed would keep that status: a status is remembered only when both its times
are older than the hashing by :data:`RACY_NS` (two seconds; a file written just before a run is simply hashed
again, as it was before). A remembered status that does not match, a record that cannot be read, or one for
another path is ignored: the file is hashed.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path

from hpcsa.core.digests import blake2b
from hpcsa.core.errors import HpcsaError
from hpcsa.core.outputs import atomic_file

SUBDIR = "hashed"
#: A status is remembered only when the file's times are at least this much older than its hashing.
RACY_NS = 2_000_000_000
_FIELDS = ("st_dev", "st_ino", "st_size", "st_mtime_ns", "st_ctime_ns")


def _record_path(cache: Path, path: str) -> tuple[Path, str]:
    name = os.path.abspath(path)
    key = blake2b(name.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest()
    return cache / SUBDIR / f"{key}.json", name


def status(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def recall(cache: Path, path: str) -> str | None:
    """The content hash remembered in the cache directory ``cache`` for the file at ``path``, if its status is
    still the one hashed."""
    record, name = _record_path(cache, path)
    st = status(path)
    if st is None:
        return None
    try:
        with open(record, "rb") as fh:
            got = json.loads(fh.read())
        if got["path"] != name or got["status"] != [getattr(st, f) for f in _FIELDS]:
            return None
        digest = got["digest"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return digest if isinstance(digest, str) else None


def remember(cache: Path, path: str, before: os.stat_result | None, started_ns: int, digest: str) -> None:
    """Remember in ``cache`` ``digest`` for the file at ``path``: its bytes as read after ``started_ns`` (``time.time_ns()``)
    by a reader that found it with status ``before``. Nothing is remembered unless the status is the same
    after the reading and both its times are older than the reading by :data:`RACY_NS`."""
    if before is None or max(before.st_mtime_ns, before.st_ctime_ns) > started_ns - RACY_NS:
        return
    after = status(path)
    now = [getattr(before, f) for f in _FIELDS]
    if after is None or [getattr(after, f) for f in _FIELDS] != now:
        return
    record, name = _record_path(cache, path)
    with contextlib.suppress(OSError, ValueError, HpcsaError):
        record.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(record, "w") as fh:
            fh.write(json.dumps({"path": name, "status": now, "digest": digest}))


def clock_ns() -> int:
    """The time a reading starts, for :func:`remember`."""
    return time.time_ns()
