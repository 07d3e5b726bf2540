"""Structure of AMD GPU code objects (fixtures/gpu/callgraph-*.co, built from callgraph.cl with clang).

Expected call graph and loop nest are read off the source. Call targets come from the
s_getpc_b64 / s_add_u32 / s_addc_u32 / s_swappc_b64 pattern; without llvm-objdump the result is
functions and lines only, with a warning.
"""

from __future__ import annotations

import re

import pytest

from hpcsa.formats.hpcstruct.model import C, L, Module, S
from hpcsa.structure.gpu import amdgpu
from hpcsa.structure.gpu.amdgpu import build_amd_module, find_llvm_objdump
from tests.conftest import FIXTURES, run_cli

GPU = FIXTURES / "gpu"
SOURCE = (GPU / "callgraph.cl").read_text().splitlines()
VARIANTS = {"callgraph-gfx90a-O2.co": "gfx90a", "callgraph-gfx1030-O0.co": "gfx1030"}
CALLS = {("kernel_calls", "top"), ("top", "left"), ("top", "right"), ("left", "leaf"), ("right", "leaf"),
         ("kernel_loops", "leaf")}

needs_objdump = pytest.mark.skipif(find_llvm_objdump() is None, reason="llvm-objdump not installed")


def source_line(pattern: str) -> int:
    (line,) = [i + 1 for i, text in enumerate(SOURCE) if re.search(pattern, text)]
    return line


def names(m: Module) -> dict[int, str]:
    return {r: m.text(int(m.scopes["name"][r])) or "" for r in m.procedures["scope"].tolist()}


@pytest.fixture(scope="module")
def built() -> dict[str, Module]:
    if find_llvm_objdump() is None:
        pytest.skip("llvm-objdump not installed")
    out = {}
    for name in VARIANTS:
        module, notes = build_amd_module(str(GPU / name))
        assert notes == [], notes
        out[name] = module
    return out


@needs_objdump
@pytest.mark.parametrize("name", list(VARIANTS))
def test_call_graph_is_the_sources(built, name):
    m = built[name]
    assert m.has_calls
    procs = names(m)
    edges = {(procs[int(cs["caller"])], procs[int(cs["callee"])] if cs["callee"] >= 0 else None)
             for cs in m.call_sites}
    # -O2 inlines sq (an inline record of the DWARF); -O0 calls it
    assert edges == (CALLS | {("kernel_calls", "sq")} if name.endswith("-O0.co") else CALLS)
    devices = {m.text(int(d)) for d in m.scopes["device"][m.scopes["kind"] == C]}
    assert devices == {f"AMD {VARIANTS[name]}"}
    # every procedure sits at its symbol's address, and every t= is one of them
    assert all(int(cs["target"]) in m.procedures["entry"].tolist() for cs in m.call_sites)


@needs_objdump
@pytest.mark.parametrize("name", list(VARIANTS))
def test_loop_nest_holds_the_call(built, name):
    m = built[name]
    loops = [r for r in range(len(m.scopes)) if m.scopes["kind"][r] == L]
    assert len(loops) == 2
    outer, inner = sorted(loops)
    assert int(m.scopes["parent"][inner]) == outer
    assert names(m)[int(m.procedure_of[outer])] == "kernel_loops"
    (leaf_call,) = [cs for cs in m.call_sites if names(m)[int(cs["caller"])] == "kernel_loops"]
    assert [s.scope for s in m.lexical_path(int(leaf_call["scope"])) if s.kind == "loop"] == [outer, inner]
    assert int(m.scopes["line"][leaf_call["scope"]]) == source_line(r"acc \+= in\[i \* m \+ j\]")


@needs_objdump
def test_inlined_function_at_its_call_line(built):
    m = built["callgraph-gfx90a-O2.co"]
    call = source_line(r"out\[t\] = top\(t\) \+ sq\(n\)")
    paths = [m.lexical_path(r) for r in range(len(m.scopes)) if m.scopes["kind"][r] == S]
    inlined = [p for p in paths if any(s.relation == "inlined_call" for s in p)]
    assert inlined
    for p in inlined:
        step = next(s for s in p if s.relation == "inlined_call")
        assert step.line == call and p[p.index(step) + 1].name == "sq"


def test_without_llvm_objdump_lines_only_with_a_warning(monkeypatch):
    monkeypatch.setenv("HPCSA_LLVM_OBJDUMP", "/nonexistent/llvm-objdump")
    m, notes = build_amd_module(str(GPU / "callgraph-gfx90a-O2.co"))
    assert len(notes) == 1 and "llvm-objdump not found" in notes[0] and "no loops, no call sites" in notes[0]
    assert not m.has_calls and m.count(C) == 0 and m.count(L) == 0
    assert sorted(names(m).values()) == ["kernel_calls", "kernel_loops", "leaf", "left", "right", "top"]
    proc = run_cli("struct", str(GPU / "callgraph-gfx90a-O2.co"), "-o", "/dev/null",
                   env={"HPCSA_LLVM_OBJDUMP": "/nonexistent/llvm-objdump"})
    assert proc.returncode == 0, proc.stderr
    assert any(ln.startswith("hpcsa: warning: ") and "llvm-objdump not found" in ln for ln in proc.stderr.splitlines())


def test_getpc_pattern_targets():
    """target = address after s_getpc_b64 + the 64-bit literal; other writes to the pair forget it."""
    code = amdgpu.AmdCode(
        address=[0x1000, 0x1004, 0x100C, 0x1014, 0x1018, 0x101C, 0x1024, 0x1028],
        size=[4, 8, 8, 4, 4, 8, 4, 4],
        mnemonic=["s_getpc_b64", "s_add_u32", "s_addc_u32", "s_swappc_b64", "s_getpc_b64", "s_add_u32",
                  "s_mov_b32", "s_swappc_b64"],
        operands=["s[4:5]", "s4, s4, 0xffffffe0", "s5, s5, -1", "s[30:31], s[4:5]", "s[6:7]", "s6, s6, 0x10",
                  "s7, 0", "s[30:31], s[6:7]"],
        target=[-1] * 8)
    _code, callee = amdgpu.classify(code, {0x1004 - 0x20, 0x1018 + 4 + 0x10})
    assert callee == {3: 0x1004 - 0x20, 7: None}   # the second pair was overwritten by s_mov_b32 s7
