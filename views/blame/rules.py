"""Which frames mean waiting, runtime overhead, GPU synchronisation or GPU launches (``hpcsa blame``).

The rules are data: :data:`DEFAULT_RULES` below, printed by ``hpcsa blame --show-rules`` and extended by a
user YAML file (``--rules FILE``) of the same shape::

    wait:              # idle: the thread waits (regular expressions over function names)
      - '^my_spin_wait$'
    gpu_sync:          # idle, and the wait is for a GPU
      - '^myGpuFence$'
    gpu_launch:        # working, in an API that feeds a GPU (launch, copy, memset)
      - '^myLaunch'
    overhead:          # working, in the OpenMP runtime's own code
      - '^__my_rt_'
    overhead_modules:  # every frame of these load modules is runtime code (unless it waits)
      - 'libmyomp\\.so'
    system_modules:    # frames of these modules keep their caller's state (libc, drivers, MPI libraries)
      - 'libmylib\\.so'

A user file's patterns are added to the defaults (``replace: true`` at the top level replaces them).
Patterns are Python regular expressions searched in the function name without hpcprof's trailing
``" [module]"`` suffix (kept for ``<unknown procedure> 0x...`` names), or in the load module's path.

How a calling context is classified (HPCToolkit's idleness and overhead, Adhianto et al., "HPCToolkit:
Tools for performance analysis of optimized parallel programs", 2010, §2.1.1): walking its path from the
root, the innermost frame that *decides* sets the state --

- a GPU synchronisation frame: idle, GPU class ``sync``; a waiting frame: idle, class ``cpu``;
- a launch or copy API frame: working, class ``launch``;
- an OpenMP runtime frame (by name or module): overhead, unless the caller is already idle (the runtime's
  internals under a barrier stay idle);
- a frame of application code (a load module that is neither runtime nor system): working, class ``cpu``;
- anything else (system libraries, placeholders without a module, loops, lines, instructions) keeps the
  state of its caller. The thread and program roots are working, class ``cpu``.

So a user task run inside a barrier (``GOMP_barrier`` -> runtime -> ``task_fn``) is work again, and libc or
the driver below ``cudaDeviceSynchronize`` still waits for the GPU.
"""

from __future__ import annotations

import os
import re

import numpy as np
import yaml

from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError

#: Thread states and GPU-blame classes (the values of the classification arrays).
WORK, OVERHEAD, IDLE = 0, 1, 2
CLASS_CPU, CLASS_SYNC, CLASS_LAUNCH = 0, 1, 2
CLASS_NAMES = ("cpu", "sync", "launch")
RULE_KEYS = ("wait", "gpu_sync", "gpu_launch", "overhead", "overhead_modules", "system_modules")

#: The rules in effect without ``--rules``: regular expressions on procedure (or module) names, per key.
DEFAULT_RULES: dict[str, list[str]] = {
    "wait": [
        # OpenMP runtimes: libgomp, LLVM libomp / Intel libiomp5, and hpcrun's OpenMP placeholders
        r"^gomp_(team_)?barrier_wait", r"^GOMP_(barrier|taskwait|taskgroup_end|ordered_start|critical_start)",
        r"^gomp_(sem|mutex)_(wait|lock)", r"^do_(wait|spin)$", r"^gomp_.*_wait(_end|_final)?$",
        r"^__kmp_.*(wait|barrier|suspend|yield|sleep)", r"^__kmpc_(barrier|omp_wait|critical)",
        r"^<omp (idle|.*wait.*|barrier)>$",
        # a runtime procedure without a symbol (hpcprof's "<unknown procedure> 0x... [libgomp.so.1]"): stripped
        # distribution builds name only their entry points (GOMP_*, __kmpc_*, omp_*), not their wait loops
        r"^<unknown procedure> 0x[0-9a-f]+ \[lib(gomp|omp|iomp5)[.-]",
        # MPI: waits, barriers, blocking receives and the progress engines of MPICH, Open MPI, UCX, libfabric
        r"^P?MPI_(Wait|Waitall|Waitany|Waitsome|Barrier|Recv|Probe|Mprobe|Sendrecv)$",
        r"^MPI[DRC]_.*[Pp]rogress", r"^MPIDI?_.*[Ww]ait", r"^opal_progress", r"^ompi_request_.*wait",
        r"^ompi_coll_.*barrier", r"^uc[pts]_.*progress", r"^fi_(cq_read|wait)",
        # the operating system: futexes, yielding, polling, condition variables and semaphores
        r"^_*futex", r"^_*sched_yield$", r"^_*(poll|ppoll|epoll_wait|select|pselect)$",
        r"^_*pthread_(cond_(timed|clock)?wait|barrier_wait|join)", r"^_*sem_(timed)?wait$",
    ],
    "gpu_sync": [
        r"^<gpu sync>$",
        r"^cuda(Device|Stream|Event|Thread)Synchronize", r"^cu(Ctx|Stream|Event)Synchronize",
        r"^cudaStreamQuery", r"^hip(Device|Stream|Event)Synchronize", r"^hipStreamQuery",
        r"^ze(CommandQueue|Event|Fence)(Host)?Synchronize", r"^zeEventHostSynchronize",
        r"^cl(Finish|WaitForEvents)$", r"^acc_wait", r"^omp_target_.*wait",
    ],
    "gpu_launch": [
        r"^cuda(Launch|Memcpy|Memset|GraphLaunch|MemPrefetch)", r"^cu(Launch|Memcpy|Memset|GraphLaunch)",
        r"^__cudaPushCallConfiguration", r"^hip(Launch|ExtLaunch|ModuleLaunch|Memcpy|Memset|GraphLaunch)",
        r"^zeCommandListAppend", r"^zeCommandQueueExecuteCommandLists", r"^clEnqueue",
        r"^__tgt_target", r"^<gpu (kernel|copy|copyin|copyout|memset)>$",
    ],
    "overhead": [r"^GOMP_", r"^gomp_", r"^__kmp", r"^__kmpc_", r"^omp_"],
    "overhead_modules": [r"(^|/)libgomp[.-]", r"(^|/)libi?omp5?[.-]"],
    "system_modules": [
        r"(^|/)(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|ld|libgcc_s|libstdc\+\+|libutil)[.-]",
        r"vdso", r"vmlinux", r"<kernel>",
        r"(^|/)lib(cuda|cudart|cupti|nvidia-[^/]*|amdhip64|hsa-runtime64|roctracer64|ze_loader|ze_intel_gpu|"
        r"igc|OpenCL|accinj64|nvc|acc[a-z]*)[.-]",
        r"(^|/)lib(mpi|mpich|mpi_cxx|mpifort|open-pal|open-rte|ucp|ucs|uct|fabric|psm2|ibverbs|pmi[x2]?)[.-]",
        r"(^|/)libhpcrun", r"(^|/)libmonitor",
    ],
}

_SUFFIX = re.compile(r" \[[^\]]*\]$")


@dataclass
class Rules:
    """Compiled rules: one alternation per key."""

    patterns: dict[str, list[str]]

    def __post_init__(self) -> None:
        self._re = {k: re.compile("|".join(f"(?:{p})" for p in v)) if v else None
                    for k, v in self.patterns.items()}

    def matches(self, key: str, text: str | None) -> bool:
        rx = self._re.get(key)
        return bool(text and rx is not None and rx.search(text) is not None)

    def to_yaml(self) -> str:
        return yaml.safe_dump({k: list(self.patterns[k]) for k in RULE_KEYS}, sort_keys=False, width=120)


def load_rules(path: str | os.PathLike[str] | None = None) -> Rules:
    """The default rules, extended (or replaced, with ``replace: true``) by a user YAML file."""
    patterns = {k: list(v) for k, v in DEFAULT_RULES.items()}
    if path is None:
        return Rules(patterns)
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
    except OSError as exc:
        raise HpcsaError(path, f"cannot read the rules file: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise HpcsaError(path, f"not valid YAML: {str(exc).splitlines()[0]}") from None
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise HpcsaError(path, "a rules file is a mapping from rule names to lists of regular expressions")
    replace = bool(doc.pop("replace", False))
    for key, value in doc.items():
        if key not in RULE_KEYS:
            raise HpcsaError(path, f"unknown rule {key!r} (known: {', '.join(RULE_KEYS)}, replace)")
        if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
            raise HpcsaError(path, f"rule {key!r} must be a list of regular expressions (strings)")
        for p in value:
            try:
                re.compile(p)
            except re.error as exc:
                raise HpcsaError(path, f"rule {key!r}: bad regular expression {p!r}: {exc}") from None
        patterns[key] = list(value) if replace else patterns[key] + list(value)
    return Rules(patterns)


def frame_decisions(rules: Rules, names: list[str | None], modules: list[str],
                    fn_module: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per function of meta.db: the state it sets (-1: keeps its caller's; OVERHEAD here means "runtime")
    and the GPU class it sets (-1: keeps its caller's). One regular-expression test per function and module."""
    mod_kind = np.zeros(len(modules), np.int8)  # 0 application, 1 runtime, 2 system
    for m, path in enumerate(modules):
        if rules.matches("overhead_modules", path):
            mod_kind[m] = 1
        elif rules.matches("system_modules", path):
            mod_kind[m] = 2
    state = np.full(len(names), -1, np.int8)
    klass = np.full(len(names), -1, np.int8)
    for f, raw in enumerate(names):
        name = _SUFFIX.sub("", raw) if raw else raw
        if name and name.startswith("<unknown procedure>"):  # name is raw's, less a suffix
            name = raw  # the module suffix is all that tells these apart
        m = int(fn_module[f]) if f < len(fn_module) else -1
        mk = int(mod_kind[m]) if 0 <= m < len(mod_kind) else -1
        if rules.matches("gpu_sync", name):
            state[f], klass[f] = IDLE, CLASS_SYNC
        elif rules.matches("wait", name):
            state[f], klass[f] = IDLE, CLASS_CPU
        elif rules.matches("gpu_launch", name):
            state[f], klass[f] = WORK, CLASS_LAUNCH
        elif rules.matches("overhead", name) or mk == 1:
            state[f] = OVERHEAD
        elif mk == 0:
            state[f], klass[f] = WORK, CLASS_CPU
    return state, klass


def classify_rows(parent: np.ndarray, levels: list[np.ndarray], row_function: np.ndarray,
                  decides: np.ndarray, fn_state: np.ndarray, fn_class: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every row's (state, GPU class), top-down one depth level at a time (see the module docstring).

    ``decides`` marks the rows whose function may decide (procedure frames, not lines or loops)."""
    n = len(parent)
    state = np.full(n, WORK, np.int8)
    klass = np.full(n, CLASS_CPU, np.int8)
    fs = np.full(n, -1, np.int8)
    fc = np.full(n, -1, np.int8)
    ok = decides & (row_function >= 0) & (row_function < len(fn_state))
    fs[ok] = fn_state[row_function[ok]]
    fc[ok] = fn_class[row_function[ok]]
    for rows in levels:
        par = parent[rows]
        has = par >= 0
        ps = np.where(has, state[np.maximum(par, 0)], WORK)
        pc = np.where(has, klass[np.maximum(par, 0)], CLASS_CPU)
        own = fs[rows]
        s = np.where(own < 0, ps, own)
        s = np.where((own == OVERHEAD) & (ps == IDLE), IDLE, s)
        state[rows] = s
        klass[rows] = np.where(fc[rows] < 0, pc, fc[rows])
    return state, klass
