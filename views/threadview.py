"""hpcviewer's thread view: the views computed over a chosen set of profiles instead of all of them.

Profiles are chosen by an *id-tuple pattern*: space-separated terms, each a kind and the values it may take
-- ``rank 0-3``, ``thread 0,2,4``, ``run 5`` (a run of processes sharing an identity,
:mod:`hpcsa.views.processes`), ``node *``, ``core 1``, ``context 1``, ``stream 2-7``, ``device 0`` -- or the
class ``cpu`` / ``gpu``. A profile matches when every term does; a kind the profile lacks never matches (so
``stream *`` chooses GPU streams). ``rank 0 thread 0`` is every rank-0 main thread.

The chosen profiles' values are combined exactly as hpcprof combines all of them into the summary profile
(:func:`hpcsa.views.dbwrite.summary_profile`: the database's own summary statistics -- sum, min, max, sum of
squares -- over the chosen profiles), and every view is then built from that summary as usual: the
top-down tree keeps its node numbers, inclusive and exclusive values are the chosen threads' own.
"""

from __future__ import annotations

import copy
import re
from typing import TYPE_CHECKING

import numpy as np

from hpcsa.core.errors import HpcsaError
from hpcsa.views.dbwrite import summary_profile
from hpcsa.views.processes import GPU_KINDS, KIND_GPUCONTEXT, KIND_GPUDEVICE, KIND_GPUSTREAM

if TYPE_CHECKING:
    from hpcsa.views.experiment import Experiment

#: Pattern words and the identifier kinds they name (``run`` is the process's run, not an identifier).
WORDS = {"node": "NODE", "rank": "RANK", "thread": "THREAD", "core": "CORE", "device": KIND_GPUDEVICE,
         "gpu": KIND_GPUDEVICE, "context": KIND_GPUCONTEXT, "stream": KIND_GPUSTREAM, "run": "run"}
CLASSES = ("cpu", "gpu")


def _values(text: str, pattern: str) -> set[int] | None:
    """The values a term allows (None: any): ``*``, ``3``, ``0-7``, ``1,4,9-12``."""
    if text == "*":
        return None
    out: set[int] = set()
    for part in text.split(","):
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part.strip())
        if not m:
            raise HpcsaError(None, f"thread pattern {pattern!r}: {text!r} is not a value list (e.g. 3, 0-7, "
                             "1,4,9-12 or *)")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi - lo > 1 << 20:
            raise HpcsaError(None, f"thread pattern {pattern!r}: the range {part} is too wide")
        out.update(range(lo, hi + 1))
    return out


def parse_pattern(pattern: str) -> list[tuple[str, set[int] | None]]:
    """The terms of an id-tuple pattern (see the module docstring)."""
    words = pattern.split()
    terms: list[tuple[str, set[int] | None]] = []
    i = 0
    while i < len(words):
        w = words[i].lower()
        if w in CLASSES and (i + 1 == len(words) or words[i + 1].lower() in WORDS or words[i + 1].lower() in CLASSES):
            terms.append((w, None))
            i += 1
            continue
        if w not in WORDS:
            raise HpcsaError(None, f"thread pattern {pattern!r}: unknown word {words[i]!r} (use "
                             f"{', '.join(sorted(WORDS))}, cpu or gpu)")
        if i + 1 == len(words):
            raise HpcsaError(None, f"thread pattern {pattern!r}: {words[i]!r} needs values (e.g. {w} 0-3)")
        terms.append((WORDS[w], _values(words[i + 1], pattern)))
        i += 2
    return terms


def matching_profiles(exp: Experiment, pattern: str) -> list[int]:
    """The profiles (profile.db indices) an id-tuple pattern chooses."""
    terms = parse_pattern(pattern)
    procs = exp.processes
    out = []
    for p in exp.profiles:
        ok = True
        for kind, allowed in terms:
            if kind in CLASSES:
                ok = p.gpu == (kind == "gpu")
            elif kind == "run":
                run = procs.process(p.index).run or 1
                ok = allowed is None or run in allowed
            else:
                have = p.ids.get(kind)
                if kind == KIND_GPUDEVICE and have is None and p.gpu and any(k in p.ids for k in GPU_KINDS):
                    have = p.ids.get(KIND_GPUCONTEXT)  # streams named by context only: the context is the GPU
                ok = have is not None and (allowed is None or have in allowed)
            if not ok:
                break
        if ok:
            out.append(p.index)
    return out


def thread_view(exp: Experiment, profiles: list[int]) -> Experiment:
    """The experiment seen through some profiles only: its summary values are theirs (module docstring)."""
    if not profiles:
        raise HpcsaError(exp.path, "the thread pattern chooses no profile")
    sub = copy.copy(exp)  # the tree, metric catalog and names are shared; the value caches are not
    sub._stat, sub._self = {}, {}
    pdb = exp.db.profiles
    sub._summary = summary_profile(exp.meta, [pdb.profile(i) for i in sorted(set(profiles))])
    sub.chosen_profiles = np.array(sorted(set(profiles)), np.int64)
    return sub
