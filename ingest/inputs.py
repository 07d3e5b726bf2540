"""What ``hpcsa ingest`` is given, as files: plain files, directories (walked whole, in name order) and the
archives records are published in (``.tar``, ``.tar.gz``/``.tgz``, ``.tar.bz2``, ``.tar.xz``, ``.zip``),
recognised by content and unpacked into a private temporary directory for the time of the reading.

Members of an archive are unpacked as plain files only: links, devices and names that are absolute or
climb out with ``..`` are left out (Python's ``tarfile`` "data" filter rules, PEP 706), and the unpacked
size is bounded, so a hostile archive can neither write outside the temporary directory nor fill the disk.
A member is shown to the user as ``ARCHIVE:MEMBER``. The temporary directory is removed when the reading
ends; one a killed run left behind is removed by the next run that unpacks an archive.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import lzma
import os
import re
import shutil
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from typing import IO, Any

from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import FormatError, HpcsaError
from hpcsa.core.fileio import read_input
from hpcsa.core.outputs import process_alive

#: The most an archive may unpack to (bytes): far above any published record set, far below a full disk.
MAX_UNPACKED = 16 << 30
#: Unpacked archives live in ``<tmp>/hpcsa-ingest-<pid>-<random>``: a later run removes those of dead processes.
UNPACK_PREFIX = "hpcsa-ingest-"
_UNPACKED = re.compile(rf"^{UNPACK_PREFIX}(\d+)-")
_COMPRESSED: dict[bytes, Callable[..., Any]] = {b"\x1f\x8b": gzip.open, b"BZh": bz2.open,
                                                      b"\xfd7zXZ\x00": lzma.open}


@dataclass(frozen=True)
class InputFile:
    """One file to recognise: where it is, how the user knows it, and whether it came from a directory or
    an archive (then a file no reader recognises is skipped, not an error)."""

    path: str
    shown: str
    listed: bool


class Inputs:
    """The files of the given paths; unpacked archives live until :meth:`~hpcsa.ingest.inputs.Inputs.close`. ``shown(path)`` turns a
    path under an unpacked archive back into ``ARCHIVE:MEMBER``."""

    def __init__(self, paths: list[str]) -> None:
        self.files: list[InputFile] = []
        self._tmp: str | None = None
        self._unpacked: dict[str, str] = {}  # unpack directory -> archive path
        try:
            for p in paths:
                self._add(p)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Remove the unpacked archives (their paths are gone afterwards)."""
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> Inputs:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def shown(self, path: str) -> str:
        for root, archive in self._unpacked.items():
            if path == root or path.startswith(root + os.sep):
                rel = os.path.relpath(path, root)
                return archive if rel == "." else f"{archive}:{rel}"
        return path

    def _add(self, path: str, listed: bool = False) -> None:
        if os.path.isdir(path):
            found = list(_walk(path))
            if not found:
                raise HpcsaError(path, "directory has no files")
            for f in found:
                self._add_file(f, listed=True)
            return
        self._add_file(path, listed)

    def _add_file(self, path: str, listed: bool) -> None:
        kind = archive_kind(path)
        if kind is None:
            self.files.append(InputFile(path, self.shown(path), listed))
            return
        if self._tmp is None:
            remove_stale_unpacked()
            self._tmp = tempfile.mkdtemp(prefix=f"{UNPACK_PREFIX}{os.getpid()}-")
        dest = os.path.join(self._tmp, str(len(self._unpacked)))
        os.mkdir(dest)
        self._unpacked[dest] = self.shown(path)
        unpack(path, kind, dest)
        members = list(_walk(dest))
        if not members:
            raise HpcsaError(self.shown(path), "archive holds no files")
        # An archive in an archive is not unpacked again: it is probed like any other member.
        self.files += [InputFile(f, self.shown(f), True) for f in members]


def remove_stale_unpacked(folder: str | None = None) -> list[str]:
    """Remove what killed runs left unpacked in the temporary directory (their pid is in the name; those of
    live processes are left alone); return what was removed."""
    folder = folder or tempfile.gettempdir()
    removed: list[str] = []
    try:
        names = os.listdir(folder)
    except OSError:
        return removed
    for name in names:
        m = _UNPACKED.match(name)
        if m and not process_alive(int(m.group(1))):
            shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
            removed.append(name)
    return removed


def _walk(top: str) -> Iterator[str]:
    for base, dirs, files in os.walk(top):
        dirs.sort()
        for name in sorted(files):
            full = os.path.join(base, name)
            if os.path.isfile(full):
                yield full


def archive_kind(path: str) -> str | None:
    """"tar" or "zip" when the file's content is one (a compressed tar included), else None."""
    try:
        head = read_input(path, 512)
    except HpcsaError:
        return None
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return "zip"
    if _is_tar_header(head):
        return "tar"
    opener = next((o for magic, o in _COMPRESSED.items() if head.startswith(magic)), None)
    if opener is None:
        return None
    try:
        with opener(path, "rb") as fh:
            inner = fh.read(512)
    except (OSError, EOFError, zlib.error, lzma.LZMAError, ValueError):
        return None
    return "tar" if _is_tar_header(inner) else None


def _is_tar_header(block: bytes) -> bool:
    """A POSIX (ustar) or GNU tar header block: the magic at offset 257 (POSIX.1-1988 ``ustar``)."""
    return len(block) >= 262 and block[257:262] == b"ustar"


def _safe_member(name: str) -> str | None:
    """The relative path to unpack a member to, or None for names that are absolute or climb out."""
    norm = os.path.normpath(name.replace("\\", "/"))
    if not norm or norm.startswith(("/", "..")) or os.path.isabs(norm) or norm == ".":
        return None
    return norm


def _copy(src: IO[bytes], dest: str, budget: list[int], archive: str) -> None:
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest, "wb") as out:
        while chunk := src.read(1 << 20):
            budget[0] -= len(chunk)
            if budget[0] < 0:
                raise HpcsaError(archive, f"archive unpacks to more than {MAX_UNPACKED >> 30} GiB; unpack it "
                                 "yourself and give the directory")
            out.write(chunk)


def unpack(path: str, kind: str, dest: str) -> None:
    """Unpack the plain files of an archive into ``dest``; a damaged archive is one error line."""
    budget = [MAX_UNPACKED]
    try:
        if kind == "zip":
            with zipfile.ZipFile(path) as zf:
                for info in zf.infolist():
                    rel = None if info.is_dir() else _safe_member(info.filename)
                    if rel is not None:
                        with zf.open(info) as src:
                            _copy(src, os.path.join(dest, rel), budget, path)
            return
        with tarfile.open(path, "r:*") as tf:
            for member in tf:
                rel = _safe_member(member.name) if member.isreg() else None
                if rel is None:
                    continue
                member_data = tf.extractfile(member)
                if member_data is not None:
                    with contextlib.closing(member_data):
                        _copy(member_data, os.path.join(dest, rel), budget, path)
    except HpcsaError:
        raise
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError, zlib.error, lzma.LZMAError, ValueError,
            NotImplementedError, RuntimeError) as exc:
        raise FormatError(path, f"damaged {kind} archive ({type(exc).__name__}: {exc})") from None
