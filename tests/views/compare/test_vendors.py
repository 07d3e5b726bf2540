"""Runs of one program on several GPU vendors line up: names, roles, and HPCToolkit's loops program measured
on NVIDIA and on AMD, checked against each database's own tree."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsa.views.compare import compare
from hpcsa.views.compare.vendors import kernel_name, metric_meaning, runtime_role, stub_kernel, vendor_of
from hpcsa.views.experiment import open_experiment


@pytest.mark.parametrize("a, b", [
    # GNU's and LLVM's demanglers, clang's internal lambda names
    ("void foo<float, 256>(float*, int)", "foo<float,256>(float *, int)"),
    ("Kokkos::Impl::cuda_parallel_launch_local_memory<Kokkos::Impl::ParallelFor<main::{lambda(int)#1}, "
     "Kokkos::RangePolicy<>, Kokkos::Cuda> >(Kokkos::Impl::ParallelFor<main::{lambda(int)#1}, "
     "Kokkos::RangePolicy<>, Kokkos::Cuda>)",
     "Kokkos::Impl::hip_parallel_launch_local_memory<Kokkos::Impl::ParallelFor<main::'lambda'(int), "
     "Kokkos::RangePolicy<>, Kokkos::HIP>>"),
    ("_Z8kernmainv", "kernmain()"),
    ("kernmain()", "kernmain"),
    ("axpy<double>(double, double const*, double*) [clone .kd]", "axpy<double>"),
    ("run::$_0::operator()", "run::{lambda(int)#1}::operator()"),
])
def test_kernel_names_line_up(a, b):
    assert kernel_name(a) == kernel_name(b)


def test_different_kernels_stay_apart():
    assert kernel_name("foo<float>(float*)") != kernel_name("foo<double>(double*)")
    assert kernel_name("Kokkos::Impl::cuda_parallel_launch_local_memory<Kokkos::Impl::ParallelFor<A, P, "
                       "Kokkos::Cuda>>") == "Kokkos::parallel_for<A>"


@pytest.mark.parametrize("name, role", [
    ("cudaLaunchKernel", "launch kernel"), ("hipLaunchKernel [libamdhip64.so.5.7.50701]", "launch kernel"),
    ("cudaLaunchKernel<char>", "launch kernel"), ("cuLaunchKernel", "launch kernel"),
    ("zeCommandListAppendLaunchKernel", "launch kernel"), ("hipModuleLaunchKernel", "launch kernel"),
    ("cuMemcpyHtoDAsync_v2", "copy H2D"), ("hipMemcpyDtoH", "copy D2H"), ("cudaMemcpyAsync", "copy"),
    ("zeCommandListAppendMemoryCopy", "copy"), ("cudaMemsetAsync", "memset"),
    ("zeCommandListAppendMemoryFill", "memset"), ("cudaDeviceSynchronize", "sync device"),
    ("hipStreamSynchronize", "sync stream"), ("zeEventHostSynchronize", "sync event"),
    ("cudaMalloc", "alloc"), ("hipFree", "free"), ("main", None), ("cudaLaunchKernelFoo", None)])
def test_runtime_calls_by_role(name, role):
    assert runtime_role(name) == role


def test_launch_stubs_and_vendors():
    assert stub_kernel("__device_stub__Z8kernmainv()") == "kernmain"
    assert stub_kernel("__device_stub__saxpy(float, float*)") == "saxpy"
    assert stub_kernel("main") is None
    assert vendor_of(["/opt/rocm-5.7.1/lib/libamdhip64.so.5.7.50701"], []) == "AMD"
    assert vendor_of(["/usr/lib/libze_loader.so.1"], []) == "Intel"
    assert vendor_of(["/app"], ["cudaLaunchKernel", "main"]) == "NVIDIA"
    assert metric_meaning("GKER (sec)") == "kernel time"
    assert metric_meaning("GXCOPY:H2D (B)") == "copied host to device (B)"
    assert metric_meaning("GINS:STL_GMEM") == "stalls: global memory"
    assert metric_meaning("CPUTIME (sec)") is None


def _own_kernels(path):
    """Each database's own tree: the procedures directly under its ``<gpu kernel>`` contexts, and the
    GPUOP inclusive sum of those contexts (independent of the compare code)."""
    exp = open_experiment(path)
    c = exp.cct
    names = [exp.scope_name(r) for r in range(len(c))]
    placeholders = [r for r in range(len(c)) if names[r] == "<gpu kernel>"]
    kernels = {names[r] for r in range(len(c)) if int(c.parent[r]) in placeholders}
    total = float(exp.inclusive("GPUOP (sec)")[placeholders].sum())
    return kernels, total


def test_the_loops_program_on_nvidia_and_amd_lines_up(hpctoolkit_data):
    nvidia = hpctoolkit_data / "dbase" / "loops-cuda-nvidia-t.d"
    amd = hpctoolkit_data / "dbase" / "loops-hip-amd-t.d"
    cmp = compare([nvidia, amd], metrics=["GPUOP (sec)"])
    assert cmp.vendor_neutral and cmp.vendors == ["NVIDIA", "AMD"]
    launch = cmp.paths.index("main thread / main / <launch kernel>")
    assert cmp.present[launch].all()
    assert {"cudaLaunchKernel<char>", "hipLaunchKernel [libamdhip64.so.5.7.50701]"} == \
        set((cmp.aliases or {})[launch].values())
    placeholder = cmp.paths.index("main thread / main / <launch kernel> / <gpu kernel>")
    assert cmp.present[placeholder].all()
    for run, db in enumerate((nvidia, amd)):
        kernels, total = _own_kernels(db)
        assert cmp.matrix("GPUOP (sec)")[placeholder, run] == pytest.approx(total, rel=1e-12)
        under = [i for i in np.flatnonzero(cmp.parent == placeholder) if cmp.present[i, run]]
        assert {kernel_name(k) for k in kernels} == {cmp.labels[i] for i in under}
    # NVIDIA's tree names its kernel; AMD's (rocm 5.7, no kernel names in this measurement) does not
    kernmain = cmp.paths.index("main thread / main / <launch kernel> / <gpu kernel> / kernmain")
    assert cmp.present[kernmain].tolist() == [True, False]


def test_without_the_vendor_neutral_names_the_trees_do_not_line_up(hpctoolkit_data):
    d = hpctoolkit_data / "dbase"
    cmp = compare([d / "loops-cuda-nvidia-t.d", d / "loops-hip-amd-t.d"], vendor_neutral=False)
    main = [i for i, p in enumerate(cmp.paths) if p == "main thread / main"]
    assert len(main) == 1 and cmp.present[main[0]].tolist() == [True, False]  # main's module differs
