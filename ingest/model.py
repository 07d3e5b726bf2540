"""The vendor-neutral record model every GPU-record reader fills and the one writer consumes.

A :class:`GpuTrace` is one source's records after normalization: times are int64
ns in one clock domain per source, every id is namespaced by the OS process id
(all vendors' correlation, context and stream ids are per process), and enums are
already translated to the hpcrun categories below. Per-record data lives in
numpy structured arrays (one row per API call, GPU operation or PC-sample
record), so readers fill whole columns from SQL/CSV results and the writer works
on columns; only names, call stacks and code objects are Python objects.
"""

from __future__ import annotations

from dataclasses import field

import numpy as np

from hpcsa.core.binfmt import field_names
from hpcsa.core.dataclass import dataclass
from hpcsa.core.digests import md5
from hpcsa.core.interning import intern

# -- operation kinds and their hpcrun sub-categories ---------------------------------------------------

KERNEL, MEMCPY, MEMSET, SYNC, ALLOC, FREE = 1, 2, 3, 4, 5, 6
KIND_NAMES = {KERNEL: "kernel", MEMCPY: "memcpy", MEMSET: "memset", SYNC: "sync", ALLOC: "alloc",
              FREE: "free"}

#: Copy directions, in the order of hpcrun's ``GXCOPY:*`` metrics (and CUPTI's copyKind 0..10).
COPY_DIRECTIONS = ("UNK", "H2D", "D2H", "H2A", "A2H", "A2A", "A2D", "D2A", "D2D", "H2H", "P2P")
CP_UNK, CP_H2D, CP_D2H, CP_D2D, CP_H2H, CP_P2P = 0, 1, 2, 8, 9, 10
#: Unified-memory (implicit) copy directions, hpcrun's ``GICOPY:*``.
IMPLICIT_DIRECTIONS = ("UNK", "H2D", "D2H", "D2D")
#: Memory kinds, in the order of hpcrun's ``GMEM:*`` / ``GMSET:*`` metrics (CUPTI's memory kind 0..7).
MEMORY_KINDS = ("UNK", "PAG", "PIN", "DEV", "ARY", "MAN", "DST", "MST")
MK_UNK, MK_PAG, MK_PIN, MK_DEV = 0, 1, 2, 3
#: Synchronization kinds, hpcrun's ``GSYNC:*`` (CUPTI's sync type 0..4).
SYNC_KINDS = ("UNK", "EVT", "STRE", "STR", "CTX")
SY_UNK, SY_EVT, SY_STRE, SY_STR, SY_CTX = 0, 1, 2, 3, 4

#: hpcrun's stall classes (``GINS:STL_*``), see :mod:`hpcsa.ingest.stalls` for the vendor mapping.
STALL_CLASSES = ("NONE", "IFET", "IDEP", "GMEM", "TMEM", "SYNC", "CMEM", "PIPE", "MTHR", "NSEL", "OTHR", "SLP")
ST_NONE, ST_OTHR = 0, 10
NO_STALL_INFO = 255  # a sample without a reason (e.g. AMD host-trap): counts in GINS only

NONE = -1  # "unknown" for signed id columns

# -- record layouts (in memory, native byte order) -----------------------------------------------------

API_DTYPE = np.dtype([
    ("process", "i8"), ("thread", "i8"), ("name", "i4"), ("start", "i8"), ("end", "i8"),
    ("corr", "u8"), ("stack", "i8"),
])
"""One host API call: the launch point of GPU work (``stack`` indexes ``GpuTrace.stacks``, -1 none)."""

OP_DTYPE = np.dtype([
    ("kind", "u1"), ("process", "i8"), ("thread", "i8"), ("device", "i8"), ("context", "i8"),
    ("stream", "i8"), ("corr", "u8"), ("start", "i8"), ("end", "i8"), ("count", "i8"),
    ("name", "i4"), ("bytes", "u8"), ("sub", "u1"), ("implicit", "u1"),
    ("blocks", "i8"), ("block_threads", "i8"), ("regs", "i8"), ("smem_static", "i8"),
    ("smem_dynamic", "i8"), ("local_total", "i8"), ("code", "i8"), ("api", "i8"),
    ("graph", "i8"), ("graph_node", "i8"), ("launch_stack", "i8"),
])
"""One GPU operation. ``thread`` is the launching thread when the record itself names it (-1 otherwise);
``sub`` is the copy direction / memory kind / sync kind; ``blocks`` is the grid in blocks (work-groups),
``block_threads`` the threads (work-items) per block; ``code`` a kernel symbol (index into
``GpuTrace.symbols``, -1 none); ``api`` is filled by :func:`join_launches`. ``count`` is 1 except for
summary sources (e.g. a unitrace device-timing table) where one row stands for several operations.
``graph`` and ``graph_node`` name the CUDA/HIP graph and node an operation ran as, where the records say
(-1 otherwise); ``launch_stack`` (index into ``GpuTrace.stacks``) is the operation's own launch context
where it differs from its API call's: a graph's operation gets the launch, a ``<graph>`` frame and the
context that created its node (filled by :mod:`hpcsa.ingest.graphs`)."""

SAMPLE_DTYPE = np.dtype([
    ("process", "i8"), ("corr", "u8"), ("symbol", "i8"), ("pc", "u8"), ("stall", "u1"),
    ("samples", "u8"), ("stall_samples", "u8"), ("op", "i8"),
    ("latency", "u8"), ("stall_cycles", "u8"), ("idle_cycles", "u8"),
])
"""One aggregated PC-sample record: ``symbol`` indexes ``GpuTrace.symbols``, ``pc`` is the offset from
that symbol's entry, ``stall`` a class index of :data:`STALL_CLASSES` (or ``NO_STALL_INFO``);
``samples`` counts all samples and ``stall_samples`` those stalled for that reason. ``op`` (the kernel
launch, index into ops) is filled by :func:`join_launches`. Instruction traces (AMD thread trace) count
every execution instead of sampling: ``samples`` is the hit count and ``latency``, ``stall_cycles`` and
``idle_cycles`` the cycles the instruction took, stalled and idled (0 for PC samples)."""

RANGE_DTYPE = np.dtype([("process", "i8"), ("thread", "i8"), ("start", "i8"), ("end", "i8"), ("name", "i4")])
"""One user range (NVTX push/pop or start/end, roctx, PyTorch ``record_function``): ``thread`` -1 for a
range of the whole process (a start/end range ended on another thread); ``name`` indexes strings."""

SAMPLE_INFO_DTYPE = np.dtype([("process", "i8"), ("corr", "u8"), ("total", "u8"), ("dropped", "u8"),
                              ("period", "u8")])
"""Per-launch PC-sampling summary (CUPTI's PC_SAMPLING_RECORD_INFO); period in GPU cycles."""


def empty(dtype: np.dtype, n: int = 0) -> np.ndarray:
    """A table of ``n`` rows with every "unknown" column at -1 and counts at 1."""
    arr = np.zeros(n, dtype)
    names = field_names(dtype)
    for name in names:
        if dtype[name].kind == "i" and name not in ("start", "end", "bytes", "blocks", "block_threads",
                                                    "regs", "smem_static", "smem_dynamic", "local_total"):
            arr[name] = NONE
    if "count" in names:
        arr["count"] = 1
    return arr


def table(dtype: np.dtype, n: int, **columns: object) -> np.ndarray:
    arr = empty(dtype, n)
    for name, value in columns.items():
        arr[name] = value
    return arr


def distinct_rows(*columns: np.ndarray) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """The distinct rows of the given columns (as Python tuples) and each row's group index."""
    if not len(columns[0]):
        return [], np.zeros(0, np.int64)
    stacked = np.stack([np.asarray(c).astype(np.int64) for c in columns], axis=1)
    uniq, inv = np.unique(stacked, axis=0, return_inverse=True)
    return [tuple(r) for r in uniq.tolist()], inv.reshape(-1)


def aggregate_samples(smp: np.ndarray) -> np.ndarray:
    """Individual PC samples (:data:`SAMPLE_DTYPE`) -> counts per (process, launch, symbol, pc, stall class)."""
    key = np.stack([smp["process"], smp["corr"].astype(np.int64), smp["symbol"], smp["pc"].astype(np.int64),
                    smp["stall"].astype(np.int64)], axis=1)
    uniq, inv = np.unique(key, axis=0, return_inverse=True)
    inv = inv.reshape(-1)
    out = table(SAMPLE_DTYPE, len(uniq), process=uniq[:, 0], corr=uniq[:, 1], symbol=uniq[:, 2], pc=uniq[:, 3],
                stall=uniq[:, 4])
    out["samples"] = np.bincount(inv, weights=smp["samples"], minlength=len(uniq))
    out["stall_samples"] = np.bincount(inv, weights=smp["stall_samples"], minlength=len(uniq))
    return out


@dataclass(frozen=True)
class Frame:
    """One CPU frame of a call stack: its module path, instruction address (as recorded) and symbol."""

    module: str
    ip: int
    symbol: str


@dataclass
class CodeObject:
    """A GPU binary (cubin, HSA code object) the records refer to; ``data`` is None when not carried."""

    id: int
    kind: str  # "cubin", "hsaco", "spirv", "unknown"
    data: bytes | None = None
    crc: int | None = None
    uri: str = ""


@dataclass
class KernelSymbol:
    """A GPU function: name (mangled where known), its code object and entry offset in it (if known)."""

    name: str
    code_object: int = NONE
    entry: int | None = None
    function_index: int | None = None


@dataclass
class ProcessInfo:
    pid: int
    name: str = ""
    path: str = ""
    host: int = 0  # hpcrun's host id (32 bits)
    rank: int | None = None  # the MPI rank (as the records name it; :mod:`hpcsa.ingest.ranks` completes it)
    world: int | None = None  # the number of ranks of the run, where the records name it
    rank_hint: int | None = None  # a rank the records imply (a launcher's variable), used for several processes
    hostname: str = ""


@dataclass
class GraphCapture:
    """One CUDA/HIP stream capture: the calls that created the graph's nodes, in capture order (indices into
    ``GpuTrace.apis``), the kind of operation each made (``KERNEL``, ...) and its kernel's name where
    the records give it ("" where not)."""

    process: int
    thread: int
    calls: list[int] = field(default_factory=list)
    kinds: list[int] = field(default_factory=list)
    names: list[str] = field(default_factory=list)


@dataclass
class GpuTrace:
    """One source's records, normalized."""

    source: str  # e.g. "nsys-sqlite 3.13.2"
    path: str
    clock: str  # how times were normalized, for the summary
    apis: np.ndarray = field(default_factory=lambda: empty(API_DTYPE))
    ops: np.ndarray = field(default_factory=lambda: empty(OP_DTYPE))
    samples: np.ndarray = field(default_factory=lambda: empty(SAMPLE_DTYPE))
    sample_info: np.ndarray = field(default_factory=lambda: empty(SAMPLE_INFO_DTYPE))
    strings: list[str] = field(default_factory=list)
    stacks: list[tuple[Frame, ...]] = field(default_factory=list)  # outermost frame first
    symbols: list[KernelSymbol] = field(default_factory=list)
    code_objects: dict[int, CodeObject] = field(default_factory=dict)
    processes: dict[int, ProcessInfo] = field(default_factory=dict)
    api_domain: str = "gpu"  # module name for API calls without a call stack, e.g. "CUDA"
    devices: dict[tuple[int, int], dict[str, float]] = field(default_factory=dict)  # (pid, device) -> props
    ranges: np.ndarray = field(default_factory=lambda: empty(RANGE_DTYPE))
    range_domain: str = "ranges"  # module name of range frames, e.g. "NVTX"
    utc: bool = False  # times are ns since the Unix epoch (the records tie their clock to UTC)
    captures: list[GraphCapture] = field(default_factory=list)
    graph_nodes: dict[tuple[int, int], int] = field(default_factory=dict)  # (pid, node) -> creating API call
    graph_origin: dict[tuple[int, int], int] = field(default_factory=dict)  # (pid, node) -> node it was cloned from
    _index: dict[str, int] = field(default_factory=dict, repr=False)

    def intern(self, text: str) -> int:
        """The id of ``text`` in ``strings`` (added if new)."""
        return intern(self.strings, self._index, text)

    def intern_many(self, texts: list[str] | np.ndarray) -> np.ndarray:
        """Ids for many strings, interning each distinct one once."""
        uniq, inverse = np.unique(np.asarray(texts, dtype=object).astype(str), return_inverse=True)
        ids = np.array([self.intern(str(t)) for t in uniq], dtype=np.int32)
        return ids[inverse] if len(uniq) else np.zeros(0, np.int32)

    def symbol(self, sym: KernelSymbol) -> int:
        self.symbols.append(sym)
        return len(self.symbols) - 1


#: Module of a stack frame that stands for the API call itself (the writer places it like a call without
#: a stack); used where a stack gets frames above the call but the source has no frame for the call.
API_FRAME = "<api call>"


def named_address(name: str, span: int = 16) -> int:
    """A stable address for a named frame of a synthetic module (the same name, the same address)."""
    return span * (1 + int(md5(name.encode("utf-8", "surrogateescape")).hexdigest()[:12], 16))


def pair_keys(a_hi: np.ndarray, a_lo: np.ndarray, b_hi: np.ndarray, b_lo: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """Dense int keys for two lists of (hi, lo) pairs, equal exactly where the pairs are equal."""
    hi = np.concatenate([np.asarray(a_hi, np.int64), np.asarray(b_hi, np.int64)])
    lo = np.concatenate([np.asarray(a_lo, np.uint64), np.asarray(b_lo, np.uint64)])
    both = np.empty(len(hi), dtype=[("hi", "i8"), ("lo", "u8")])
    both["hi"], both["lo"] = hi, lo
    _, inv = np.unique(both, return_inverse=True)
    return inv[: len(a_hi)], inv[len(a_hi):]


def lookup(keys: np.ndarray, table_keys: np.ndarray) -> np.ndarray:
    """Index of each key in ``table_keys`` (first occurrence), -1 where absent."""
    if not len(table_keys):
        return np.full(len(keys), -1, np.int64)
    order = np.argsort(table_keys, kind="stable")
    sorted_keys = table_keys[order]
    pos = np.searchsorted(sorted_keys, keys)
    pos = np.minimum(pos, len(sorted_keys) - 1)
    found = sorted_keys[pos] == keys
    return np.where(found, order[pos], -1).astype(np.int64)


def join_launches(trace: GpuTrace) -> None:
    """Fill ``ops['api']`` (the launching API call, by process and correlation id) and ``samples['op']``.

    Correlation id 0 means "no API call" in every vendor's records (e.g. unified-memory migrations);
    those ops keep ``api = -1``.
    """
    ops, apis = trace.ops, trace.apis
    if len(ops):
        k_ops, k_api = pair_keys(ops["process"], ops["corr"], apis["process"], apis["corr"])
        api = lookup(k_ops, k_api)
        api[ops["corr"] == 0] = -1
        ops["api"] = api
    smp = trace.samples
    if len(smp):
        smp["op"] = -1
        kernels = np.flatnonzero(ops["kind"] == KERNEL)
        k_s, k_k = pair_keys(smp["process"], smp["corr"], ops["process"][kernels], ops["corr"][kernels])
        hit = lookup(k_s, k_k)
        if not len(kernels):
            return
        smp["op"] = np.where((hit >= 0) & (smp["corr"] != 0), kernels[np.maximum(hit, 0)], -1)
