"""The load modules a measurement directory records: the binaries ``hpcsa struct MEASDIR`` analyses.

hpcrun writes every load module a process mapped into its profile's load map, flagging those it took
samples in (``LOADMAP_ANALYZE``, the modules hpcstruct should analyse), and copies the GPU binaries it saw
loaded into ``gpubins/``. Structure recovery needs only the paths, not the measurement: it gets this list.
"""

from __future__ import annotations

import os

from hpcsa.core.errors import HpcsaError
from hpcsa.formats.measurement.hpcrun import LOADMAP_ANALYZE, read_hpcrun_loadmap


def measurement_load_modules(measdir: str, all_modules: bool = False) -> list[str]:
    """The load-module paths a measurement directory records, sorted: those with samples in any profile's
    load map (every one with ``all_modules``), plus the ``gpubins/`` files no load map names (always: they
    were loaded on a GPU). Pseudo modules without a file (``[vdso]``) are left out."""
    profiles = sorted(f for f in os.listdir(measdir) if f.endswith(".hpcrun"))
    if not profiles:
        raise HpcsaError(measdir, "not a measurement directory (no .hpcrun files)")
    recorded: dict[str, int] = {}
    for name in profiles:
        for lm in read_hpcrun_loadmap(os.path.join(measdir, name)):
            recorded[lm.path] = recorded.get(lm.path, 0) | lm.flags
    gpubins = os.path.join(measdir, "gpubins")
    if os.path.isdir(gpubins):
        for f in sorted(os.listdir(gpubins)):
            if f.endswith(".gpubin"):
                rel = f"gpubins/{f}"
                if not any(p.endswith("/" + rel) or p == rel for p in recorded):
                    recorded[rel] = LOADMAP_ANALYZE
    return [path for path in sorted(recorded)
            if (recorded[path] & LOADMAP_ANALYZE or all_modules) and path and not path.startswith("[")]
