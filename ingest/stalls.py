"""Vendor stall reasons mapped onto hpcrun's stall classes (``GINS:STL_*``).

hpcrun's classes come from CUPTI's legacy enum; every other vendor's reasons are
mapped to the class with the same cause. The table is data so the README can
show it (``hpcsa ingest --stall-table``) and the tests can check it is total.
"""

from __future__ import annotations

from hpcsa.ingest.model import STALL_CLASSES

#: (vendor, reason as the source names it) -> hpcrun class (a STALL_CLASSES name).
STALL_TABLE: dict[tuple[str, str], str] = {
    # CUPTI legacy activity API (CUpti_ActivityPCSamplingStallReason), as in nvprof files.
    ("cupti-legacy", "INVALID"): "OTHR",
    ("cupti-legacy", "NONE"): "NONE",
    ("cupti-legacy", "INST_FETCH"): "IFET",
    ("cupti-legacy", "EXEC_DEPENDENCY"): "IDEP",
    ("cupti-legacy", "MEMORY_DEPENDENCY"): "GMEM",
    ("cupti-legacy", "TEXTURE"): "TMEM",
    ("cupti-legacy", "SYNC"): "SYNC",
    ("cupti-legacy", "CONSTANT_MEMORY_DEPENDENCY"): "CMEM",
    ("cupti-legacy", "PIPE_BUSY"): "PIPE",
    ("cupti-legacy", "MEMORY_THROTTLE"): "MTHR",
    ("cupti-legacy", "NOT_SELECTED"): "NSEL",
    ("cupti-legacy", "OTHER"): "OTHR",
    ("cupti-legacy", "SLEEPING"): "SLP",
    # CUPTI PC Sampling API (CUDA 11.3+): names smsp__pcsamp_warps_issue_stalled_<reason>[_not_issued].
    ("cupti", "selected"): "NONE",
    ("cupti", "branch_resolving"): "IFET",
    ("cupti", "no_instructions"): "IFET",
    ("cupti", "imc_miss"): "CMEM",
    ("cupti", "wait"): "IDEP",
    ("cupti", "short_scoreboard"): "IDEP",
    ("cupti", "long_scoreboard"): "GMEM",
    ("cupti", "drain"): "GMEM",
    ("cupti", "tex_throttle"): "TMEM",
    ("cupti", "barrier"): "SYNC",
    ("cupti", "membar"): "SYNC",
    ("cupti", "math_pipe_throttle"): "PIPE",
    ("cupti", "dispatch_stall"): "PIPE",
    ("cupti", "lg_throttle"): "MTHR",
    ("cupti", "mio_throttle"): "MTHR",
    ("cupti", "not_selected"): "NSEL",
    ("cupti", "misc"): "OTHR",
    ("cupti", "sleeping"): "SLP",
    # AMD rocprofiler-sdk stochastic sampling (ROCPROFILER_PC_SAMPLING_INSTRUCTION_NOT_ISSUED_REASON_*).
    ("amd", "NONE"): "NONE",
    ("amd", "NO_INSTRUCTION_AVAILABLE"): "IFET",
    ("amd", "ALU_DEPENDENCY"): "IDEP",
    ("amd", "WAITCNT"): "GMEM",
    ("amd", "INTERNAL_INSTRUCTION"): "OTHR",
    ("amd", "BARRIER_WAIT"): "SYNC",
    ("amd", "ARBITER_NOT_WIN"): "NSEL",
    ("amd", "ARBITER_WIN_EX_STALL"): "PIPE",
    ("amd", "OTHER_WAIT"): "OTHR",
    ("amd", "SLEEP_WAIT"): "SLP",
    # Intel EU stall sampling (unitrace --stall-sampling / PTI).
    ("intel", "Active"): "NONE",
    ("intel", "ControlStall"): "IFET",
    ("intel", "InstrFetchStall"): "IFET",
    ("intel", "DistStall"): "IDEP",
    ("intel", "SbidStall"): "GMEM",
    ("intel", "SendStall"): "GMEM",
    ("intel", "PipeStall"): "PIPE",
    ("intel", "SyncStall"): "SYNC",
    ("intel", "OtherStall"): "OTHR",
}

#: CUPTI legacy enum values (CUpti_ActivityPCSamplingStallReason) in order.
CUPTI_LEGACY_REASONS = ("INVALID", "NONE", "INST_FETCH", "EXEC_DEPENDENCY", "MEMORY_DEPENDENCY", "TEXTURE",
                        "SYNC", "CONSTANT_MEMORY_DEPENDENCY", "PIPE_BUSY", "MEMORY_THROTTLE", "NOT_SELECTED",
                        "OTHER", "SLEEPING")



def stall_class(vendor: str, reason: str) -> int:
    """The hpcrun class index (into STALL_CLASSES) of a vendor reason, named as in the table (each reader
    strips its tool's spelling around the name); unknown reasons count as OTHR."""
    return STALL_CLASSES.index(STALL_TABLE.get((vendor, reason), "OTHR"))


def markdown_table() -> str:
    """The mapping as a markdown table (for the README)."""
    rows = ["| vendor | reason | hpcrun metric |", "|---|---|---|"]
    rows += [f"| {v} | `{r}` | `GINS:STL_{c}` |" for (v, r), c in STALL_TABLE.items()]
    return "\n".join(rows) + "\n"
