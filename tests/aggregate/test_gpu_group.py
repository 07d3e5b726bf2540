"""GPU calling contexts reconstructed for a group of profiles at once, each shape of launch context once
(:mod:`hpcsa.aggregate.gpu_group`, :mod:`hpcsa.gpucct.shared`), are those reconstructed profile by profile
(:func:`hpcsa.aggregate.gpu_contexts.reconstruct_profile`), bit for bit: on real CUDA runs with PC samples
copied as many ranks whose weights differ (the same tree, other ratios), as their copies' samples drop out
(other shapes), and as a sample value becomes one no shape can reproduce."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hpcsa.aggregate import gpu_group
from hpcsa.aggregate.gpu_contexts import GroupGpu
from hpcsa.aggregate.inputs import find_inputs
from hpcsa.aggregate.phase0.gpu_graphs import read_gpu_structures
from hpcsa.aggregate.profile_nodes import _graphs, _loadmap_table, group_fields, group_gpu, profile_fields
from hpcsa.formats.measurement.hpcrun import pack_values, read_hpcrun, read_hpcrun_tree, write_hpcrun
from hpcsa.formats.measurement.hpcrun_batch import read_hpcrun_group


def _copies(src: Path, dst: Path, copies: int, seed: int) -> None:
    """``copies`` of every profile of ``src``, each sample value changed at random (whole numbers stay whole,
    none becomes 0); for every third copy a fifth of the values dropped."""
    dst.mkdir()
    (dst / "structs").symlink_to(src.resolve() / "structs")
    (dst / "gpubins").symlink_to(src.resolve() / "gpubins")
    rng = np.random.default_rng(seed)
    for f in sorted(src.glob("*.hpcrun")):
        base = read_hpcrun(f)
        metric = base.values["metric"].astype(np.int64)
        ints = np.array([m.is_int for m in base.metrics] or [False])[metric]
        for k in range(copies):
            vals = base.value_floats()
            vals = np.where(ints, vals + rng.integers(0, 4, len(vals)), vals * rng.uniform(0.5, 2, len(vals)))
            keep = rng.random(len(vals)) > 0.2 if k % 3 == 2 else np.ones(len(vals), bool)
            base.values, base.index = pack_values(base.value_nodes()[keep], metric[keep], vals[keep], base.metrics,
                                                  base.cct["id"])
            write_hpcrun(dst / f.name.replace("-000000-", f"-{k:06d}-", 1), base)
            base = read_hpcrun(f)


def _same(a: GroupGpu, b: GroupGpu) -> None:
    for name in GroupGpu.__dataclass_fields__:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), name


@pytest.mark.parametrize("meas", ["loops-cuda-nvidiapc-t.m", "recursion-cuda-nvidiapc-t.m"])
def test_a_group_gives_what_profile_by_profile_gives(hpctoolkit_data: Path, tmp_path: Path, meas: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _copies(hpctoolkit_data / "meas" / meas, tmp_path / "m", 7, seed=len(meas))
    inputs = find_inputs([str(tmp_path / "m")])
    env = read_gpu_structures(inputs.structs).env(0, None)
    assert env.has_graphs
    paths = [inputs.profiles.path(i) for i in range(len(inputs.profiles))]
    measdirs = [inputs.profiles.dirs[m] for m in inputs.profiles.measdir.tolist()]
    g = read_hpcrun_group(paths)
    assert g is not None
    module = group_fields(g, measdirs)[3]
    parts = []
    for i, path in enumerate(paths):
        prof, order, parent = read_hpcrun_tree(path)
        parts.append(profile_fields(prof, inputs.profiles[i], env, (order, parent)).gpu)
    want = GroupGpu.of_parts(parts, np.diff(g.cut))
    assert len(want.values) and len(want.parent)
    from hpcsa.gpucct import shared

    applied: list[int] = []
    real_apply = shared.apply_shape

    def counted(*args: object) -> tuple[np.ndarray, np.ndarray]:
        got = real_apply(*args)  # type: ignore[arg-type]
        applied.append(int(got[1].sum()))
        return got

    monkeypatch.setattr(shared, "apply_shape", counted)
    gpu_group._SHAPES.clear()
    _same(group_gpu(g, measdirs, env, module), want)  # every shape new
    _same(group_gpu(g, measdirs, env, module), want)  # every shape known
    assert sum(applied) >= len(paths) // 2  # most contexts took a shape's tree with their own ratios
    # a value no shape reproduces: that context alone, the others shared
    monkeypatch.setattr(shared, "_apply", _failing_first(shared._apply))
    gpu_group._SHAPES.clear()
    _same(group_gpu(g, measdirs, env, module), want)


def _failing_first(real):  # type: ignore[no-untyped-def]
    def apply(shape, values, weights):  # type: ignore[no-untyped-def]
        out, factor, ok = real(shape, values, weights)
        if len(ok) > 1:
            ok = ok.copy()
            ok[1] = False
        return out, factor, ok
    return apply


def test_shapes_are_reused_across_groups(hpctoolkit_data: Path, tmp_path: Path) -> None:
    """The ranks' copies of a launch context share one shape: it is reconstructed once per process."""
    _copies(hpctoolkit_data / "meas" / "loops-cuda-nvidiapc-t.m", tmp_path / "m", 4, seed=3)
    inputs = find_inputs([str(tmp_path / "m")])
    env = read_gpu_structures(inputs.structs).env(0, None)
    paths = [inputs.profiles.path(i) for i in range(len(inputs.profiles))]
    measdirs = [inputs.profiles.dirs[m] for m in inputs.profiles.measdir.tolist()]
    gpu_group._SHAPES.clear()
    for lo in range(0, len(paths), 2):  # groups of two profiles
        g = read_hpcrun_group(paths[lo:lo + 2])
        assert g is not None
        group_gpu(g, measdirs[lo:lo + 2], env, group_fields(g, measdirs[lo:lo + 2])[3])
    assert 1 <= len(gpu_group._SHAPES) <= 3  # every copy's shape (all values kept, or a fifth dropped)
    assert _loadmap_table.cache_info().hits and _graphs  # (the tables per load map are shared too)
