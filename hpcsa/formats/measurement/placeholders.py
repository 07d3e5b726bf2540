"""hpcrun's placeholder contexts: the ``lm_ip`` codes of the measurement contract, declared once.

A placeholder is a CCT node whose load-module id is 0 and whose ``lm_ip`` is an
8-character ASCII shortcode packed big-endian (``"GPUKernl"``, see
:func:`~hpcsa.formats.measurement.hpcrun.placeholder_code`); HPCToolkit's hpcrun writes
them for the program and thread roots, the "no activity" trace context and
every GPU and OpenMP operation, and hpcprof shows them by the names below
(``<gpu kernel>``). Writers of measurements (ingest) and their readers (hpcsa
prof, gpucct) take the codes from here.
"""

from __future__ import annotations

from hpcsa.formats.measurement.hpcrun import placeholder_code

#: The shortcodes by role (the roles ingest's writers and prof's unification use).
SHORTCODES = {
    "primary": "^Primary", "partial": "^Partial", "unnormalized": "*Unnorm ", "noact": "NoActvty",
    "main": "| Main  ", "thread": "| Thread",
    "kernel": "GPUKernl", "trace": "GPUTrace", "copy": "GPUCp?2?", "copyin": "GPUCpH2D", "copyout": "GPUCpD2H",
    "alloc": "GPUAlloc", "delete": "GPUDelte", "memset": "GPUMemst", "sync": "GPU Sync",
}
#: The ``lm_ip`` of each role's placeholder.
PH = {role: placeholder_code(code) for role, code in SHORTCODES.items()}

PRIMARY, PARTIAL, UNNORMALIZED, NO_ACTIVITY = PH["primary"], PH["partial"], PH["unnormalized"], PH["noact"]
FENCE_MAIN, FENCE_THREAD = PH["main"], PH["thread"]
GPU_KERNEL = PH["kernel"]

#: hpcprof's name of each placeholder it names (code -> name); others are shown by their shortcode.
PLACEHOLDER_NAMES = {placeholder_code(code): name for code, name in (
    ("| Main  ", "<program root>"), ("| Thread", "<thread root>"),
    ("OMP Idle", "<omp idle>"), ("OMPOvrHd", "<omp overhead>"), ("OMPBarrW", "<omp barrier wait>"),
    ("OMPTaskW", "<omp task wait>"), ("OMPMtexW", "<omp mutex wait>"), ("OMP Work", "<omp work>"),
    ("OMPETask", "<omp expl task>"), ("OMPITask", "<omp impl task>"), ("OMTAlloc", "<omp tgt alloc>"),
    ("OMTDelte", "<omp tgt delete>"), ("OMTCpIn ", "<omp tgt copyin>"), ("OMTCpOut", "<omp tgt copyout>"),
    ("OMTKernl", "<omp tgt kernel>"), ("OMPUresv", "<omp region unresolved>"),
    ("GPUCp?2?", "<gpu copy>"), ("GPUCpH2D", "<gpu copyin>"), ("GPUCpD2H", "<gpu copyout>"),
    ("GPUAlloc", "<gpu alloc>"), ("GPUDelte", "<gpu delete>"), ("GPUKernl", "<gpu kernel>"),
    ("GPUMemst", "<gpu memset>"), ("GPU Sync", "<gpu sync>"), ("GPUTrace", "<gpu kernel>"))}


def placeholder_name(code: int) -> str:
    """hpcprof's name for a placeholder, or its shortcode with unprintable bytes escaped."""
    name = PLACEHOLDER_NAMES.get(int(code))
    if name is not None:
        return name
    out = []
    for shift in range(56, -8, -8):
        c = (int(code) >> shift) & 0xFF
        out.append(chr(c) if 32 <= c < 127 else f"\\{c:02x}")
    return "".join(out)
