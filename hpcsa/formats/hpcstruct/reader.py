"""Reading a ``.hpcstruct`` file whole: by the numpy scanner (:mod:`.scan`) where the file is in the form
hpcstruct writes, else by expat (:mod:`.stream`), with the same result or the same error."""

from __future__ import annotations

import contextlib
import os

from hpcsa.core.errors import UnsupportedError
from hpcsa.formats.hpcstruct.model import READABLE_VERSIONS, StructureFile
from hpcsa.formats.hpcstruct.scan import SCAN_FROM, read_canonical
from hpcsa.formats.hpcstruct.stream import read_with_expat


def read_hpcstruct(path: str | os.PathLike[str]) -> StructureFile:
    """The whole file in memory (one Module per LM): read by :mod:`hpcsa.formats.hpcstruct.scan` when it is
    in the form hpcstruct writes (several times faster), else by expat (the same result, or the error)."""
    with contextlib.suppress(OSError):  # the general reader reports it
        if os.path.getsize(path) >= SCAN_FROM:
            sf = read_canonical(path)
            if sf is not None:
                return sf
    return read_with_expat(path)


def check_version(sf: StructureFile, path: str) -> None:
    if sf.version not in READABLE_VERSIONS:
        raise UnsupportedError(path, f"structure format version {sf.version} is not supported")

