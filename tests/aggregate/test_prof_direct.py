"""``hpcsa prof`` without a structure file reads the binary's DWARF as hpcprof does (issue 13).

A library is built with gcc from the project's own ``fixtures/structure/sample.c``, stripped, its DWARF
kept in a separate debug file (found by ``.gnu_debuglink`` next to it, or by build id under a debug
root); a measurement written with the project's ``.hpcrun`` writer samples addresses of every statement
of ``nest`` (loops, an inlined call of ``square_sum`` at line 19) and ``dispatch``. Analysed with its
structure file and with ``--ignore-structs``, both databases must show the same functions, inlined calls
and lines for every sample; loops only the first. A library rebuilt from changed code at the same path
is refused, in one line. Skipped where gcc/objcopy are missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from hpcsa.formats.db import metadb
from hpcsa.formats.db.compare import ContextNames
from hpcsa.formats.hpcstruct.model import S
from hpcsa.formats.hpcstruct.writer import write_hpcstruct
from hpcsa.formats.measurement.hpcrun import (
    CCT_NODE,
    ID_ELEMENT,
    HpcrunProfile,
    LoadModule,
    MetricDesc,
    default_id_names,
    pack_values,
    placeholder_code,
    write_hpcrun,
)
from hpcsa.structure import elf as elfmod
from hpcsa.structure.binary import analyze_binary
from hpcsa.structure.debuginfo.dwarf import DebugInfo
from hpcsa.structure.debuginfo.lines import read_program
from hpcsa.structure.debuginfo.source_info import dwarf_sections
from tests.aggregate.profcheck import build

SAMPLE_C = Path(__file__).resolve().parents[2] / "fixtures" / "structure" / "sample.c"
EXE = "/opt/absent/bin/app"
METRICS = [MetricDesc("CPUTIME (sec)", description="CPUTIME (sec)", val_type=0, val_fmt=2, period=1)]

pytestmark = pytest.mark.skipif(not (shutil.which("gcc") and shutil.which("objcopy")),
                                reason="gcc and objcopy (binutils) are needed to build the library")


def _run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True)


def build_library(out: Path, *, debuglink: bool = True, extra: str = "", compiler: str = "gcc") -> Path:
    """``out``: a stripped libsample.so; its DWARF in ``libsample.so.debug`` beside it (with a
    .gnu_debuglink) or only under its build id (caller places it). ``extra`` is prepended C code."""
    src = out.parent / "sample.c"
    src.write_text(extra + SAMPLE_C.read_text())
    full = out.parent / (out.name + ".full")
    _run(compiler, "-g", "-O2", "-fPIC", "-shared", "-Wl,--build-id", "-o", str(full), str(src))
    debug = out.parent / (out.name + ".debug")
    _run("objcopy", "--only-keep-debug", str(full), str(debug))
    strip = ["objcopy", "--strip-debug", "--strip-unneeded"]
    if debuglink:
        strip.append(f"--add-gnu-debuglink={debug}")
    _run(*strip, str(full), str(out))
    full.unlink()
    return debug


def statement_addresses(module, names: tuple[str, ...]) -> list[int]:
    """The first and the middle address of every statement range of the named procedures."""
    sc = module.scopes
    procs = {r for r in np.flatnonzero(sc["kind"] == 2).tolist()
             if (module.text(int(sc["name"][r])) or "").split(" [")[0] in names}
    out = []
    for row in np.flatnonzero(sc["kind"] == S).tolist():
        p = int(module.procedure_of[row])
        while p >= 0 and p not in procs:
            p = int(module.procedure_of[p])
        if p in procs:
            out += [a for lo, hi in module.ranges_of(row) if hi > lo for a in (lo, (lo + hi) // 2)]
    return sorted(set(out))


def single_row(debug: Path, offsets: list[int]) -> list[int]:
    """The offsets whose line-table row is the only one starting at its address."""
    dw = DebugInfo(dwarf_sections(elfmod.open_elf(debug), []))
    addrs = np.concatenate([read_program(dw, u.stmt_list, u).addr for u in dw.units if u.stmt_list is not None])
    starts, counts = np.unique(addrs, return_counts=True)
    row = np.searchsorted(starts, np.array(offsets, np.uint64), side="right") - 1
    return [o for o, r in zip(offsets, row.tolist(), strict=True) if r >= 0 and counts[r] == 1]


def write_measurement(meas: Path, lib: Path, offsets: list[int]) -> None:
    """One thread: main (in an absent executable) calls into the library, one sample per offset."""
    meas.mkdir(parents=True)
    nodes = [(1, 0, 0, placeholder_code("^Primary")), (2, 1, 0, placeholder_code("| Main  ")),
             (3, 2, 1, 0x1134)]
    nodes += [(4 + i, 3, 2, off) for i, off in enumerate(offsets)]
    cct = np.zeros(len(nodes), CCT_NODE)
    for i, (nid, parent, lm, ip) in enumerate(nodes):
        cct[i] = (nid, parent, lm, ip, 1)
    leaves = np.array([n[0] for n in nodes[3:]], np.uint32)
    vals, index = pack_values(leaves, np.zeros(len(leaves)), np.full(len(leaves), 0.001), METRICS, cct["id"])
    id_tuple = np.zeros(3, ID_ELEMENT)
    id_tuple[0] = (1, 0x7F000001, 0)
    id_tuple[1] = (7 | (3 << 14), 0, 0)
    id_tuple[2] = (3 | (3 << 14), 0, 0)
    header = {"program-name": "app", "program-path": EXE, "env-path": "", "job-id": "", "mpi-rank": "0",
              "thread-id": "0", "host-id": "7f000001", "process-id": "4242", "trace-min-time": "0",
              "trace-max-time": "0", "trace-disorder": "0"}
    prof = HpcrunProfile(header=header, loadmap=[LoadModule(1, EXE, 1), LoadModule(2, str(lib), 1)], cct=cct,
                         metrics=METRICS, id_names=default_id_names(), id_tuple=id_tuple, values=vals, index=index)
    write_hpcrun(meas / "app-000000-000-7f000001-4242-0.hpcrun", prof)


def leaf_paths(db: Path, keep_loops: bool) -> set[tuple[tuple, ...]]:
    """The path of every leaf context below the executable's call site (leaf instructions are elided
    into their lines): (relation, kind, function name | file basename, line) from the top down; function
    entries and declaration lines are left out (hpcstruct and DWARF place them differently), as is the
    `` [libsample.so]`` hpcstruct appends to procedure names of a binary without a symbol table."""
    meta = metadb.read_metadb(db / "meta.db")
    keys = ContextNames(meta).keys
    parent = meta.contexts.parent.tolist()  # row of the parent context, -1 at the top
    inner = set(parent)
    out = set()
    for r in range(len(keys)):
        if r in inner or keys[r][1] == "instruction" and keys[r][5] == EXE:
            continue
        steps = []
        p = r
        while p >= 0:
            rel, lex, func, file, line, module, _ = keys[p]
            if lex == "instruction" and module == EXE:
                break
            if lex == "function":
                name = (func[0] or "").removesuffix(" [libsample.so]")  # hpcstruct's mark of a stripped binary
                steps.append((rel if rel != "call" else None, lex, name))
            elif lex == "line":
                steps.append((rel if rel != "lexical" else None, lex, os.path.basename(file or ""), line))
            elif lex == "loop" and keep_loops:
                steps.append((None, lex, os.path.basename(file or ""), line))
            elif lex == "instruction":
                steps.append((None, lex, os.path.basename(module or "")))
            p = parent[p]
        out.add(tuple(reversed(steps)))
    return out


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> tuple[Path, Path, object]:
    """A stripped library with its debug file, its structure (read through the debug file), a measurement."""
    tmp = tmp_path_factory.mktemp("direct")
    lib = tmp / "lib" / "libsample.so"
    lib.parent.mkdir()
    debug = build_library(lib)
    structure = analyze_binary(lib)
    module = structure.module
    # Where several line rows share an address, hpcstruct takes the last and hpcprof the lowest line:
    # sample only addresses with one row, where the two tools agree by design.
    offsets = single_row(debug, statement_addresses(module, ("nest", "dispatch")))
    assert len(offsets) > 25
    meas = tmp / "app.m"
    write_measurement(meas, lib, offsets)
    (meas / "structs").mkdir()
    write_hpcstruct(meas / "structs" / "libsample.so.hpcstruct", structure.structure)
    return lib, meas, module


def test_without_structure_file_the_dwarf_gives_the_same_functions_inlining_and_lines(library, tmp_path):
    lib, meas, _ = library
    build(meas, tmp_path / "with.d")
    without = build(meas, tmp_path / "without.d", ignore_structs=True)
    assert str(lib) in without.binaries  # the binary was read, vouched for by the structure file
    assert not [w for w in without.warnings if "libsample" in w]
    chains = leaf_paths(tmp_path / "without.d", keep_loops=False)
    assert leaf_paths(tmp_path / "with.d", keep_loops=False) == chains and len(chains) > 12
    # What the source says: square_sum inlined into nest at line 19, its loop body at line 10.
    assert any(c[:2] == ((None, "function", "nest"), (None, "line", "sample.c", 19)) and
               c[2] == ("inlined_call", "function", "square_sum") for c in chains if len(c) > 2)
    assert any(("inlined_call", "function", "square_sum") in c and c[-1][-1] == 10 for c in chains)
    assert any(c and c[0] == (None, "function", "dispatch") for c in chains)
    # Loops come only from the structure file.
    loops_with = sum(1 for c in leaf_paths(tmp_path / "with.d", keep_loops=True) for s in c if s[1] == "loop")
    loops_without = sum(1 for c in leaf_paths(tmp_path / "without.d", keep_loops=True) for s in c
                        if s[1] == "loop")
    assert loops_with > 0 and loops_without == 0


def test_debug_file_found_by_build_id(library, tmp_path, monkeypatch):
    """The same library without a .gnu_debuglink: its DWARF is found under <debug root>/.build-id/xx/."""
    lib = tmp_path / "lib" / "libsample.so"
    lib.parent.mkdir()
    debug = build_library(lib, debuglink=False)
    bid = elfmod.open_elf(lib).build_id
    assert bid
    root = tmp_path / "debugroot"
    (root / ".build-id" / bid[:2]).mkdir(parents=True)
    shutil.move(debug, root / ".build-id" / bid[:2] / (bid[2:] + ".debug"))
    monkeypatch.setattr(elfmod, "DEBUG_ROOT", str(root))
    _, meas0, module = library
    meas = tmp_path / "app.m"
    write_measurement(meas, lib, statement_addresses(module, ("nest",)))
    build(meas, tmp_path / "db.d", ignore_structs=True)
    chains = leaf_paths(tmp_path / "db.d", keep_loops=True)
    assert any(("inlined_call", "function", "square_sum") in c for c in chains)
    assert all(c and c[0] == (None, "function", "nest") and c[-1][1] == "line" for c in chains)


def test_a_rebuilt_library_at_the_same_path_is_refused_in_one_line(library, tmp_path):
    lib, meas0, module = library
    meas = tmp_path / "app.m"
    shutil.copytree(meas0, meas)
    saved = lib.read_bytes()
    try:  # new code in front of everything moves every function
        build_library(lib, extra="int padding(int x) { int s = 0; for (int i = 0; i < x; i++) s += i * x;"
                                  " return s; }\n")
        result = build(meas, tmp_path / "db.d", ignore_structs=True)
    finally:
        lib.write_bytes(saved)
    mine = [w for w in result.warnings if str(lib) in w and "falls in" not in w]
    assert len(mine) == 1 and "\n" not in mine[0], mine
    assert "not the measured binary" in mine[0] and "of the" in mine[0] and "are at their address" in mine[0]
    cost = [w for w in result.warnings if f"falls in {lib}, which has no structure file" in w]
    assert len(cost) == 1 and "--binaries DIR" in cost[0], result.warnings  # what it costs, and the fix
    assert str(lib) not in result.binaries
    chains = leaf_paths(tmp_path / "db.d", keep_loops=True)
    assert chains and all(c == ((None, "instruction", "libsample.so"),) for c in chains)  # stay instructions


@pytest.mark.skipif(not shutil.which("clang-14"), reason="clang-14 is needed for this case")
def test_dwarf5_file_index_zero_gives_lines(tmp_path):
    """clang numbers the primary source file 0 (DWARF 5 §6.2.4). Real hpcprof takes only file indices
    above 0 and shows no line and no declaration file for such code; hpcsa shows them."""
    lib = tmp_path / "lib" / "libsample.so"
    lib.parent.mkdir()
    build_library(lib, compiler="clang-14")
    module = analyze_binary(lib).module
    meas = tmp_path / "app.m"
    write_measurement(meas, lib, statement_addresses(module, ("nest",)))
    build(meas, tmp_path / "db.d", ignore_structs=True)
    chains = leaf_paths(tmp_path / "db.d", keep_loops=True)
    assert chains and all(c[0] == (None, "function", "nest") and c[-1][:3] == (None, "line", "sample.c")
                          for c in chains)
    meta = metadb.read_metadb(tmp_path / "db.d" / "meta.db")
    fn = meta.functions
    nest = [i for i in range(len(fn)) if fn.names[i] == "nest"]
    assert nest and meta.files[int(fn.file[nest[0]])].endswith("sample.c") and int(fn.line[nest[0]]) == 14
