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


def copy_sources(meta: metadb.MetaDB, db_dir: str, replacements: tuple[tuple[str, str], ...] = ()
                 ) -> tuple[metadb.MetaDB, int]:
    """A copy of ``meta`` naming the copied sources, and how many were copied into ``db_dir/src``."""
    files = list(meta.files)
    flags = (meta.file_flags.copy() if len(meta.file_flags) == len(files)
             else np.zeros(len(files), np.uint32))
    copied = 0
    for i, path in enumerate(files):
        if flags[i] & FILE_COPIED or not path.startswith("/"):
            continue
        name = os.path.normpath(path).lstrip("/")
        if not name or name.startswith(".."):
            continue
        found = remap(path, replacements)
        if not os.path.isfile(found) or not os.access(found, os.R_OK):
            continue
        dest = os.path.join(db_dir, SOURCES, name)
        try:
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copyfile(found, dest)
        except OSError:
            continue
        files[i] = f"{SOURCES}/{name}"
        flags[i] |= FILE_COPIED
        copied += 1
    if not copied:
        return meta, 0
    return dataclasses.replace(meta, files=files, file_flags=flags), copied
