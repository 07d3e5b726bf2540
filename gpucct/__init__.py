"""GPU calling-context reconstruction from flat PC samples (seed 002; DESIGN.md §3 "gpucct").

The library is pure: build a :class:`CallGraph` once per GPU binary, then call
:func:`reconstruct` per launch context (and :func:`reconstruct_unlaunched` for
samples that carry no launch). See ``reconstruct.py`` for the algorithm and
where it differs from HPCToolkit by design, ``model.py`` for the data model.
"""

from .model import (
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
from .reconstruct import DEFAULT_MAX_POINTS, aggregate_by_pc, reconstruct, reconstruct_unlaunched

__all__ = [
    "CallGraph", "CallSite", "DeviceFunction", "Frame", "PcSamples", "Reconstruction", "ReconstructionStats",
    "Step", "StepKind", "recursion_name", "DEFAULT_MAX_POINTS", "aggregate_by_pc", "reconstruct",
    "reconstruct_unlaunched",
]
