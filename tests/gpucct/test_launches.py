"""Launch contexts read from a small .hpcrun profile built in memory (written and read back)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hpcsa.core.binfmt import records
from hpcsa.formats.measurement.hpcrun import (
    CCT_NODE,
    ID_ELEMENT,
    VAL_FMT_INT,
    HpcrunProfile,
    LoadModule,
    MetricDesc,
    default_id_names,
    pack_values,
    placeholder_code,
    read_hpcrun,
    write_hpcrun,
)
from hpcsa.gpucct.launches import launch_contexts

KERNEL = placeholder_code("GPUKernl")


def profile(entry_gins: float = 0.0) -> HpcrunProfile:
    # id, parent, lm_id, lm_ip, flags (bit 0: unwound)
    nodes = [
        (1, 0, 1, 0x10, 1),        # CPU frame
        (3, 1, 0, KERNEL, 1),      # <gpu kernel> #1
        (4, 3, 5, 0x100, 1),       # kernel at 0x100 of gpubin 5, launched 7 times
        (5, 3, 5, 0x110, 0),       # PC sample in gpubin 5
        (6, 3, 6, 0x20, 0),        # PC sample in gpubin 6 (no kernel node for it)
        (7, 0, 1, 0x20, 1),        # another CPU frame
        (8, 7, 0, KERNEL, 1),      # <gpu kernel> #2
        (9, 8, 5, 0x200, 1),       # kernel without a launch count
        (10, 8, 5, 0x210, 0),
        (11, 8, 5, 0x204, 0),
        (12, 7, 1, 0x30, 1),       # a CPU child: not under a placeholder
    ]
    cct = records(CCT_NODE, len(nodes), **{k: [n[i] for n in nodes] for i, k in
                                            enumerate(("id", "parent", "lm_id", "lm_ip", "flags"))})
    metrics = [MetricDesc("GINS"), MetricDesc("GKER:COUNT", val_fmt=VAL_FMT_INT), MetricDesc("GINS:STL_ANY")]
    triples = [(4, 1, 7), *([(4, 0, entry_gins)] if entry_gins else []), (5, 0, 3), (5, 2, 1.5), (6, 0, 1), (10, 0, 2), (10, 2, 5), (11, 0, 4), (12, 0, 99)]
    vals, index = pack_values(np.array([t[0] for t in triples]), np.array([t[1] for t in triples]),
                              np.array([t[2] for t in triples], float), metrics, cct["id"])
    return HpcrunProfile(header={}, loadmap=[LoadModule(1, "/bin/app"), LoadModule(5, "a.gpubin"),
                                            LoadModule(6, "b.gpubin")],
                         cct=cct, metrics=metrics, id_names=default_id_names(),
                         id_tuple=records(ID_ELEMENT, 0), values=vals, index=index)


def test_launch_contexts_by_placeholder_and_gpu_binary(tmp_path: Path):
    path = tmp_path / "p.hpcrun"
    write_hpcrun(path, profile())
    first, second = launch_contexts(read_hpcrun(path))
    assert first.node == 3 and second.node == 8
    assert first.kernels == {5: {0x100: 7.0}} and first.kernel_nodes == {5: {0x100: 4}}
    assert second.kernels == {5: {0x200: 0.0}}  # a kernel node without GKER:COUNT still names the kernel
    assert first.modules == [5, 6] and second.modules == [5]
    # columns: the metrics with values under the placeholders (GINS, GKER:COUNT, GINS:STL_ANY), not node 12's
    assert first.metrics.tolist() == [0, 1, 2] and second.metrics is first.metrics
    s = first.samples[5]
    assert s.pcs.tolist() == [0x110] and s.values.tolist() == [[3, 0, 1.5]] and s.weight == 0
    assert first.samples[6].pcs.tolist() == [0x20] and first.samples[6].values.tolist() == [[1, 0, 0]]
    s = second.samples[5]
    assert sorted(zip(s.pcs.tolist(), s.values.tolist(), strict=True)) == [(0x204, [4, 0, 0]), (0x210, [2, 0, 5])]
    assert sorted(second.sample_nodes[5].tolist()) == [10, 11]


def test_no_placeholder_no_launch_contexts():
    prof = profile()
    prof.cct = prof.cct[prof.cct["lm_id"] != 0]
    prof.cct = prof.cct[prof.cct["parent"] != 3]
    prof.cct = prof.cct[prof.cct["parent"] != 8]
    assert launch_contexts(prof) == []


def test_columns_are_only_the_metrics_with_values():
    prof = profile()
    prof.metrics.insert(0, MetricDesc("CPUTIME (sec)"))  # shift ids: GINS is now 1, GKER:COUNT 2
    prof.values["metric"] += 1
    first, _ = launch_contexts(prof)
    assert first.metrics.tolist() == [1, 2, 3]
    assert first.samples[5].weight == 0 and first.kernels == {5: {0x100: 7.0}}


def test_samples_at_a_kernel_entry_are_shown_with_the_flat_ones(tmp_path: Path):
    """hpcrun keeps a sample at a kernel's entry pc on the kernel node (same module and pc under the
    placeholder, unwound = 1, beside GKER:COUNT). ``all_samples`` adds it to the flat samples, in the sample
    metrics' columns only (GINS and the columns sample rows use; not GKER:COUNT), so that a display of the
    launch context holds every sample: here 3 + 2.5 GINS in gpubin 5."""
    from hpcsa.gpucct.model import CallGraph
    from hpcsa.gpucct.reconstruct import reconstruct

    path = tmp_path / "p.hpcrun"
    write_hpcrun(path, profile(entry_gins=2.5))
    first, second = launch_contexts(read_hpcrun(path))
    assert first.samples[5].pcs.tolist() == [0x110]  # what the aggregation reconstructs is unchanged
    assert first.kernels == {5: {0x100: 7.0}}
    both = first.all_samples(5)
    assert both is not None and both.weight == 0
    assert sorted(zip(both.pcs.tolist(), both.values.tolist(), strict=True)) == [(0x100, [2.5, 0, 0]),
                                                                                 (0x110, [3, 0, 1.5])]
    assert first.all_samples(6) is first.samples[6]  # no kernel node in gpubin 6
    assert second.all_samples(5) is second.samples[5]  # its kernel node holds no samples
    rec = reconstruct(CallGraph([]), both, first.kernels[5])
    assert rec.totals()[0] == 5.5


def test_a_kernel_with_only_entry_samples_is_shown() -> None:
    """Without the flat sample of gpubin 5 under the first placeholder, its kernel's entry samples are all
    there is to show."""
    first, _ = launch_contexts(profile_without_node(5, entry_gins=2.5))
    assert 5 not in first.samples
    only = first.all_samples(5)
    assert only is not None and only.pcs.tolist() == [0x100] and only.values[:, 0].tolist() == [2.5]


def profile_without_node(node: int, entry_gins: float) -> HpcrunProfile:
    prof = profile(entry_gins)
    vnode = prof.value_nodes()
    keep_vals = vnode != node
    values = prof.values[keep_vals]
    nodes = vnode[keep_vals]
    prof.cct = prof.cct[prof.cct["id"] != node]
    vals, index = pack_values(nodes.astype(np.int64), values["metric"].astype(np.int64), prof.value_floats()[keep_vals],
                              prof.metrics, prof.cct["id"])
    prof.values, prof.index = vals, index
    return prof
