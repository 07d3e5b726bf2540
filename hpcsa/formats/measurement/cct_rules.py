"""What a measured calling-context tree must be beyond its records' structure: the rules hpcprof holds it to.

The ``.hpcrun`` reader checks that a CCT is a tree (:func:`~hpcsa.formats.measurement.hpcrun.tree_rows`).
hpcprof also refuses a tree whose nodes name a load module the load map does not list, and one whose
placeholders are not where hpcrun puts them (HPCToolkit's sources: ``src/lib/profile/sources/hpcrun4.cpp``;
the placeholders as the HPCToolkit User's Manual presents them): every root is the ``<primary root>``
placeholder, ``<no activity>`` and ``<partial root>`` stand at a root or directly below the primary root,
and a placeholder is marked unwound. Every reader of CCTs that attributes them applies these rules here,
one profile at a time or over a forest of profiles read together.
"""

from __future__ import annotations

import os

import numpy as np

from hpcsa.core.errors import FormatError, UnsupportedError
from hpcsa.formats.measurement.placeholders import NO_ACTIVITY, PARTIAL, PRIMARY

#: Load-module ids hpcrun reserves for outlined range trees (range-based PC sampling).
OUTLINED_RANGE_IDS = (65531, 65532, 65533)


def check_load_modules(path: str | os.PathLike[str] | None, lm_id: np.ndarray, listed: np.ndarray) -> None:
    """Refuse CCT nodes (their ``lm_id``) naming a load module that the load map does not list; ``listed``:
    by load-module id, whether the load map lists it (id 0, the placeholders', is always listed). An
    outlined range tree is refused as unsupported."""
    unknown = (lm_id >= len(listed)) | ~listed[np.minimum(lm_id, len(listed) - 1)]
    if unknown.any():
        bad = lm_id[unknown]
        if np.isin(bad, OUTLINED_RANGE_IDS).any():
            raise UnsupportedError(path, "outlined range trees (range-based PC sampling) are not supported")
        raise FormatError(path, f"a CCT node names load module {int(bad[0])}, which is not in the load map")


def check_placeholders(path: str | os.PathLike[str] | None, parent: np.ndarray, lm_id: np.ndarray,
                       lm_ip: np.ndarray, unwound: np.ndarray) -> None:
    """Refuse placeholders out of place in a CCT, or in a forest of them: per node, its parent's row (-1 at a
    root), ``lm_id``, ``lm_ip`` (uint64) and whether it is marked unwound."""
    top = parent < 0
    placeholder = lm_id == 0
    if (top & ~(placeholder & (lm_ip == np.uint64(PRIMARY)))).any():
        raise FormatError(path, "a root of the CCT is not the <primary root> placeholder")
    pr = np.where(top, 0, parent)
    at_global = ~top & placeholder[pr] & (lm_ip[pr] == np.uint64(PRIMARY))
    special = placeholder & ((lm_ip == np.uint64(NO_ACTIVITY)) | (lm_ip == np.uint64(PARTIAL)))
    if (special & ~top & ~at_global).any():
        raise FormatError(path, "<no activity> or <partial root> below a context other than the root")
    if (placeholder & ~unwound & ~top).any():
        raise FormatError(path, "a placeholder CCT node is marked as not unwound")
