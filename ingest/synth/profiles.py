"""One profile of a synthetic measurement (:mod:`hpcsa.ingest.synth.program`): a CPU thread's or a GPU stream's
``.hpcrun`` and ``.hpctrace``, taken from the program's template tree with the profile's own random stream."""

from __future__ import annotations

import numpy as np

from hpcsa.core.dataclass import dataclass
from hpcsa.formats.measurement.hpcrun import (
    CCT_NODE,
    ID_ELEMENT,
    UNWOUND,
    HpcrunProfile,
    default_id_names,
    pack_values,
)
from hpcsa.formats.measurement.hpcrun import GPUCONTEXT_ELEMENT as GPUCONTEXT
from hpcsa.formats.measurement.hpcrun import GPUSTREAM_ELEMENT as GPUSTREAM
from hpcsa.formats.measurement.hpcrun import NODE_ELEMENT as NODE
from hpcsa.formats.measurement.hpcrun import RANK_ELEMENT as RANK
from hpcsa.formats.measurement.hpcrun import THREAD_ELEMENT as THREAD
from hpcsa.formats.measurement.hpctrace import FLAG_CALL_TRACE, HpctraceFile, make_records
from hpcsa.ingest.gpumetrics import metric_ids
from hpcsa.ingest.synth.program import (
    COPYIN_OP,
    COPYOUT_OP,
    FIRST_STREAM_THREAD,
    KERNEL_OP,
    MAIN,
    NO_ACTIVITY,
    SAMPLE,
    SAMPLE_PERIOD_NS,
    START_NS,
    SYNC_OP,
    WORKER,
    Program,
    SynthSpec,
)


@dataclass
class Written:
    """What one profile holds (the generator's summary and density figures)."""

    nodes: int
    valued: int          # nodes with at least one value
    values: int
    metrics: int
    bytes: int


def _rank_ops(prog: Program, rank: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The GPU operations a rank ran: (op rows, launches, total seconds); the same for its thread and streams."""
    if not len(prog.ops):
        return np.zeros(0, np.int64), np.zeros(0), np.zeros(0)
    rng = np.random.default_rng([prog.spec.seed, 0x6B7, rank])
    chosen = np.flatnonzero(rng.random(len(prog.ops)) < min(0.7, prog.spec.gpu_ops / len(prog.ops)))
    need = min(len(prog.ops), max(1, prog.spec.streams_per_rank))  # a stream exists because it ran something
    if len(chosen) < need:
        rest = np.setdiff1d(np.arange(len(prog.ops)), chosen)
        chosen = np.sort(np.concatenate([chosen, rng.choice(rest, size=need - len(chosen), replace=False)]))
    launches = prog.ops["launches"][chosen] * rng.lognormal(0.0, 0.2, len(chosen))
    launches = np.maximum(1, np.rint(launches))
    seconds = launches * prog.ops["duration"][chosen] * rng.lognormal(0.0, 0.1, len(chosen))
    return chosen, launches, seconds


def _gpu_values(prog: Program, chosen: np.ndarray, launches: np.ndarray, seconds: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """hpcrun's GPU metrics of a rank's operations at their value nodes: (node, metric, value)."""
    mid = metric_ids(prog.metrics)
    ops = prog.ops[chosen]
    kind = ops["kind"]
    rows: list[tuple[np.ndarray, int, np.ndarray]] = []

    def add(mask: np.ndarray, metric: str, value: np.ndarray) -> None:
        rows.append((ops["value_node"][mask], mid[metric], value[mask]))

    every = np.ones(len(ops), bool)
    add(every, "GPUOP (sec)", seconds)
    k = kind == KERNEL_OP
    add(k, "GKER (sec)", seconds)
    add(k, "GKER:COUNT", launches)
    kern = np.maximum(ops["kernel"], 0)
    attrs = {"GKER:STMEM_ACUMU (B)": 1024 * (kern % 5), "GKER:LMEM_ACUMU (B)": 256 * (kern % 3),
             "GKER:FGP_ACT_ACUMU": 16 + 8 * (kern % 6), "GKER:FGP_MAX_ACUMU": np.full(len(kern), 64),
             "GKER:THR_REG_ACUMU": 32 + 8 * (kern % 7), "GKER:BLK_THR_ACUMU": 128 * (1 + kern % 4),
             "GKER:BLK_SM_ACUMU": 1024 * (kern % 5), "GKER:BLKS_ACUMU": 80 * (1 + kern % 9)}
    for name, per_launch in attrs.items():
        add(k, name, launches * per_launch)
    for kind_code, direction in ((COPYIN_OP, "H2D"), (COPYOUT_OP, "D2H")):
        c = kind == kind_code
        add(c, "GXCOPY (sec)", seconds)
        add(c, f"GXCOPY:{direction} (B)", launches * ops["bytes"])
        add(c, "GXCOPY:COUNT", launches)
    s = kind == SYNC_OP
    add(s, "GSYNC (sec)", seconds)
    add(s, "GSYNC:STR (sec)", seconds)
    add(s, "GSYNC:COUNT", launches)
    nodes = np.concatenate([r[0] for r in rows])
    metrics = np.concatenate([np.full(len(r[0]), r[1]) for r in rows])
    return nodes, metrics, np.concatenate([r[2] for r in rows])


def _header(prog: Program, rank: int, thread: int, host: int, times: np.ndarray) -> dict[str, str]:
    spec = prog.spec
    return {"program-name": spec.program, "program-path": prog.loadmap[0].path, "env-path": "", "job-id": "",
            "mpi-rank": str(rank), "thread-id": str(thread), "host-id": f"{host:08x}",
            "process-id": str(1000 + rank), "trace-min-time": str(int(times.min()) if len(times) else 0),
            "trace-max-time": str(int(times.max()) if len(times) else 0), "trace-disorder": "0"}


def _id_tuple(host: int, rank: int, tail: list[tuple[int, int]]) -> np.ndarray:
    elems = [(NODE, host, 0), (RANK, rank, rank)] + [(k, v, v) for k, v in tail]
    out = np.zeros(len(elems), ID_ELEMENT)
    for i, e in enumerate(elems):
        out[i] = e
    return out


def host_of(spec: SynthSpec, rank: int) -> int:
    return 0x5E000000 + rank // max(1, spec.ranks_per_node)


def thread_profile(prog: Program, rank: int, thread: int) -> tuple[HpcrunProfile, HpctraceFile]:
    """A CPU thread's profile and trace (its main thread also has the rank's GPU operations)."""
    spec = prog.spec
    rng = np.random.default_rng([spec.seed, rank, thread])
    role = MAIN if thread == 0 else WORKER
    leaves = np.flatnonzero((prog.kind == SAMPLE) & (prog.role == role))
    w = prog.weight[leaves] * rng.lognormal(0.0, 0.5, len(leaves))  # each thread its own hot spots
    m = min(len(leaves), max(1, int(spec.leaves * rng.uniform(0.6, 1.0))))
    active = rng.choice(leaves, size=m, replace=False, p=w / w.sum()) if m else leaves[:0]
    wa = prog.weight[active]
    # The trace: samples in runs of one context (mean 3), one per period, with jitter.
    n = spec.samples
    runs = rng.geometric(1 / 3, size=n)
    n_runs = int(np.searchsorted(np.cumsum(runs), n)) + 1
    seq = np.repeat(rng.choice(active, size=n_runs, p=wa / wa.sum()), runs[:n_runs])[:n] if m else active
    start = START_NS + rank * 1_000_003
    times = start + np.arange(len(seq), dtype=np.int64) * SAMPLE_PERIOD_NS + rng.integers(0, 1_000_000, len(seq))
    sampled, counts = np.unique(seq, return_counts=True)
    nodes = [sampled]
    cpu_metric = len(prog.metrics) - 1
    v_node, v_metric, v_value = [sampled], [np.full(len(sampled), cpu_metric)], [counts * SAMPLE_PERIOD_NS / 1e9]
    if spec.gpu and role == MAIN and len(prog.ops):
        chosen, launches, seconds = _rank_ops(prog, rank)
        gn, gm, gv = _gpu_values(prog, chosen, launches, seconds)
        v_node.append(gn)
        v_metric.append(gm)
        v_value.append(gv)
        nodes += [gn, prog.ops["trace_node"][chosen]]
    cct_nodes = prog.closure(np.concatenate(nodes))
    host = host_of(spec, rank)
    prof = _profile(prog, cct_nodes, np.concatenate(v_node), np.concatenate(v_metric), np.concatenate(v_value),
                    _header(prog, rank, thread, host, times), _id_tuple(host, rank, [(THREAD, thread)]))
    trace = HpctraceFile(0, make_records(times.astype(np.uint64), (seq + 1).astype(np.uint32)))
    return prof, trace


def stream_profile(prog: Program, rank: int, stream: int) -> tuple[HpcrunProfile, HpctraceFile]:
    """A GPU stream: the call trace of the rank's operations assigned to it; no values (as hpcrun)."""
    spec = prog.spec
    rng = np.random.default_rng([spec.seed, rank, FIRST_STREAM_THREAD + stream])
    chosen, launches, seconds = _rank_ops(prog, rank)
    mine = np.flatnonzero(np.arange(len(chosen)) % max(1, spec.streams_per_rank) == stream)
    noact = int(np.flatnonzero(prog.kind == NO_ACTIVITY)[0])
    if len(mine):
        events = max(1, spec.samples // 2)
        pick = rng.choice(mine, size=events, p=launches[mine] / launches[mine].sum())
        dur = (seconds[pick] / launches[pick] * 1e9 * rng.lognormal(0.0, 0.2, events)).astype(np.int64) + 1
        gap = rng.integers(1_000, 200_000, events)
        begin = START_NS + rank * 1_000_003 + np.cumsum(gap + dur) - dur
        leaf = prog.ops["trace_node"][chosen[pick]]
        times = np.empty(2 * events, np.int64)
        ctx = np.empty(2 * events, np.int64)
        times[0::2], times[1::2] = begin, begin + dur
        ctx[0::2], ctx[1::2] = leaf, noact
    else:
        times = ctx = np.zeros(0, np.int64)
    cct_nodes = prog.closure(np.concatenate([ctx, [noact]]).astype(np.int64))
    host = host_of(spec, rank)
    z = np.zeros(0, np.int64)
    prof = _profile(prog, cct_nodes, z, z, np.zeros(0), _header(prog, rank, FIRST_STREAM_THREAD + stream, host, times),
                    _id_tuple(host, rank, [(GPUCONTEXT, 1), (GPUSTREAM, stream)]))
    return prof, HpctraceFile(FLAG_CALL_TRACE, make_records(times.astype(np.uint64), (ctx + 1).astype(np.uint32)))


def _profile(prog: Program, cct_nodes: np.ndarray, node: np.ndarray, metric: np.ndarray, value: np.ndarray,
             header: dict[str, str], id_tuple: np.ndarray) -> HpcrunProfile:
    par = prog.parent[cct_nodes]
    cct = np.zeros(len(cct_nodes), CCT_NODE)
    cct["id"], cct["parent"] = cct_nodes + 1, np.where(par >= 0, par + 1, 0)
    cct["lm_id"], cct["lm_ip"], cct["flags"] = prog.lm[cct_nodes], prog.ip[cct_nodes], UNWOUND
    values, index = pack_values(node + 1, metric, value, prog.metrics, cct["id"])
    return HpcrunProfile(header=header, loadmap=list(prog.loadmap), cct=cct, metrics=list(prog.metrics),
                         id_names=default_id_names(), id_tuple=id_tuple, values=values, index=index)
