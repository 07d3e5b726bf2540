"""The structure file written straight from procedure groups (hpcsa.structure.x86.textbuild) is byte for byte what
the module path writes (analyze_binary, then write_hpcstruct), in one process and when the groups are dealt
to several, and a failure in a worker process ends as the one-line error of the parent."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from hpcsa.core.errors import FormatError, HpcsaError
from hpcsa.formats.hpcstruct.model import C, L, P, S
from hpcsa.formats.hpcstruct.writer import write_hpcstruct
from hpcsa.structure.binary import analyze_binary, write_structure
from hpcsa.structure.x86 import textbuild
from hpcsa.structure.x86.build import StructureBuilder
from tests.conftest import FIXTURES, SHARED_DATA

SAMPLE = FIXTURES / "structure" / "sample.so"


def _binaries(shared: Path | None) -> list[Path]:
    out = [SAMPLE]
    if shared is not None:
        big = shared / "hpctoolkit" / "bin" / "inlines+loops-x86_64-gcc12-dr"  # inline trees and loops
        if big.exists():
            out.append(big)
    return out


@pytest.fixture
def many_chunks(monkeypatch):
    """Every binary split, in chunks of a few blocks, whatever its size."""
    monkeypatch.setattr(textbuild, "SMALL_CODE", 0)
    monkeypatch.setattr(textbuild, "MIN_CHUNK_BLOCKS", 1)
    monkeypatch.setattr(textbuild, "CHUNKS_PER_JOB", 50)


@pytest.mark.parametrize("jobs", [1, 2, 3])
def test_text_is_the_module_rendered(tmp_path, jobs, many_chunks):
    for binary in _binaries(SHARED_DATA if SHARED_DATA.is_dir() else None):
        expected = tmp_path / "module.hpcstruct"
        result = analyze_binary(binary, lm_name="/some/where/" + binary.name)
        write_hpcstruct(expected, result.structure)
        got = tmp_path / f"text-{jobs}.hpcstruct"
        written = write_structure(binary, [got, tmp_path / "copy.hpcstruct"], lm_name="/some/where/" + binary.name,
                                  jobs=jobs)
        assert got.read_bytes() == expected.read_bytes(), binary
        assert (tmp_path / "copy.hpcstruct").read_bytes() == expected.read_bytes()
        m = result.module
        assert {k: written.counts.get(k, 0) for k in (P, L, S, C)} == {k: m.count(k) for k in (P, L, S, C)}
        assert written.notes == result.notes


@pytest.mark.parametrize("jobs", [1, 2])
def test_keep_holds_what_the_text_was_built_from(tmp_path, jobs, many_chunks):
    """``keep`` (a process that ends with its command) takes the builder, the procedure groups, the parts and
    the text instead of their being freed on return; the bytes written are the same."""
    plain, kept_path = tmp_path / "plain.hpcstruct", tmp_path / "kept.hpcstruct"
    write_structure(SAMPLE, [plain], lm_name="/x/sample.so", jobs=jobs)
    keep: list[object] = []
    write_structure(SAMPLE, [kept_path], lm_name="/x/sample.so", jobs=jobs, keep=keep)
    assert kept_path.read_bytes() == plain.read_bytes()
    flat = [x for item in keep for x in (item if isinstance(item, tuple) else (item,))]
    assert any(isinstance(x, StructureBuilder) for x in flat)
    assert any(isinstance(x, textbuild.StructureText) for x in flat)
    assert any(isinstance(x, dict) and x and all(isinstance(k, tuple) for k in x) for x in flat)  # the parts


def test_chunks_cover_every_group_once(many_chunks):
    from hpcsa.core.demangle import demangle
    from hpcsa.structure.debuginfo.source_info import read_source_info
    from hpcsa.structure.elf import open_elf
    from hpcsa.structure.x86.build import print_order
    from hpcsa.structure.x86.functions import discover_functions

    image = open_elf(str(SAMPLE))
    sb = StructureBuilder(image, read_source_info(image, demangle), demangle)
    sb.code, funcs, names = discover_functions(image)
    files = sb.skeleton(funcs, names)
    chunks = textbuild._chunks(files, print_order(files), funcs, 2)
    keys = [k for chunk in chunks for k in chunk]
    assert sorted(keys) == sorted(print_order(files))
    assert len(keys) == len(set(keys))
    assert len(chunks) > 2  # the sample has enough groups to be dealt in several chunks


def test_worker_failure_is_the_parents_one_line_error(tmp_path, many_chunks, monkeypatch):
    parent = os.getpid()
    real = StructureBuilder.fragments

    def fails_in_a_child(self, files, keys):
        if os.getpid() != parent:
            raise ValueError("damaged in a worker")
        time.sleep(0.05)  # leave chunks to the worker
        return real(self, files, keys)

    monkeypatch.setattr(StructureBuilder, "fragments", fails_in_a_child)
    out = tmp_path / "out.hpcstruct"
    with pytest.raises(FormatError, match="damaged in a worker"):
        write_structure(SAMPLE, [out], jobs=2)
    assert not out.exists()


def test_killed_worker_is_one_line_error(tmp_path, many_chunks, monkeypatch):
    parent = os.getpid()
    real = StructureBuilder.fragments

    def dies_in_a_child(self, files, keys):
        if os.getpid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(0.05)  # leave chunks to the worker
        return real(self, files, keys)

    monkeypatch.setattr(StructureBuilder, "fragments", dies_in_a_child)
    out = tmp_path / "out.hpcstruct"
    with pytest.raises(HpcsaError, match="worker process .* ended without its result"):
        write_structure(SAMPLE, [out], jobs=2)
    assert not out.exists()


def test_what_a_pause_made_leaves_the_youngest_generation_when_collection_resumes() -> None:
    """Left in generation 0, everything built during the pause was walked by the next collection (90 ms for
    python3.11d): it moves to the oldest generation instead, and the collector is on again as it was."""
    import gc

    assert gc.isenabled()
    with textbuild.gc_paused():
        assert not gc.isenabled()
        built = [[i] for i in range(50_000)]  # tracked containers
        assert gc.get_count()[0] >= 50_000
    oldest = gc.get_objects(generation=2)  # (a collection of the youngest now would have moved them to the next)
    assert gc.isenabled() and any(o is built[0] for o in oldest) and any(o is built[-1] for o in oldest)
    assert gc.get_freeze_count() == 0  # nothing left out of collections for good
    del oldest, built


def test_a_pause_in_a_process_that_froze_objects_keeps_them_frozen() -> None:
    """The ``hpcsa`` command freezes its imports: a pause there freezes what it made too, thaws nothing."""
    import gc

    assert gc.get_freeze_count() == 0
    mine = [[0]]
    gc.freeze()
    try:
        with textbuild.gc_paused():
            built = [[i] for i in range(1_000)]
        assert gc.get_freeze_count() >= 1_001 and gc.isenabled()
        assert not any(o is mine[0] or o is built[0] for g in range(3) for o in gc.get_objects(generation=g))
    finally:
        gc.unfreeze()
