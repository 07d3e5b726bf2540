"""GPU calling-context reconstruction from flat PC samples.

The approximate GPU calling-context trees of HPCToolkit's hpcprof, described in
"Tools for Top-down Performance Analysis of GPU-Accelerated Applications"
(Zhou, Krentel and Mellor-Crummey, ICS 2020) and "Measurement and Analysis of
GPU-accelerated Applications with HPCToolkit" (Zhou et al., Parallel Computing,
2021): the static call graph of the GPU binary, edge weights from the samples at
call instructions, recursion collapsed, the DAG split into a tree.

The core (``model.py``, ``reconstruct.py``, ``scc.py``) takes plain records
and numpy arrays, knows no file format and does no I/O; ``fromstruct.py``
(structure files) and ``launches.py``/``cmd.py`` (measurements) adapt the
readers' models to it. Build a :class:`.CallGraph` once per GPU binary, then
call :func:`reconstruct` per launch context (and :func:`.reconstruct_unlaunched`
for samples that carry no launch). See ``reconstruct.py`` for the algorithm and
where it differs from HPCToolkit by design, ``model.py`` for the data model.
"""

from hpcsa.gpucct.model import (
    CallGraph,
    CallSite,
    DeviceFunction,
    Frame,
    PcSamples,
    Reconstruction,
    ReconstructionStats,
    Step,
    StepKind,
    recursion_name,
)
from hpcsa.gpucct.reconstruct import DEFAULT_MAX_POINTS, aggregate_by_pc, reconstruct, reconstruct_unlaunched

__all__ = [
    "CallGraph", "CallSite", "DeviceFunction", "Frame", "PcSamples", "Reconstruction", "ReconstructionStats",
    "Step", "StepKind", "recursion_name", "DEFAULT_MAX_POINTS", "aggregate_by_pc", "reconstruct",
    "reconstruct_unlaunched",
]
