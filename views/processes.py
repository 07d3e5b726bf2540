"""Which process each profile belongs to, and the labels every view gives a profile: process, then thread or
GPU stream.

A profile's identifier tuple (profile.db) names its process (NODE, RANK) and its place in it (THREAD, CORE,
GPU device, context and stream). Processes without an MPI rank that ran one after another into one
measurement directory share their identity: hpcrun numbers each one's threads from 0 again, so the database
has, say, 64 profiles called ``node 0 core 0 thread 0``. Their traces tell them apart: each such process is a
*run*, started by its first thread (the lowest THREAD id) -- a traced profile joins the run whose first
thread started last before it; a profile without a trace line joins the first run. A database without
traces cannot tell runs apart; its profiles with a shared identity then carry their profile number.

Labels name the process (``node 0 rank 3``, ``node 0 run 5``) and the thread or stream (``thread 2``,
``GPU context 1 stream 7``), so no two profiles of a database read alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.formats.measurement.hpcrun import (
    ID_CORE,
    ID_GPUCONTEXT,
    ID_GPUDEVICE,
    ID_GPUSTREAM,
    ID_KINDS,
    ID_THREAD,
)

#: Identifier-tuple kind names (hpcrun's id-tuple.h, declared by the measurement reader); GPU_KINDS mark a
#: GPU profile, THREAD_KINDS are those below a process (a rank's threads and GPU streams).
KIND_THREAD, KIND_CORE, KIND_GPUDEVICE, KIND_GPUCONTEXT, KIND_GPUSTREAM = (
    ID_KINDS[k] for k in (ID_THREAD, ID_CORE, ID_GPUDEVICE, ID_GPUCONTEXT, ID_GPUSTREAM))
GPU_KINDS = (KIND_GPUDEVICE, KIND_GPUCONTEXT, KIND_GPUSTREAM)
THREAD_KINDS = (KIND_THREAD, KIND_CORE) + GPU_KINDS


@dataclass
class ProfileInfo:
    """One profile's identity: its id tuple as ``{kind name: logical id}``, and whether it is a GPU stream."""

    index: int
    ids: dict[str, int]
    gpu: bool

    @property
    def process(self) -> tuple[tuple[str, int], ...]:
        """The process it belongs to: its id tuple without thread, core and GPU identifiers."""
        return tuple((k, v) for k, v in self.ids.items() if k not in THREAD_KINDS)

    @property
    def label(self) -> str:
        return " ".join(f"{k.lower()} {v}" for k, v in self.ids.items()) or "summary"



#: How a GPU identifier reads in a label.
GPU_WORDS = {KIND_GPUDEVICE: "GPU", KIND_GPUCONTEXT: "context", KIND_GPUSTREAM: "stream"}


@dataclass
class Process:
    """One process: its identity, which run of that identity it is, and its profiles (CPU threads in thread
    order, then GPU streams)."""

    key: tuple[tuple[str, int], ...]
    run: int  # 1, 2, ... when several processes share the identity; 0 when it is the only one
    runs: int
    cpu: list[int] = field(default_factory=list)
    gpu: list[int] = field(default_factory=list)

    @property
    def label(self) -> str:
        base = " ".join(f"{k.lower()} {v}" for k, v in self.key) or "process"
        return f"{base} run {self.run}" if self.runs > 1 else base

    @property
    def profiles(self) -> list[int]:
        return self.cpu + self.gpu


def thread_label(p: ProfileInfo) -> str:
    """A profile's place in its process: ``thread 3``, ``core 0 thread 3``, ``GPU context 1 stream 7``."""
    if p.gpu:
        parts = [f"{GPU_WORDS[k]} {v}" for k, v in p.ids.items() if k in GPU_KINDS]
        return " ".join(parts) if parts[0].startswith("GPU") else "GPU " + " ".join(parts)
    return " ".join(f"{k.lower()} {v}" for k, v in p.ids.items() if (k, v) not in p.process) or "thread"


class Processes:
    """The processes of a database (see the module docstring); ``starts`` maps a profile to the time of the
    first element of its trace line (profiles without a line are absent)."""

    def __init__(self, profiles: Sequence[ProfileInfo], starts: Mapping[int, int] | None = None) -> None:
        self.info = {p.index: p for p in profiles}
        starts = starts or {}
        by: dict[tuple, list[ProfileInfo]] = {}
        for p in sorted(profiles, key=lambda p: (p.process, tuple(sorted(p.ids.items())), p.index)):
            by.setdefault(p.process, []).append(p)
        self.processes: list[Process] = []
        self.process_of: dict[int, int] = {}
        self._shared: dict[int, bool] = {}
        for key, members in sorted(by.items()):
            runs = split_runs(members, starts)
            for k, group in enumerate(runs):
                proc = Process(key, k + 1 if len(runs) > 1 else 0, len(runs))
                cpu = sorted((p for p in group if not p.gpu), key=lambda p: (p.ids.get(KIND_THREAD, 0), p.index))
                proc.cpu = [p.index for p in cpu]
                proc.gpu = [p.index for p in group if p.gpu]
                for p in group:
                    self.process_of[p.index] = len(self.processes)
                self.processes.append(proc)
                seen: dict[tuple, int] = {}
                for p in group:
                    ident = tuple(sorted(p.ids.items()))
                    seen[ident] = seen.get(ident, 0) + 1
                for p in group:
                    self._shared[p.index] = seen[tuple(sorted(p.ids.items()))] > 1

    def __len__(self) -> int:
        return len(self.processes)

    def process(self, index: int) -> Process:
        return self.processes[self.process_of[index]]

    def thread_label(self, index: int) -> str:
        """The thread or stream part of a profile's label (its profile number added where it alone would
        not tell the profile from another of its process)."""
        p = self.info[index]
        text = thread_label(p)
        return f"{text} (profile {index})" if self._shared.get(index) else text

    def label(self, index: int) -> str:
        """``node 0 run 5 thread 3``, ``node 0 rank 2 GPU context 1 stream 7``; ``profile N`` if unknown."""
        if index not in self.info:
            return f"profile {index}"
        return f"{self.process(index).label} {self.thread_label(index)}"

    def labels(self) -> dict[int, str]:
        return {i: self.label(i) for i in self.info}


def split_runs(members: list[ProfileInfo], starts: Mapping[int, int]) -> list[list[ProfileInfo]]:
    """Split the profiles of one process identity into runs when identities repeat (see the module
    docstring); one group when they do not or the traces cannot tell."""
    keys = [tuple(sorted(p.ids.items())) for p in members]
    if len(set(keys)) == len(keys):
        return [members]
    cpu = [p for p in members if not p.gpu]
    first_id = min((p.ids.get(KIND_THREAD, 0) for p in cpu), default=0)
    anchors = sorted((starts[p.index], p.index) for p in cpu
                     if p.ids.get(KIND_THREAD, 0) == first_id and p.index in starts)
    if len(anchors) < 2:
        return [members]
    at = np.array([a[0] for a in anchors], np.int64)
    groups: list[list[ProfileInfo]] = [[] for _ in anchors]
    for p in members:
        k = 0 if p.index not in starts else max(0, int(np.searchsorted(at, starts[p.index], "right")) - 1)
        groups[k].append(p)
    return groups
