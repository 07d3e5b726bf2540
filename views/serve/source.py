"""The source pane's files: only copies the database holds under its ``src/`` directory.

hpcprof copies each source file a context names into ``DB/src/<absolute path>`` and records it in meta.db
as ``src/<absolute path>`` with the file's ``copied`` flag (bit 0; HPCToolkit's FORMATS.md, meta.db
"Source File Specification"). The server reads nothing else: a request naming an absolute path, a ``..``
or empty component, a NUL, or a file whose real path (symbolic links resolved) is not inside ``src/`` is
answered as if the file did not exist.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from hpcsa.formats.db.database import SOURCES
from hpcsa.formats.db.metadb import FILE_COPIED

if TYPE_CHECKING:
    from hpcsa.views.experiment import Experiment

#: Larger sources are not shown (the pane is for reading a few lines around a cost).
MAX_BYTES = 8 << 20


def copied_relpath(path: str, flags: int) -> str | None:
    """The path below ``src/`` of a file meta.db says was copied; None if it was not."""
    if not flags & FILE_COPIED:
        return None
    p = path.replace("\\", "/")
    if p.startswith(SOURCES + "/"):
        return p[len(SOURCES) + 1:]
    return None


def resolve(db_path: str, rel: str) -> str | None:
    """The real path of ``src/<rel>`` when it is a regular file inside ``src/``; None otherwise."""
    if not rel or "\0" in rel or rel.startswith(("/", "\\")) or "\\" in rel:
        return None
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return None
    root = os.path.realpath(os.path.join(db_path, SOURCES))
    real = os.path.realpath(os.path.join(root, *parts))
    if not real.startswith(root + os.sep) or not os.path.isfile(real):
        return None
    return real


def read_source(db_path: str, rel: str) -> bytes | None:
    real = resolve(db_path, rel)
    if real is None:
        return None
    try:
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(real, flags)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(MAX_BYTES + 1)
    return data if len(data) <= MAX_BYTES else None


def source_of(exp: Experiment, file: int, line: int) -> dict[str, Any]:
    """What the pane shows for (file index, line): the copy's URL path, or why there is none."""
    meta = exp.meta
    if file < 0 or file >= len(meta.files):
        return {"file": None, "line": line, "available": False, "reason": "this scope names no source file"}
    path = meta.files[file]
    flags = int(meta.file_flags[file]) if file < len(meta.file_flags) else 0
    rel = copied_relpath(path, flags)
    # the path the program was built from: a copy's path without the database's src/ (hpcprof keeps the
    # absolute path below it)
    original = "/" + rel if rel is not None else path
    out: dict[str, Any] = {"file": path, "original": original, "line": line, "available": False}
    if rel is None:
        out["reason"] = ("the database holds no copy of this file (hpcsa prof and hpcprof copy the sources "
                         "they can read; use -R OLD=NEW where they moved)")
    elif resolve(exp.path, rel) is None:
        out["reason"] = "meta.db says this file was copied, but the database's src/ does not hold it"
    else:
        out["available"], out["src"] = True, rel
    return out
