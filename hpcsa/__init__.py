"""hpcsa: postmortem performance analysis of GPU-accelerated HPC programs.

One stack of floors, each importing only those below it: :mod:`hpcsa.cli` (one module per subcommand),
:mod:`hpcsa.views` (analyses and exports), :mod:`hpcsa.aggregate` (``hpcsa prof``), :mod:`hpcsa.gpucct` (GPU
calling-context reconstruction), :mod:`hpcsa.ingest` (vendor records) and :mod:`hpcsa.structure` (binary
structure), :mod:`hpcsa.formats` (every HPCToolkit file format between them) and :mod:`hpcsa.core` (what
everything shares). The stages meet at the formats: every hand-off between them is a real HPCToolkit file.

The Python API's entry points are importable from here, each imported on first use (``import hpcsa`` stays
as fast as the ``hpcsa`` command needs):

    >>> import hpcsa
    >>> cmp = hpcsa.compare(["before.d", "after.d"])   # hpcsa.views.compare.compare
    >>> cmp.to_pandas()
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

#: The entry points of the Python API: name -> the module that defines it, imported on first use (by name, so
#: that no floor that imports ``hpcsa`` for its version depends on the floors above it).
API = {"compare": "hpcsa.views.compare.comparison"}

__all__ = ["compare"]


def __getattr__(name: str) -> Any:
    if name in API:
        value = getattr(importlib.import_module(API[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'hpcsa' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *API])
