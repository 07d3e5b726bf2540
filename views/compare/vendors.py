"""One program measured on NVIDIA, AMD and Intel GPUs, named alike: kernels, runtime calls, GPU metrics.

The same source gives each vendor's toolchain its own spellings. To line runs up (:mod:`.frames`):

- a GPU kernel is named by its demangled base name (:func:`kernel_name`): return type, parameter list,
  clone and ``.kd`` suffixes and hpcprof's ``[module]`` suffix dropped; template arguments kept but written
  one way (no spaces, a lambda as ``lambda#N`` whichever demangler wrote it: GNU's ``{lambda(int)#1}``,
  LLVM's ``'lambda'(int)``, clang's ``$_0``), each vendor's Kokkos back-end type written ``<device>``,
  and Kokkos' per-back-end launch wrappers (``cuda_parallel_launch_local_memory<ParallelFor<F, ...>>``,
  ``hip_parallel_launch_...``) reduced to the pattern and its functor (``Kokkos::parallel_for<F>``);
- a runtime call is named by its role (:func:`runtime_role`): ``cudaLaunchKernel``, ``cuLaunchKernel``,
  ``hipLaunchKernel``, ``hipModuleLaunchKernel``, ``zeCommandListAppendLaunchKernel`` are all
  ``<launch kernel>``; copies by direction where the name says it, memsets, synchronizations by what they
  wait for, allocations and frees;
- the glue a toolchain puts between the two is left out (:func:`~hpcsa.views.compare.vendors.is_launch_stub`): nvcc's and clang's
  host-side ``__device_stub__*`` functions and the kernel-named host wrapper above them;
- a GPU metric is matched by its name, which hpcrun (and ``hpcsa ingest``) give the same meaning on every
  vendor (HPCToolkit's ``gpu-metrics.h``); :func:`metric_meaning` says what it measures (kernel time,
  copies by direction, stall classes), for the report.
"""

from __future__ import annotations

import re
from functools import lru_cache

from hpcsa.core.demangle import demangle, drop_return_type

NVIDIA, AMD, INTEL = "NVIDIA", "AMD", "Intel"

#: (role, pattern over a procedure's base name), first match wins.
ROLES: tuple[tuple[str, re.Pattern[str]], ...] = tuple((role, re.compile(pat)) for role, pat in (
    ("launch kernel", r"(cuda|hip)(Ext)?Launch(Cooperative)?Kernel(ExC|GGL\w*)?(_spt|_ptsz)?"
                      r"|cuLaunch(Cooperative)?Kernel(Ex)?(_ptsz)?|hip(Ext)?ModuleLaunchKernel"
                      r"|zeCommandListAppendLaunch(Cooperative)?Kernel(Indirect)?"
                      r"|zeCommandListAppendLaunchMultipleKernelsIndirect|clEnqueueNDRangeKernel"),
    ("copy H2D", r"(cu|hip)Memcpy(HtoD|HtoA)\w*|cudaMemcpyToSymbol\w*|hipMemcpyToSymbol\w*"),
    ("copy D2H", r"(cu|hip)Memcpy(DtoH|AtoH)\w*|cudaMemcpyFromSymbol\w*|hipMemcpyFromSymbol\w*"),
    ("copy D2D", r"(cu|hip)Memcpy(DtoD|DtoA|AtoD|AtoA)\w*|(cuda|hip)MemcpyPeer\w*"),
    ("copy", r"(cuda|hip|cu)Memcpy\w*|zeCommandListAppendMemoryCopy\w*|clEnqueue(Read|Write|Copy)Buffer\w*"),
    ("prefetch", r"(cuda|hip|cu)MemPrefetch\w*|zeCommandListAppendMemoryPrefetch"),
    ("memset", r"(cuda|hip)Memset\w*|cuMemset\w*|zeCommandListAppendMemoryFill|clEnqueueFillBuffer"),
    ("sync device", r"(cuda|hip)DeviceSynchronize|cuCtxSynchronize|(cuda|hip)ThreadSynchronize"),
    ("sync stream", r"(cuda|hip|cu)StreamSynchronize(_ptsz)?|zeCommandQueueSynchronize|clFinish"),
    ("sync event", r"(cuda|hip|cu)EventSynchronize|zeEventHostSynchronize|clWaitForEvents"),
    ("stream wait event", r"(cuda|hip|cu)StreamWaitEvent(_ptsz)?|zeCommandListAppendWaitOnEvents"),
    ("alloc", r"(cuda|hip)(Malloc|HostAlloc|MallocManaged|MallocHost|MallocAsync|MallocPitch|ExtMallocWithFlags"
              r"|HostMalloc)\w*|cuMemAlloc\w*|zeMemAlloc(Device|Host|Shared)|clCreateBuffer"),
    ("free", r"(cuda|hip)(Free|FreeHost|FreeAsync|HostFree)\w*|cuMemFree\w*|zeMemFree|clReleaseMemObject"),
))

#: Library file names of each vendor's GPU runtime (what tells a run's vendor, and which frames are its
#: runtime's insides).
RUNTIME_LIBRARIES: dict[str, re.Pattern[str]] = {
    NVIDIA: re.compile(r"lib(cuda|cudart|cupti|nvrtc|cublas\w*|cusparse|cufft|nvJitLink)\b[\w.]*\.so"),
    AMD: re.compile(r"lib(amdhip64|hsa-runtime64|roctracer64|rocprofiler\w*|rocblas|hipblas\w*|amd_comgr)"
                    r"\b[\w.]*\.so"),
    INTEL: re.compile(r"lib(ze_loader|ze_intel_gpu|ze_tracing_layer|sycl|OpenCL|igdrcl|pi_level_zero)"
                      r"\b[\w.]*\.so"),
}
_VENDOR_CALLS = {NVIDIA: re.compile(r"^(cuda|cu)[A-Z]"), AMD: re.compile(r"^(hip|hsa_)"),
                 INTEL: re.compile(r"^(ze|zet|zes)[A-Z]|^cl[A-Z]")}

_MODULE_SUFFIX = re.compile(r" \[[^\[\]]*\]$")  # hpcprof's " [libfoo.so]" after a name without source
_CLONE = re.compile(r"( \[clone [^\]]*\])+$")
_GNU_LAMBDA = re.compile(r"\{lambda\([^{}]*\)#(\d+)\}")
_LLVM_LAMBDA = re.compile(r"'lambda(\d*)'\([^()]*\)")
_CLANG_LAMBDA = re.compile(r"\$_(\d+)")
_BACKENDS = re.compile(r"Kokkos::(Experimental::)?(Cuda|HIP|SYCL|OpenMPTarget)(Space|UVMSpace|HostPinnedSpace)?\b")
_KOKKOS = re.compile(r"^Kokkos::Impl::\w*_parallel_launch\w*<Kokkos::Impl::Parallel(For|Reduce|Scan)\w*<")


def base_name(name: str) -> str:
    """A procedure's name without what a toolchain adds to it: hpcprof's ``[module]`` suffix, clone
    suffixes, a return type and its parameter list."""
    name = _CLONE.sub("", _MODULE_SUFFIX.sub("", name.strip()))
    name = drop_return_type(name)
    return _strip_parameters(name)


def _strip_parameters(name: str) -> str:
    """``ns::f<int>(int, float) const`` -> ``ns::f<int>``: the last top-level parenthesised list and what
    follows it (qualifiers) removed; an operator's own parentheses (``operator()``) kept."""
    depth = 0
    end = len(name)
    for i in range(len(name) - 1, -1, -1):
        ch = name[i]
        if ch in ")>]}":
            depth += 1
        elif ch in "(<[{":
            depth -= 1
            if depth == 0 and ch == "(":
                if name[:i].endswith("operator") or name[:i].endswith("operator()"):
                    continue
                end = i
                break
    return name[:end].rstrip()


@lru_cache(maxsize=1 << 14)
def kernel_name(name: str) -> str:
    """The name a GPU kernel goes by on every vendor (see the module docstring)."""
    text = base_name(demangle(name.strip()))
    text = _GNU_LAMBDA.sub(lambda m: f"lambda#{m.group(1)}", text)
    text = _LLVM_LAMBDA.sub(lambda m: f"lambda#{int(m.group(1) or 0) + 1}", text)
    text = _CLANG_LAMBDA.sub(lambda m: f"lambda#{int(m.group(1)) + 1}", text)
    text = _BACKENDS.sub("<device>", text)
    kokkos = _KOKKOS.match(text)
    if kokkos:
        functor = _first_argument(text[kokkos.end():])
        return f"Kokkos::parallel_{kokkos.group(1).lower()}<{_tight(functor)}>"
    return _tight(text)


def _first_argument(text: str) -> str:
    depth = 0
    for i, ch in enumerate(text):
        if ch in "(<[{":
            depth += 1
        elif ch in ")>]}":
            if depth == 0:
                return text[:i]
            depth -= 1
        elif ch == "," and depth == 0:
            return text[:i]
    return text


def _tight(text: str) -> str:
    """Template arguments written one way: no space after a comma or between closing brackets."""
    return re.sub(r"\s*,\s*", ",", re.sub(r">\s+>", ">>", re.sub(r">\s+>", ">>", text)))


@lru_cache(maxsize=1 << 14)
def runtime_role(name: str) -> str | None:
    """The role of a GPU runtime call (``launch kernel``, ``copy H2D``, ``sync stream``, ...), or None."""
    base = base_name(name)
    base = re.sub(r"<.*>$", "", base)  # cudaLaunchKernel<char>: the runtime header's inline template
    for role, pattern in ROLES:
        if pattern.fullmatch(base):
            return role
    return None


def stub_kernel(name: str) -> str | None:
    """The kernel a host-side launch stub is for (``__device_stub__Z8kernmainv()`` -> ``kernmain``), or None."""
    text = base_name(name)
    if not text.startswith("__device_stub__"):
        return None
    rest = text[len("__device_stub__"):]
    if rest.startswith("Z"):  # nvcc: the stub's name is the kernel's mangled name without its underscore
        rest = demangle("_" + rest)
    return base_name(rest) or None


def is_launch_stub(name: str) -> bool:
    """Whether a host frame is a kernel's launch stub (``__device_stub__*``, see :func:`stub_kernel`)."""
    return stub_kernel(name) is not None


def vendor_of(modules: list[str], function_names: list[str | None]) -> str | None:
    """The GPU vendor of a run: whose runtime libraries it loaded, else whose runtime calls it made."""
    found = [v for v, pat in RUNTIME_LIBRARIES.items() if any(pat.search(m) for m in modules)]
    if len(found) == 1:
        return found[0]
    calls = [v for v, pat in _VENDOR_CALLS.items() if any(n and runtime_role(n) and pat.match(base_name(n))
                                                         for n in function_names)]
    if len(calls) == 1:
        return calls[0]
    return found[0] if found else None


def runtime_vendor(module: str) -> str | None:
    """The vendor whose GPU runtime a load module is, or None."""
    for v, pat in RUNTIME_LIBRARIES.items():
        if pat.search(module):
            return v
    return None


# -- metrics ------------------------------------------------------------------------------------------------

_DIRECTIONS = {"H2D": "host to device", "D2H": "device to host", "D2D": "device to device", "H2H": "host to host",
               "P2P": "peer to peer", "H2A": "host to array", "A2H": "array to host", "A2A": "array to array",
               "A2D": "array to device", "D2A": "device to array", "UNK": "unknown direction"}
_STALLS = {"ANY": "any stall", "NONE": "no stall", "IFET": "instruction fetch", "IDEP": "instruction dependence",
           "GMEM": "global memory", "TMEM": "texture memory", "SYNC": "synchronization",
           "CMEM": "constant memory", "PIPE": "busy pipeline", "MTHR": "memory throttle",
           "NSEL": "not selected", "OTHR": "other", "SLP": "sleep"}
_TIMES = {"GPUOP": "GPU time, all operations", "GKER": "kernel time", "GMEM": "allocation time",
          "GMSET": "memset time", "GXCOPY": "explicit copy time", "GICOPY": "implicit (unified memory) copy time",
          "GSYNC": "synchronization time"}


def metric_meaning(name: str) -> str | None:
    """What an hpcrun GPU metric measures, in a few words (None for a metric that is not one of them)."""
    m = re.fullmatch(r"(\w+)(?::(\w+))?(?: \((\w+)\))?", name.strip())
    if not m:
        return None
    head, sub, unit = m.groups()
    if head in _TIMES and sub is None:
        return _TIMES[head]
    if head in ("GXCOPY", "GICOPY") and sub in _DIRECTIONS:
        return f"{'copied' if head == 'GXCOPY' else 'migrated'} {_DIRECTIONS[sub]} ({unit or 'count'})"
    if head == "GKER" and sub == "COUNT":
        return "kernel launches"
    if sub == "COUNT" and head in _TIMES:
        return f"{_TIMES[head].replace(' time', '')} operations"
    if head == "GINS" and sub is None:
        return "GPU instructions (sampled)"
    if head == "GINS" and sub and sub.startswith("STL_") and sub[4:] in _STALLS:
        return f"stalls: {_STALLS[sub[4:]]}"
    if head in ("GMEM", "GMSET") and unit == "B":
        return f"{'allocated' if head == 'GMEM' else 'set'} bytes ({sub})"
    return None
