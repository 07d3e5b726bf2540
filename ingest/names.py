"""Names for code hpcprof cannot open: a minimal ``.hpcstruct`` per synthetic load module.

Vendor records name their API calls, kernels and CPU frames, but the binaries
are not at hand (or do not exist, e.g. the pseudo-module that stands for "the
CUDA API"). hpcrun's measurement contract carries only (module, offset), so the
names go where hpcprof looks for them: ``structs/<name>.hpcstruct`` in the
measurement directory, one procedure per address. Without these files hpcprof
still accepts the measurement and shows ``[module]+offset``.
"""

from __future__ import annotations

import os
import re
from xml.sax.saxutils import quoteattr

from hpcsa.fileio import write_file

HEADER = ('<?xml version="1.0"?>\n'
          '<HPCToolkitStructure i="0" version="4.9" n="">\n')


def safe_name(text: str, limit: int = 80) -> str:
    """A file name made from arbitrary text: no separators, no leading dots, bounded length."""
    name = re.sub(r"[^A-Za-z0-9._+-]+", "_", text).strip("._") or "unnamed"
    return name[:limit]


def write_names(struct_dir: str, module_path: str, procedures: dict[str, tuple[set[int], int]],
                file_name: str | None = None) -> str:
    """Write ``structs/<module>.hpcstruct`` naming the code of ``module_path``: each procedure
    ``name -> (addresses, span)`` covers ``span`` bytes from each of its addresses and is entered at the
    lowest one."""
    lines = [HEADER, f'<LM i="2" n={quoteattr(module_path)} has-calls="0" v="{{}}">\n',
             f'<F i="3" n={quoteattr("[" + os.path.basename(module_path) + "]")}>\n']
    i = 4
    for name, (addrs, span) in sorted(procedures.items(), key=lambda kv: min(kv[1][0])):
        entry = min(addrs)
        ranges = " ".join(f"[{a:#x}-{a + max(span, 1):#x})" for a in sorted(addrs))
        lines.append(f'<P i="{i}" n={quoteattr(name)} v="{{[{entry:#x}-{entry + 1:#x})}}">'
                     f'<S i="{i + 1}" l="0" v="{{{ranges}}}"/></P>\n')
        i += 2
    lines.append("</F>\n</LM>\n</HPCToolkitStructure>\n")
    path = os.path.join(struct_dir, (file_name or safe_name(module_path)) + ".hpcstruct")
    write_file(path, "".join(lines))
    return path
