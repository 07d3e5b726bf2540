"""Structure of the project's own CUDA 13 cubins (fixtures/gpu, built from callgraph.cu by make_cubins.py).

Real hpcstruct finds no call sites in CUDA 13 cubins (it reads the SM number from the wrong bits of
e_flags); hpcsa must. The expected call graph and loop lines are
read off the source, not off hpcsa's output.
"""

from __future__ import annotations

import re
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from hpcsa.formats.hpcstruct.model import C, L, Module
from hpcsa.structure.elf import open_elf
from hpcsa.structure.gpu import nvdisasm
from hpcsa.structure.gpu.cubin import build_cubin_module
from hpcsa.structure.gpu.cubin_elf import Cubin
from tests.conftest import FIXTURES

GPU = FIXTURES / "gpu"
SOURCE = (GPU / "callgraph.cu").read_text().splitlines()
VARIANTS = {"callgraph-sm75-lineinfo.cubin": 75, "callgraph-sm90-rdc.cubin": 90, "callgraph-sm80-G.cubin": 80}

# The call graph of callgraph.cu, by mangled name; None: the call through the ops[] function pointer.
CALLS = {
    ("_Z12kernel_callsPii", "_Z3topi"), ("_Z12kernel_callsPii", "_Z3fibi"), ("_Z12kernel_callsPii", "_Z7is_eveni"),
    ("_Z12kernel_callsPii", None),
    ("_Z3topi", "_Z4lefti"), ("_Z3topi", "_Z5righti"), ("_Z4lefti", "_Z4leafi"), ("_Z5righti", "_Z4leafi"),
    ("_Z3fibi", "_Z3fibi"), ("_Z7is_eveni", "_Z6is_oddi"), ("_Z6is_oddi", "_Z7is_eveni"),
    ("_Z12kernel_loopsPfPKfii", "_Z4leafi"),
}
# -G does not inline plain __device__ functions: inl_sum stays a function called from kernel_loops.
CALLS_G = CALLS | {("_Z12kernel_loopsPfPKfii", "_Z7inl_sumPKfi")}

needs_nvdisasm = pytest.mark.skipif(nvdisasm.find_nvdisasm() is None,
                                    reason="nvdisasm not installed (pip install nvidia-cuda-nvdisasm)")


def source_line(pattern: str) -> int:
    (line,) = [i + 1 for i, text in enumerate(SOURCE) if re.search(pattern, text)]
    return line


@pytest.fixture(scope="module")
def built() -> dict[str, Module]:
    if nvdisasm.find_nvdisasm() is None:
        pytest.skip("nvdisasm not installed (pip install nvidia-cuda-nvdisasm)")
    with ThreadPoolExecutor(max_workers=3) as pool:   # the time is nvdisasm's, a process per cubin
        results = dict(zip(VARIANTS, pool.map(lambda n: build_cubin_module(str(GPU / n)), VARIANTS), strict=True))
    for name, (_module, notes) in results.items():
        assert notes == [], (name, notes)
    return {name: module for name, (module, _notes) in results.items()}


def base_name(link: str) -> str:
    """Whole-program cubins clone device functions into kernels as $<kernel>$<function>."""
    return link.rsplit("$", 1)[-1]


def link_name(m: Module, row: int) -> str:
    """A procedure's mangled name (``ln``, or ``n`` where they are equal), without a clone's prefix."""
    return base_name(m.text(int(m.scopes["link"][row])) or m.text(int(m.scopes["name"][row])) or "")


def call_graph(m: Module) -> Counter:
    names = {r: link_name(m, r) for r in m.procedures["scope"].tolist()}
    edges: Counter = Counter()
    for cs in m.call_sites:
        callee = names[int(cs["callee"])] if cs["callee"] >= 0 else None
        assert callee is not None or cs["target"] < 0, "a t= that names no procedure entry"
        edges[(names[int(cs["caller"])], callee)] += 1
    return edges


def test_architecture_from_either_e_flags_layout(hpctoolkit_data):
    for name, sm in VARIANTS.items():
        assert Cubin(open_elf(GPU / name)).device == f"NVIDIA sm_{sm}"          # CUDA 13: bits 8-15
    assert Cubin(open_elf(hpctoolkit_data / "bin" / "recursion-sm_75-nvcc112-dr")).arch == 75  # bits 0-7


@pytest.mark.parametrize("name", list(VARIANTS))
def test_functions_at_section_offset_addresses(name):
    """HPCToolkit's address of a function: symbol value + file offset of its section."""
    cubin = Cubin(open_elf(GPU / name))
    funcs = cubin.functions
    assert {base_name(f.name) for f in funcs} >= {n for edge in CALLS for n in edge if n}
    for f in funcs:
        sec = cubin.section(f.section)
        assert f.address == sec.offset + f.offset and sec.offset <= f.address < f.end <= sec.offset + sec.size
    starts = sorted(f.address for f in funcs)
    assert len(set(starts)) == len(starts)  # no two functions at one address, unlike raw sh_addr = 0


@needs_nvdisasm
@pytest.mark.parametrize("name", list(VARIANTS))
def test_call_graph_is_the_sources(built, name):
    m = built[name]
    assert m.has_calls
    expected = CALLS_G if name.endswith("-G.cubin") else CALLS
    assert set(call_graph(m)) == expected
    # every <C> has the device of its cubin
    devices = {m.text(int(d)) for d in m.scopes["device"][m.scopes["kind"] == C]}
    assert devices == {f"NVIDIA sm_{VARIANTS[name]}"}


@needs_nvdisasm
@pytest.mark.parametrize("name", list(VARIANTS))
def test_loop_nest(built, name):
    """kernel_loops: the i loop holds the j loop, and the calls to leaf sit in the j loop; inl_sum's
    loop is a third loop (inlined into kernel_loops, or in inl_sum itself under -G)."""
    m = built[name]
    outer, inner = source_line(r"for \(int i = 0; i < n; i\+\+\) \{"), source_line(r"for \(int j = 0; j < m")
    sum_loop = source_line(r"for \(int i = 0; i < n; i\+\+\)$")
    loops = np.flatnonzero(m.scopes["kind"] == L).tolist()
    lines = Counter(int(m.scopes["line"][r]) for r in loops)
    assert lines[outer] >= 1 and lines[inner] >= 1 and lines[sum_loop] >= 1, lines
    for r in loops:
        if int(m.scopes["line"][r]) == inner:
            steps = [s for s in m.lexical_path(r) if s.kind == "loop"]
            assert [s.line for s in steps] == [outer, inner]
    leaf_calls = [cs for cs in m.call_sites if link_name(m, int(cs["callee"])) == "_Z4leafi"
                  and link_name(m, int(cs["caller"])) == "_Z12kernel_loopsPfPKfii"]
    nests = [[s.line for s in m.lexical_path(int(cs["scope"])) if s.kind == "loop"] for cs in leaf_calls]
    assert [outer, inner] in nests
    # unrolled builds finish the j loop with calls after it (still in the i loop); -G keeps one call
    assert all(n in ([outer, inner], [outer]) for n in nests), nests
    if name.endswith("-G.cubin"):
        assert nests == [[outer, inner]]
