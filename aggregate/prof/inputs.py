"""What ``hpcsa prof`` reads: the profiles, traces and structure files of measurement directories.

hpcprof takes measurement directories (and loose ``.hpcrun`` files), finds
``structs/*.hpcstruct`` and ``kernel_symbols/`` inside each directory by
itself, and adds the structure files named with ``-S``. Nothing here reads
a profile: only names and sizes (sizes balance the work between workers).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from hpcsa.aggregate.prof.profile_table import ProfileInput, ProfileInputs
from hpcsa.errors import HpcsaError
from hpcsa.fileio import input_error, read_input

_LM_TAG = re.compile(rb'<LM\b[^>]*?\bn="([^"]*)"')
_HAS_CALLS = re.compile(rb'<LM\b[^>]*?\bhas-calls="([^"]*)"')
HEAD_BYTES = 1 << 18  # the LM tag follows the inline DTD, a few KB into the file


@dataclass(frozen=True)
class StructInput:
    """A structure file and the load-module path its (first) ``LM`` names (None: not found in the head)."""

    path: str
    module: str | None
    measdir: str | None


@dataclass
class Inputs:
    profiles: ProfileInputs = field(default_factory=lambda: ProfileInputs.of([]))  # columns, no object each
    structs: list[StructInput] = field(default_factory=list)
    #: Structure files of the measurement directories left out by ``--ignore-structs``: they are not used
    #: for attribution, only to check that a binary read in their place is the measured one.
    witnesses: list[StructInput] = field(default_factory=list)
    measdirs: list[str] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return int(self.profiles.cost.sum())


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError as exc:
        raise input_error(path, exc) from None


def peek_struct_module(path: str) -> str | None:
    """The ``n`` of the first ``<LM>`` of a structure file, from the head of the file (no XML parse)."""
    head = read_input(path, HEAD_BYTES, "a structure file")
    m = _LM_TAG.search(head)
    if not m:
        return None
    text = m.group(1).decode("utf-8", "replace")
    return text.replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _profile(path: str, measdir: str) -> ProfileInput:
    trace = path[: -len(".hpcrun")] + ".hpctrace"
    has_trace = os.path.isfile(trace)
    return ProfileInput(path, trace if has_trace else None, _size(path), _size(trace) if has_trace else 0,
                        measdir)


def find_inputs(paths: list[str], structs: list[str] | None = None, *, ignore_structs: bool = False) -> Inputs:
    """Profiles of every measurement directory or ``.hpcrun`` file in ``paths``, plus structure files.

    Structure files come from ``structs`` (``-S``: files or directories) and,
    unless ``ignore_structs``, from each measurement directory's ``structs/``.
    """
    out = Inputs()
    profiles: list[ProfileInput] = []  # (packed into columns at the end)
    seen: set[str] = set()
    if not paths:
        raise HpcsaError(None, "no measurement directory given")
    for given in paths:
        path = os.path.abspath(given)
        if os.path.isdir(path):
            out.measdirs.append(path)
            names = sorted(n for n in os.listdir(path) if n.endswith(".hpcrun"))
            if not names:
                raise HpcsaError(given, "no .hpcrun profiles in this directory (is it a measurement directory?)")
            for n in names:
                full = os.path.join(path, n)
                if full not in seen:
                    seen.add(full)
                    profiles.append(_profile(full, path))
        elif os.path.isfile(path) and path.endswith(".hpcrun"):
            if path not in seen:
                seen.add(path)
                profiles.append(_profile(path, os.path.dirname(path)))
        elif not os.path.exists(path):
            raise HpcsaError(given, "no such file or directory")
        else:
            raise HpcsaError(given, "neither a measurement directory nor an .hpcrun profile")
    out.profiles = ProfileInputs.of(profiles)
    struct_paths: list[tuple[str, str | None]] = []
    for s in structs or []:
        full = os.path.abspath(s)
        if os.path.isdir(full):
            struct_paths += [(os.path.join(full, n), None) for n in sorted(os.listdir(full))
                             if n.endswith(".hpcstruct")]
        elif os.path.isfile(full):
            struct_paths.append((full, None))
        else:
            raise HpcsaError(s, "no such structure file")
    for d in out.measdirs:
        sdir = os.path.join(d, "structs")
        if os.path.isdir(sdir):
            found = [(os.path.join(sdir, n), d) for n in sorted(os.listdir(sdir)) if n.endswith(".hpcstruct")]
            if ignore_structs:
                out.witnesses += [StructInput(p, peek_struct_module(p), m) for p, m in found]
            else:
                struct_paths += found
    done: set[str] = set()
    for p, measdir in struct_paths:
        if p in done:
            continue
        done.add(p)
        out.structs.append(StructInput(p, peek_struct_module(p), measdir))
    return out


def kernel_symbols_dirs(measdirs: list[str]) -> list[str]:
    return [os.path.join(d, "kernel_symbols") for d in measdirs if os.path.isdir(os.path.join(d, "kernel_symbols"))]


def default_output_name(measdirs: list[str], program: str | None) -> str:
    """hpcprof's naming: ``hpctoolkit-<app>-measurements[-x]`` gives ``hpctoolkit-<app>-database[-x]``;
    otherwise ``hpctoolkit-<program>-database``."""
    if measdirs:
        base = os.path.basename(measdirs[0].rstrip(os.sep))
        m = re.fullmatch(r"hpctoolkit-(.+)-measurements(.*)", base)
        if m:
            return f"hpctoolkit-{m.group(1)}-database{m.group(2)}"
    name = os.path.basename(program or "") or "unnamed"
    return f"hpctoolkit-{name}-database"
