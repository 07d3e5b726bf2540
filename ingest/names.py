"""Names for code hpcprof cannot open: a minimal ``.hpcstruct`` per synthetic load module.

Vendor records name their API calls, kernels and CPU frames, but the binaries
are not at hand (or do not exist, e.g. the pseudo-module that stands for "the
CUDA API"). hpcrun's measurement contract carries only (module, offset), so the
names go where hpcprof looks for them: ``structs/<name>.hpcstruct`` in the
measurement directory, one procedure per address. Without these files hpcprof
still accepts the measurement and shows ``[module]+offset``. The file is built
with the structure package's model and writer, so it is a regular 4.9 file.
"""

from __future__ import annotations

import os
import re

from hpcsa.core.digests import md5
from hpcsa.formats.hpcstruct.model import F, ModuleBuilder, P, S, StructureFile, renumber
from hpcsa.formats.hpcstruct.writer import write_hpcstruct


def safe_name(text: str, limit: int = 80) -> str:
    """A file name made from arbitrary text: no separators, no leading dots, bounded length."""
    name = re.sub(r"[^A-Za-z0-9._+-]+", "_", text).strip("._") or "unnamed"
    return name[:limit]


def write_names(struct_dir: str, module_path: str, procedures: dict[str, tuple[set[int], int]],
                file_name: str | None = None) -> str:
    """Write ``structs/<module>.hpcstruct`` naming the code of ``module_path``: each procedure
    ``name -> (addresses, span)`` covers ``span`` bytes from each of its addresses and is entered at the
    lowest one."""
    builder = ModuleBuilder(module_path, has_calls=False)
    pseudo_file = builder.add(F, -1, file="[" + os.path.basename(module_path) + "]", has_v=False)
    for name, (addrs, span) in sorted(procedures.items(), key=lambda kv: (min(kv[1][0]), kv[0])):
        entry = min(addrs)
        proc = builder.add(P, pseudo_file, name=name, ranges=[(entry, entry + 1)])
        builder.add(S, proc, line=0, ranges=[(a, a + max(span, 1)) for a in sorted(addrs)])
    sf = StructureFile(modules=[builder.finish()])
    renumber(sf)
    path = os.path.join(struct_dir, (file_name or safe_name(module_path)) + ".hpcstruct")
    write_hpcstruct(path, sf)
    return path



def write_names_files(names: dict[str, dict[str, tuple[set[int], int]]], outdir: str) -> None:
    """``structs/<module>-<md5>.hpcstruct`` naming the procedures of each synthetic or absent module."""
    if not names:
        return
    structs = os.path.join(outdir, "structs")
    os.makedirs(structs, exist_ok=True)
    for module in sorted(names):
        digest = md5(module.encode("utf-8", "surrogateescape")).hexdigest()[:10]
        write_names(structs, module, names[module], f"{safe_name(os.path.basename(module) or module, 50)}-{digest}")
