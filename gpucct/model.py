"""Inputs and outputs of GPU calling-context reconstruction, with no file I/O.

Inputs: a :class:`CallGraph` (device functions with their address ranges, call
sites with the call instruction's address and the callee's entry) and
:class:`PcSamples` (pc offsets and a samples x metrics matrix). Addresses are
whatever the caller uses consistently; for NVIDIA they are HPCToolkit's
relocated cubin offsets (function symbol value + section file offset), the
same numbers as the ``v``/``t`` attributes of a ``.hpcstruct`` file and the
``lm_ip`` of a PC sample in a ``.hpcrun`` file.

Output: a :class:`Reconstruction`, a tree of :class:`Frame` rooted at the
launch context (the ``<gpu kernel>`` placeholder), and the sample points
placed under its frames. A frame is *how code was entered*; it is named by a
:class:`Step`:

- the root (step ``None``): entered by the kernel launch. Points of the launched
  kernel itself hang here;
- ``CALL pc``: entered through the call instruction at ``pc``. Its points
  are samples in the callee;
- ``RECURSION pc``: a recursive component (functions that call each other,
  or one function that calls itself), collapsed into one frame between the
  call into it and its members; ``pc`` is the smallest member entry;
- ``UNKNOWN``: entered from an unknown caller (indirect calls, functions the
  launched kernel cannot reach, pcs outside every function);
- ``TRUNCATED pc``: the rest of the call paths of the launched kernel entered
  at ``pc`` (0 under ``UNKNOWN``), flat, when the budget of placed points ran
  out (see ``reconstruct``).

To turn a frame into contexts, the aggregation lexically expands each
``CALL`` pc through the structure file (function, loops, inlined calls, line,
call) under the parent frame's context, and each point's pc (function, loops,
inlined calls, line) under its frame's context. The function a point or call
belongs to therefore comes from its own pc; frames never repeat it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from functools import cached_property
from typing import TYPE_CHECKING, NamedTuple, NoReturn

import numpy as np

from hpcsa.core.errors import HpcsaError
from hpcsa.gpucct.scc import call_digraph, strongly_connected

if TYPE_CHECKING:
    import networkx as nx

ADDRESS_END = 2**64 - 1  # the end of the last function when its extent is not given


@dataclass(frozen=True)
class DeviceFunction:
    """A device function: its entry address (its identity), its name, and where its code lies.

    ``ranges`` are ``[lo, hi)`` address ranges. When no function of a graph
    has ranges, each extends from its entry to the next function's entry (the
    last one to the end of the address space), which is how functions lie in a
    cubin; when some have ranges, one without has no code of its own (it can
    still be called or launched).
    """

    entry: int
    name: str = ""
    ranges: tuple[tuple[int, int], ...] = ()


@dataclass(frozen=True)
class CallSite:
    """A call instruction at ``pc`` in function ``caller`` (an entry address).

    ``callee`` is the called function's entry, or None for an indirect call
    (or any call whose target is not a known function entry).
    ``caller=None`` means: the function whose ranges hold ``pc``.
    """

    pc: int
    callee: int | None
    caller: int | None = None


class CallGraph:
    """The static call graph of one GPU binary, with its recursive components collapsed.

    Everything here depends on the binary only, so one CallGraph serves every
    launch context of every profile. Functions are kept sorted by entry and
    calls by pc, so nothing downstream depends on the order they were given in.
    """

    def __init__(self, functions: Sequence[DeviceFunction], calls: Sequence[CallSite] = (),
                 *, source: str | None = None) -> None:
        self.source = source
        funcs = sorted(functions, key=lambda f: f.entry)
        self.functions: list[DeviceFunction] = funcs
        self.entries = np.array([f.entry for f in funcs], dtype=np.uint64)
        if len(funcs) > 1 and bool(np.any(self.entries[1:] == self.entries[:-1])):
            dup = int(self.entries[1:][self.entries[1:] == self.entries[:-1]][0])
            self._fail(f"two device functions have the entry address {dup:#x}")
        self._index_of_entry = {f.entry: i for i, f in enumerate(funcs)}
        self._build_extents()
        self._build_calls(calls)
        self._build_components()

    # -- construction -----------------------------------------------------------------------------
    def _fail(self, problem: str) -> NoReturn:
        raise HpcsaError(self.source, f"call graph: {problem}")

    def _build_extents(self) -> None:
        lo: list[int] = []
        hi: list[int] = []
        owner: list[int] = []
        entries = [f.entry for f in self.functions]
        explicit = any(f.ranges for f in self.functions)
        for i, f in enumerate(self.functions):
            if explicit:
                for a, b in f.ranges:
                    if not 0 <= a < b <= ADDRESS_END:
                        self._fail(f"function {self.label(i)} has an empty or invalid range [{a:#x}, {b:#x})")
                    lo.append(a)
                    hi.append(b)
                    owner.append(i)
            else:
                lo.append(f.entry)
                hi.append(entries[i + 1] if i + 1 < len(entries) else ADDRESS_END)
                owner.append(i)
        lo_a = np.array(lo, dtype=np.uint64)
        order = np.lexsort((np.array(hi, dtype=np.uint64), lo_a))
        self._lo = lo_a[order]
        self._hi = np.array(hi, dtype=np.uint64)[order]
        self._owner = np.array(owner, dtype=np.int64)[order]
        if len(self._lo) > 1:
            bad = np.flatnonzero(self._lo[1:] < self._hi[:-1])
            if len(bad):
                j = int(bad[0])
                self._fail(f"the address ranges of {self.label(int(self._owner[j]))} and "
                           f"{self.label(int(self._owner[j + 1]))} overlap at {int(self._lo[j + 1]):#x}")

    def _build_calls(self, calls: Sequence[CallSite]) -> None:
        by_pc: dict[int, CallSite] = {}
        for c in calls:
            seen = by_pc.get(c.pc)
            if seen is not None and seen != c:
                self._fail(f"two different call sites at pc {c.pc:#x}")
            by_pc[c.pc] = c
        ordered = [by_pc[pc] for pc in sorted(by_pc)]
        pcs = np.array([c.pc for c in ordered], dtype=np.uint64)
        located = self.function_of(pcs)
        caller = np.empty(len(ordered), dtype=np.int64)
        callee = np.full(len(ordered), -1, dtype=np.int64)
        unresolved: list[int] = []
        for k, c in enumerate(ordered):
            where = int(located[k])
            if c.caller is None:
                if where < 0:
                    self._fail(f"the call instruction at {c.pc:#x} lies in no function")
                caller[k] = where
            else:
                idx = self._index_of_entry.get(c.caller)
                if idx is None:
                    self._fail(f"the call at {c.pc:#x} names caller {c.caller:#x}, which is no function entry")
                if where != idx:
                    self._fail(f"the call at {c.pc:#x} lies outside its caller {self.label(idx)}")
                caller[k] = idx
            if c.callee is not None:
                target = self._index_of_entry.get(c.callee)
                if target is None:
                    unresolved.append(c.pc)
                else:
                    callee[k] = target
        self.call_pc = pcs
        self.call_caller = caller
        self.call_callee = callee
        #: pcs of direct calls whose target is no function entry; they are treated as indirect calls.
        self.unresolved_calls: tuple[int, ...] = tuple(unresolved)

    def _build_components(self) -> None:
        n = len(self.functions)
        succ: list[list[int]] = [[] for _ in range(n)]
        self_call = [False] * n
        for a, b in zip(self.call_caller.tolist(), self.call_callee.tolist(), strict=True):
            if b >= 0:
                succ[a].append(b)
                if a == b:
                    self_call[a] = True
        found = strongly_connected(succ)  # reverse topological (hand-written: see scc.py for why)
        # Canonical component ids: by smallest member (= smallest entry, functions being sorted).
        found_sorted = sorted((sorted(c) for c in found), key=lambda c: c[0])
        comp_of = np.empty(n, dtype=np.int64)
        for cid, members in enumerate(found_sorted):
            comp_of[members] = cid
        self.comp_of = comp_of
        self.comp_members: list[tuple[int, ...]] = [tuple(m) for m in found_sorted]
        self.comp_recursive = np.array([len(m) > 1 or self_call[m[0]] for m in found_sorted], dtype=bool)
        #: Each component's smallest member entry: how frames name it (RECURSION step, origin).
        self.comp_entry = self.entries[[m[0] for m in found_sorted]] if n else np.zeros(0, np.uint64)
        # Topological rank (callers before callees).
        topo = np.empty(len(found_sorted), dtype=np.int64)
        for rank, members in enumerate(reversed(found)):
            topo[comp_of[members[0]]] = rank
        self.comp_topo = topo
        # Edges between components, in call-pc order; calls inside a component are dropped.
        src = comp_of[self.call_caller] if n else np.zeros(0, np.int64)
        has = self.call_callee >= 0
        dst = np.where(has, comp_of[np.maximum(self.call_callee, 0)] if n else 0, -1)
        inter = has & (src != dst)
        self.edge_call = np.flatnonzero(inter)
        self.edge_src = src[inter] if n else np.zeros(0, np.int64)
        self.edge_dst = dst[inter]

    # -- queries ----------------------------------------------------------------------------------
    @property
    def n_functions(self) -> int:
        return len(self.functions)

    @property
    def n_components(self) -> int:
        return len(self.comp_members)

    def label(self, index: int) -> str:
        f = self.functions[index]
        return f"{f.name} ({f.entry:#x})" if f.name else f"{f.entry:#x}"

    def index_of(self, entry: int) -> int:
        """Index (in ``functions``) of the function entered at ``entry``; -1 if none."""
        return self._index_of_entry.get(int(entry), -1)

    def function_of(self, pcs: np.ndarray | Sequence[int]) -> np.ndarray:
        """Index of the function holding each pc (-1 where none does); vectorized."""
        pcs = np.asarray(pcs, dtype=np.uint64)
        if not len(self._lo):
            return np.full(pcs.shape, -1, dtype=np.int64)
        pos = np.searchsorted(self._lo, pcs, side="right") - 1
        clipped = np.maximum(pos, 0)
        ok = (pos >= 0) & (pcs < self._hi[clipped])
        return np.where(ok, self._owner[clipped], -1)

    def member_entries(self, comp: int) -> tuple[int, ...]:
        return tuple(self.functions[i].entry for i in self.comp_members[comp])

    @cached_property
    def digraph(self) -> nx.DiGraph[int]:
        """The direct calls as a networkx ``DiGraph``: nodes are indices into ``functions``, one edge per
        (caller, callee) pair, successors in call-pc order. Built on first use; reconstruction does not need it."""
        direct = self.call_callee >= 0
        return call_digraph(self.n_functions, zip(self.call_caller[direct].tolist(),
                                                  self.call_callee[direct].tolist(), strict=True))

    @cached_property
    def edge_steps(self) -> list[Step]:
        """The CALL step of each inter-component edge."""
        pcs = self.call_pc[self.edge_call].tolist()
        return [Step(StepKind.CALL, pc) for pc in pcs]

    @cached_property
    def comp_out_edges(self) -> list[list[int]]:
        """Per component, its outgoing inter-component edges (indices into ``edge_*``), by call pc."""
        return self._edges_by_component(self.edge_src)

    @cached_property
    def comp_in_edges(self) -> list[list[int]]:
        """Per component, its incoming inter-component edges, by call pc."""
        return self._edges_by_component(self.edge_dst)

    def _edges_by_component(self, component: np.ndarray) -> list[list[int]]:
        """The inter-component edges grouped by one of their ends (in edge order, which is by call pc)."""
        out: list[list[int]] = [[] for _ in range(self.n_components)]
        for e, c in enumerate(component.tolist()):
            out[c].append(e)
        return out


RECURSION_NAMES_SHOWN = 3


def recursion_name(names: Sequence[str]) -> str:
    """How a recursion frame is named for readers: ``<recursion: f, g, h +2>``."""
    shown = ", ".join(names[:RECURSION_NAMES_SHOWN])
    more = f" +{len(names) - RECURSION_NAMES_SHOWN}" if len(names) > RECURSION_NAMES_SHOWN else ""
    return f"<recursion: {shown}{more}>"


UNKNOWN_CALLER_NAME = "<unknown caller>"
TRUNCATED_NAME = "<more call paths>"


@dataclass
class PcSamples:
    """Flat PC samples of one launch context: one row per sample point.

    ``values`` is samples x metrics; column ``weight`` (GINS) at call
    instructions gives the call-edge weights unless exact counts are passed to
    ``reconstruct``. ``weight=None``: no weight metric (every split is even
    unless counts are given). Several rows may share a pc; they are summed.
    """

    pcs: np.ndarray
    values: np.ndarray
    weight: int | None = 0

    def __post_init__(self) -> None:
        self.pcs = np.ascontiguousarray(self.pcs, dtype=np.uint64).reshape(-1)
        values = np.asarray(self.values, dtype=np.float64)
        if values.ndim == 1:
            values = values.reshape(-1, 1)
        if values.ndim != 2 or values.shape[0] != len(self.pcs):
            raise HpcsaError(None, f"PC samples: {len(self.pcs)} pcs but a value matrix of shape {values.shape}")
        if not np.all(np.isfinite(values)):
            raise HpcsaError(None, "PC samples: a metric value is NaN or infinite")
        self.values = values
        if self.weight is not None and not 0 <= self.weight < values.shape[1]:
            raise HpcsaError(None, f"PC samples: weight column {self.weight} is not one of the "
                             f"{values.shape[1]} metric columns")

    @property
    def n_metrics(self) -> int:
        return int(self.values.shape[1])

    def totals(self) -> np.ndarray:
        return self.values.sum(axis=0)


class StepKind(IntEnum):
    """What a frame's step is; the order is the order of sibling frames."""

    CALL = 1
    RECURSION = 2
    TRUNCATED = 3
    UNKNOWN = 4


class Step(NamedTuple):
    """One step of a path from the launch root: a kind and an address (0 for UNKNOWN/TRUNCATED)."""

    kind: StepKind
    pc: int

    def __str__(self) -> str:
        if self.kind == StepKind.CALL:
            return f"call@{self.pc:#x}"
        if self.kind == StepKind.RECURSION:
            return f"recursion@{self.pc:#x}"
        if self.kind == StepKind.TRUNCATED and self.pc:
            return f"truncated@{self.pc:#x}"
        return self.kind.name.lower()


class Frame(NamedTuple):
    """One frame of the reconstructed tree.

    ``factor`` is the share of the entered code's samples placed under this
    frame: the product of the call-site ratios along its path (1 for a
    TRUNCATED frame, which holds code from many paths, each point with its own share).
    ``callee``: for CALL, the entry of the called function. ``members``: for
    RECURSION, the entries of the component's functions. ``origin``: the entry
    of the launched kernel this frame descends from (for a kernel in a
    recursive component, the component's smallest entry); None at the root and
    under UNKNOWN.
    """

    parent: int
    step: Step | None
    factor: float
    callee: int | None = None
    members: tuple[int, ...] = ()
    origin: int | None = None


@dataclass
class ReconstructionStats:
    """What happened, for summaries and warnings."""

    points: int = 0              # distinct sample pcs with a non-zero value
    unknown_points: int = 0      # of those, pcs placed under UNKNOWN
    forced_edges: int = 0        # call edges given weight 1 by the zero-weight rule
    recursion_frames: int = 0
    truncated_frames: int = 0
    unresolved_calls: int = 0    # direct calls to no known entry, treated as indirect
    unknown_kernels: tuple[int, ...] = ()  # launched entries that are no function of the graph


@dataclass
class Reconstruction:
    """The reconstructed calling-context tree of one launch context.

    ``frames[0]`` is the root; frames are in canonical pre-order (siblings by
    step), so a parent precedes its children. Points are the sample pcs placed
    under each frame with their apportioned metric values, sorted by (frame, pc).
    """

    frames: list[Frame]
    point_frame: np.ndarray   # int64, index into frames
    point_pc: np.ndarray      # uint64
    point_values: np.ndarray  # float64, points x metrics
    stats: ReconstructionStats = field(default_factory=ReconstructionStats)

    @property
    def n_metrics(self) -> int:
        return int(self.point_values.shape[1])

    def totals(self) -> np.ndarray:
        """Sum over every point, per metric (equals the flat totals of the input)."""
        return self.point_values.sum(axis=0)

    def path(self, frame: int) -> tuple[Step, ...]:
        """The steps from the root down to ``frame`` (empty for the root)."""
        steps: list[Step] = []
        while frame > 0:
            f = self.frames[frame]
            assert f.step is not None
            steps.append(f.step)
            frame = f.parent
        return tuple(reversed(steps))

    def paths(self) -> Iterator[tuple[tuple[Step, ...], int, np.ndarray]]:
        """Every placed point as (steps from the root, sample pc, apportioned values), in canonical order."""
        cache: dict[int, tuple[Step, ...]] = {}
        for f, pc, row in zip(self.point_frame.tolist(), self.point_pc.tolist(), self.point_values, strict=True):
            p = cache.get(f)
            if p is None:
                p = cache[f] = self.path(f)
            yield p, pc, row

    def children(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in self.frames]
        for i, f in enumerate(self.frames[1:], start=1):
            out[f.parent].append(i)
        return out

    def exclusive(self) -> np.ndarray:
        """Per frame, the sum of its own points (frames x metrics)."""
        out = np.zeros((len(self.frames), self.n_metrics))
        np.add.at(out, self.point_frame, self.point_values)
        return out

    def inclusive(self) -> np.ndarray:
        """Per frame, the sum of the points in its subtree (frames x metrics)."""
        out = self.exclusive()
        for i in range(len(self.frames) - 1, 0, -1):  # pre-order: children after parents
            out[self.frames[i].parent] += out[i]
        return out
