"""Kernel and CPU symbol names as people read them.

Demangling uses ``cxxfilt`` (PyPI), a thin binding of libstdc++'s
``abi::__cxa_demangle`` — the demangler of ``c++filt`` and of GCC itself, so
names read exactly as in every other GNU tool, and it is fast (no process per
name). Names that are not mangled, or that it refuses, are returned unchanged.
AMD kernel-descriptor names (``<name>.kd``) lose the suffix first.
"""

from __future__ import annotations

from functools import lru_cache

import cxxfilt


@lru_cache(maxsize=1 << 16)
def demangle(name: str) -> str:
    base = name[:-3] if name.endswith(".kd") else name
    if not base.startswith("_Z"):
        return base
    try:
        return cxxfilt.demangle(base)
    except cxxfilt.InvalidName:
        return base
