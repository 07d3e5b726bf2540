"""Real hpcstruct's structure files of the system libraries a real run (meas-cxx1024) measured."""

from __future__ import annotations

from pathlib import Path

import pytest

from hpcsa.structure.hpcstruct import read_hpcstruct
from hpcsa.structure.model import Module


def measured_library(shared_data: Path, library: str) -> Module:
    """hpcstruct's module of ``library`` from the real run; skips where the file, or the library it
    describes, is absent on this machine."""
    structs = shared_data / "hpctoolkit-extra" / "meas-cxx1024" / "structs"
    if not (structs / f"{library}.hpcstruct").is_file():
        pytest.skip(f"{structs} lacks real hpcstruct's {library}.hpcstruct")
    ref = read_hpcstruct(structs / f"{library}.hpcstruct").modules[0]
    if not Path(ref.path).is_file():
        pytest.skip(f"{ref.path} (the measured {library}) is not installed here")
    return ref
