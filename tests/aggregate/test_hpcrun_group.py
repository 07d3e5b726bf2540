"""Profiles read as one group of columns (:func:`hpcsa.formats.measurement.hpcrun_batch.read_hpcrun_group`, what
phase 1 reads) are what the reader of one file gives of each (:func:`~hpcsa.formats.measurement.hpcrun.read_hpcrun_tree`
put together by :func:`~hpcsa.formats.measurement.hpcrun_batch.group_of`), on every real measurement; and a file the
group reader doubts gives None (the caller then reads file by file and gives the one-line refusal)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hpcsa.formats.measurement.hpcrun import read_hpcrun_tree
from hpcsa.formats.measurement.hpcrun_batch import HpcrunGroup, group_of, read_hpcrun_group

MEAS = ["small.m", "loops-cputime-t.m", "loops-perf.m", "loops-cuda-nvidia-t.m", "loops-cuda-nvidiapc-t.m",
        "loops-hip-amd-t.m", "recursion-cuda-nvidiapc-t.m"]


def _one_by_one(paths: list[str]) -> HpcrunGroup:
    read = [read_hpcrun_tree(p) for p in paths]
    return group_of([p for p, _, _ in read], [(o, r) for _, o, r in read])


def _same(a: HpcrunGroup, b: HpcrunGroup) -> None:
    assert len(a) == len(b)
    for name in ("cut", "cct", "order", "parent", "vcut", "values", "icut", "index", "tcut", "id_rows", "disorder"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes(), name
    assert a.programs == b.programs
    for k in range(len(a)):  # each profile's sections, whichever index the group gives them
        assert a.loadmaps[a.loadmap[k]] == b.loadmaps[b.loadmap[k]]
        assert a.metric_tables[a.metrics[k]] == b.metric_tables[b.metrics[k]]
        assert a.id_names[a.names[k]] == b.id_names[b.names[k]]


@pytest.mark.parametrize("meas", MEAS)
def test_a_group_is_its_files_read_one_by_one(hpctoolkit_data: Path, meas: str) -> None:
    paths = sorted(str(p) for p in (hpctoolkit_data / "meas" / meas).glob("*.hpcrun"))
    g = read_hpcrun_group(paths)
    assert g is not None
    _same(g, _one_by_one(paths))
    assert int(g.cut[-1]) == sum(len(read_hpcrun_tree(p)[0].cct) for p in paths)


def test_a_group_of_many_threads(shared_data: Path) -> None:
    """96 profiles of the real 1,024-thread run: the shared sections are parsed once per distinct section."""
    meas = shared_data / "hpctoolkit-extra" / "meas-cxx1024"
    if not meas.is_dir():
        pytest.skip("hpctoolkit-extra/meas-cxx1024 is not here")
    paths = sorted(str(p) for p in meas.glob("*.hpcrun"))[:96]
    g = read_hpcrun_group(paths)
    assert g is not None
    _same(g, _one_by_one(paths))
    assert len(g.loadmaps) < len(g) and len(g.metric_tables) < len(g)


@pytest.mark.parametrize("damage", ["truncated", "footer", "parent"])
def test_a_doubtful_file_sends_the_group_back(hpctoolkit_data: Path, tmp_path: Path, damage: str) -> None:
    paths = sorted((hpctoolkit_data / "meas" / "loops-cputime-t.m").glob("*.hpcrun"))
    copies = []
    for p in paths:
        (tmp_path / p.name).write_bytes(p.read_bytes())
        copies.append(str(tmp_path / p.name))
    bad = Path(copies[1])
    data = bytearray(bad.read_bytes())
    if damage == "truncated":
        data = data[:-9]
    elif damage == "footer":
        data[-1] ^= 0xFF  # the footer's magic
    else:  # a CCT node whose parent is itself: the tree check refuses it
        prof, _, _ = read_hpcrun_tree(bad)
        node = prof.cct[len(prof.cct) - 1]
        rec = node.tobytes()
        at = bytes(data).find(rec)
        assert at > 0
        fixed = np.frombuffer(rec, prof.cct.dtype).copy()
        fixed["parent"] = fixed["id"]
        data[at:at + len(rec)] = fixed.tobytes()
    bad.write_bytes(bytes(data))
    assert read_hpcrun_group(copies) is None
    assert read_hpcrun_group([copies[0], copies[2]]) is not None
