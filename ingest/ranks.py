"""The MPI rank of every process of a multi-process measurement.

A measurement made of several processes (one file per rank, several processes in one file, or both) gets
one rank per process, from the best source there is:

1. the records themselves: PyTorch's ``distributedInfo.rank`` (Kineto), the launcher's rank variable in the
   environment Nsight Systems recorded for a single-process report (``OMPI_COMM_WORLD_RANK``, ``PMI_RANK``,
   ``PMIX_RANK``, ``SLURM_PROCID``, ``MV2_COMM_WORLD_RANK``, torchrun's ``RANK``);
2. the file names, as launchers name per-rank files: a number after ``rank``/``worker``/``proc``/``task``
   (``a100_rank0_of16.json``, ``worker3_step_12.json``), or the one number that differs between names that
   are otherwise the same (nsys ``-o report.%q{OMPI_COMM_WORLD_RANK}`` gives ``report.0.sqlite``,
   ``report.1.sqlite``, ...);
3. the order given (files in the order named, a directory's files in name order, processes of one file by
   process id), with a note saying so.

A measurement of one process is left as its reader made it. Ranks the records give are never changed, even
when two processes claim the same one (two windows of one process, recorded apart, are one rank).
"""

from __future__ import annotations

import os
import re

import numpy as np

from hpcsa.ingest import model as M

#: Environment variables launchers set to the process's rank (Open MPI, MPICH/PMI, PMIx, Slurm, MVAPICH,
#: torchrun), in the order they are trusted.
RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID", "MV2_COMM_WORLD_RANK", "RANK")
WORLD_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "MV2_COMM_WORLD_SIZE", "WORLD_SIZE")
_KEYWORD = re.compile(r"(?:rank|worker|proc|process|task)[-_.]?(\d+)", re.IGNORECASE)


def rank_from_environment(variables: dict[str, str]) -> tuple[int | None, int | None]:
    """(rank, world size) from a process environment's launcher variables (None where absent)."""

    def first(names: tuple[str, ...]) -> int | None:
        for name in names:
            value = variables.get(name, "").strip()
            if value.isdigit():
                return int(value)
        return None

    return first(RANK_VARIABLES), first(WORLD_VARIABLES)


def written_pids(tr: M.GpuTrace) -> list[int]:
    """The processes of a trace that become profiles (as :func:`hpcsa.ingest.measdir.write_measurement` picks
    them)."""
    pids = sorted(set(tr.ops["process"].tolist()) | set(tr.samples["process"].tolist()))
    if pids:
        return pids
    return sorted(set(tr.apis["process"].tolist()) | set(tr.ranges["process"].tolist()))


def ranks_from_names(names: list[str]) -> list[int] | None:
    """Per file name, the rank it names (a keyword number, else the one number that differs between the
    names); None when the names do not give distinct ranks."""
    keyword = [_KEYWORD.findall(n) for n in names]
    if all(len(k) == 1 for k in keyword):
        ranks = [int(k[0]) for k in keyword]
        if len(set(ranks)) == len(ranks):
            return ranks
    parts = [re.split(r"(\d+)", n) for n in names]
    if len({len(p) for p in parts}) != 1 or len(names) < 2:
        return None
    fixed = [i for i in range(0, len(parts[0]), 2)]
    if any(len({p[i] for p in parts}) != 1 for i in fixed):
        return None
    varying = [i for i in range(1, len(parts[0]), 2) if len({int(p[i]) for p in parts}) > 1]
    if len(varying) != 1:
        return None
    ranks = [int(p[varying[0]]) for p in parts]
    return ranks if len(set(ranks)) == len(ranks) else None


def assign_ranks(traces: list[M.GpuTrace]) -> str:
    """Give the processes of a multi-process measurement their ranks; return how they were found ("" for a
    measurement of one process). File names and the order given number files of one process each; the
    processes of one file that the records do not rank stay unranked (one recording's processes are not
    known to be ranks of one run)."""
    units = [(tr, pid) for tr in traces for pid in written_pids(tr)]
    if len(units) < 2:
        return ""
    infos = []
    for tr, pid in units:
        info = tr.processes.get(pid)
        if info is None:
            info = tr.processes[pid] = M.ProcessInfo(pid)
        infos.append(info)
    for info in infos:
        if info.rank is None and info.rank_hint is not None:
            info.rank = info.rank_hint
    missing = [i for i, info in enumerate(infos) if info.rank is None]
    if not missing:
        return "from the records"
    per_trace: dict[int, list[int]] = {}
    for i, (tr, _) in enumerate(units):
        per_trace.setdefault(id(tr), []).append(i)
    single = [i for i in missing if len(per_trace[id(units[i][0])]) == 1]  # files of one process
    unranked = len(missing) - len(single)
    taken = {info.rank for info in infos if info.rank is not None}
    how = "from the records"
    if len(single) > 1 or (single and taken):
        names = [os.path.basename(units[i][0].path.rsplit(":", 1)[-1]) for i in single]
        from_names = ranks_from_names(names) if len(single) > 1 else None
        if from_names is not None and not taken & set(from_names):
            for i, rank in zip(single, from_names, strict=True):
                infos[i].rank = rank
            how = "from the file names" if not taken else "from the records and the file names"
        else:
            free = (r for r in range(len(units) + len(taken) + 1) if r not in taken)
            for i in single:
                infos[i].rank = next(free)
            how = ("numbered in the order given (neither the records nor the file names name them)" if not taken
                   else f"from the records, {len(single)} numbered in the order given")
    elif single:
        unranked += len(single)
    if unranked:
        ranked = len(units) - unranked
        how = (f"{unranked} process(es) the records give no rank" if not ranked
               else f"{how}; {unranked} process(es) the records give no rank")
    return how


def hosts(traces: list[M.GpuTrace]) -> int:
    """The number of distinct hosts of the measurement's processes."""
    found = {tr.processes[pid].host if pid in tr.processes else 0 for tr in traces for pid in written_pids(tr)}
    return max(len(found), 1)


def distinct_ranks(traces: list[M.GpuTrace]) -> int:
    ranks = [tr.processes[pid].rank for tr in traces for pid in written_pids(tr) if pid in tr.processes]
    return len({r for r in ranks if r is not None})


def unit_masks(tr: M.GpuTrace, pid: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows of a process in a trace's operations, API calls and ranges."""
    return tr.ops["process"] == pid, tr.apis["process"] == pid, tr.ranges["process"] == pid
