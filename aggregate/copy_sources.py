"""Source files copied into the database, as hpcprof copies them (``DB/src/``), for viewers' source panes.

For every source file meta.db names by an absolute path that can be read here (after the first matching
``-R OLD=NEW`` prefix replacement, hpcprof's ``--replace-path``), the file is copied to
``src/<path without its leading />`` inside the database, and meta.db records it as ``src/<path>`` with the
file's ``copied`` flag (bit 0 of the Source File Specification's flags; HPCToolkit's FORMATS.md). Files that
cannot be read (not absolute, missing, not regular) are left as they were, so a database whose sources are
not on this machine is byte-for-byte what it would be without copying.
"""

from __future__ import annotations

import dataclasses
import os
import shutil

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError
from hpcsa.formats.db import metadb
from hpcsa.formats.db.database import SOURCES
from hpcsa.formats.db.metadb import FILE_COPIED


def parse_replacements(specs: list[str] | None) -> tuple[tuple[str, str], ...]:
    """``OLD=NEW`` prefix pairs (``-R``), in the order given."""
    out = []
    for spec in specs or []:
        old, sep, new = spec.partition("=")
        if not sep or not old:
            raise HpcsaError(None, f"-R {spec!r}: expected OLD=NEW (a path prefix and its replacement)")
        out.append((old.rstrip("/") or "/", new.rstrip("/") or "/"))
    return tuple(out)


def remap(path: str, replacements: tuple[tuple[str, str], ...]) -> str:
    for old, new in replacements:
        if path == old or path.startswith(old + "/") or old == "/":
            rest = path[len(old):].lstrip("/") if old != "/" else path.lstrip("/")
            return os.path.join(new, rest) if rest else new
    return path


@dataclass
class Copied:
    """What copying the sources did: meta.db naming the copies, how many were copied, and the absolute source
    paths that could not be read here (as meta.db names them)."""

    meta: metadb.MetaDB
    count: int
    missing: list[str]


def copy_sources(meta: metadb.MetaDB, db_dir: str, replacements: tuple[tuple[str, str], ...] = ()) -> Copied:
    """Copy into ``db_dir/src`` every source file of ``meta`` that can be read here."""
    files = list(meta.files)
    flags = (meta.file_flags.copy() if len(meta.file_flags) == len(files)
             else np.zeros(len(files), np.uint32))
    copied = 0
    missing = []
    for i, path in enumerate(files):
        if flags[i] & FILE_COPIED or not path.startswith("/"):
            continue
        name = os.path.normpath(path).lstrip("/")
        if not name or name.startswith(".."):
            continue
        found = remap(path, replacements)
        if not os.path.isfile(found) or not os.access(found, os.R_OK):
            missing.append(path)
            continue
        dest = os.path.join(db_dir, SOURCES, name)
        try:
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copyfile(found, dest)
        except OSError:
            missing.append(path)
            continue
        files[i] = f"{SOURCES}/{name}"
        flags[i] |= FILE_COPIED
        copied += 1
    if not copied:
        return Copied(meta, 0, missing)
    return Copied(dataclasses.replace(meta, files=files, file_flags=flags), copied, missing)


def missing_note(missing: list[str], total: int) -> str | None:
    """The one line naming the sources not found here, by the folders that hold most of them, with the hint
    that finds them (``-R``); None where all were found."""
    if not missing:
        return None
    folders: dict[str, int] = {}
    for path in missing:
        folder = os.path.dirname(path)
        folders[folder] = folders.get(folder, 0) + 1
    top = sorted(folders.items(), key=lambda fc: (-fc[1], fc[0]))[:2]
    where = ", ".join(f"{count} in {folder}" for folder, count in top)
    more = ", ..." if len(folders) > len(top) else ""
    return (f"{len(missing)} of {total} source files the database names were not found here ({where}{more}), "
            "so viewers cannot show them: -R OLD=NEW says where a folder of them is now")
