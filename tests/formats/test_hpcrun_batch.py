"""Reading ``.hpcrun`` files as a batch gives what reading them one by one gives: the same profiles, the same
tree rows, and for a batch holding a bad file the same one-line refusal, of its first bad file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hpcsa.core.errors import HpcsaError
from hpcsa.formats.measurement import hpcrun_batch
from hpcsa.formats.measurement.hpcrun import (
    CCT_NODE,
    END_SENTINEL,
    HpcrunProfile,
    LoadModule,
    MetricDesc,
    encode_hpcrun,
    pack_values,
    placeholder_code,
    read_hpcrun_tree,
)
from hpcsa.formats.measurement.hpcrun_batch import read_hpcrun_batch
from tests.conftest import assert_one_line_error, run_cli
from tests.fuzzing import mutate

ID_TUPLE = np.zeros(0, dtype=[("kind", ">u2"), ("physical", ">u8"), ("logical", ">u8")])


def _one_by_one(paths: list[Path]) -> list[tuple[HpcrunProfile, np.ndarray, np.ndarray]] | str:
    """What the reader of one file gives for each file, or the first refusal."""
    try:
        return [read_hpcrun_tree(p) for p in paths]
    except HpcsaError as exc:
        return str(exc)


def _batch(paths: list[Path]) -> list[tuple[HpcrunProfile, np.ndarray, np.ndarray]] | str:
    try:
        batch = read_hpcrun_batch(paths)
    except HpcsaError as exc:
        return str(exc)
    assert batch.cut.tolist() == np.cumsum([0] + [len(p.cct) for p in batch.profiles]).tolist()
    assert batch.cct.tobytes() == b"".join(p.cct.tobytes() for p in batch.profiles)
    return [(p, *batch.rows(k)) for k, p in enumerate(batch.profiles)]


def _assert_same(got: list | str, want: list | str) -> None:
    if isinstance(want, str) or isinstance(got, str):
        assert got == want
        return
    assert len(got) == len(want)
    for (p, order, parent), (q, order_q, parent_q) in zip(got, want, strict=True):
        assert (p.path, p.header, p.loadmap, p.metrics, p.id_names) == (q.path, q.header, q.loadmap, q.metrics,
                                                                         q.id_names)
        for name in ("cct", "id_tuple", "values", "index"):
            a, b = getattr(p, name), getattr(q, name)
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
        assert order.tolist() == order_q.tolist() and parent.tolist() == parent_q.tolist()


def _real_profiles(hpctoolkit_data: Path) -> list[Path]:
    found = sorted((hpctoolkit_data / "meas").rglob("*.hpcrun"))
    return [p for p in found if p.read_bytes()[18:23] == b"04.00"]


def test_real_measurements_read_as_one_batch(hpctoolkit_data: Path) -> None:
    paths = _real_profiles(hpctoolkit_data)
    assert len(paths) >= 10
    want = _one_by_one(paths)
    assert not isinstance(want, str), want
    _assert_same(_batch(paths), want)


def test_fuzzed_batches_are_refused_as_file_by_file(hpctoolkit_data: Path, tmp_path: Path) -> None:
    """Each batch: three real profiles with one mutated (cut, flipped, overwritten...) among them."""
    good = _real_profiles(hpctoolkit_data)
    refused = 0
    for seed in range(120):
        rng = np.random.default_rng(seed)
        picks = [good[int(i)] for i in rng.choice(len(good), 3, replace=False)]
        bad = tmp_path / f"case{seed}.hpcrun"
        bad.write_bytes(mutate(picks[0].read_bytes(), seed))
        paths = picks[1:]
        paths.insert(int(rng.integers(0, 3)), bad)
        want = _one_by_one(paths)
        refused += isinstance(want, str)
        _assert_same(_batch(paths), want)
    assert refused > 40  # the mutations do break files


# -- each rule of the tree and the sparse values, broken in a file that is otherwise well formed ------------

def _profile(ids: list[int], parents: list[int], value_nodes: list[int], metric_ids: list[int] | None = None
             ) -> HpcrunProfile:
    cct = np.zeros(len(ids), CCT_NODE)
    cct["id"], cct["parent"] = ids, parents
    cct["lm_id"] = [0 if p == 0 else 1 for p in parents]
    cct["lm_ip"] = [placeholder_code("PrimRoot") if p == 0 else 0x1000 + 16 * i for i, p in enumerate(parents)]
    cct["flags"] = 1
    metrics = [MetricDesc("CPUTIME (sec)", period=1000), MetricDesc("COUNT", val_fmt=1)]
    n = len(value_nodes)
    vals, index = pack_values(np.array(value_nodes), np.array(metric_ids or [0] * n), np.ones(n), metrics,
                              np.array([i for i in ids if i in value_nodes] or [0]))
    return HpcrunProfile(header={"program-name": "x", "mpi-rank": "0"}, loadmap=[LoadModule(1, "/bin/x", 1)],
                         cct=cct, metrics=metrics, id_names=[(1, "NODE")], id_tuple=ID_TUPLE, values=vals,
                         index=index)


def _with_index(data: bytes, edit) -> bytes:  # type: ignore[no-untyped-def]
    """``data`` with its sparse index (sentinel included) changed by ``edit`` in place."""
    buf = bytearray(data)
    footer = np.frombuffer(data, ">u8", 14, len(data) - 112)
    at = int(footer[10]) + 2  # identifier tuple: empty
    n_vals, n_nodes = int.from_bytes(buf[at:at + 8], "big"), int.from_bytes(buf[at + 8:at + 12], "big")
    start = at + 12 + 10 * n_vals
    index = np.frombuffer(bytes(buf[start:start + 12 * (n_nodes + 1)]),
                          [("node", ">u4"), ("start", ">u8")]).copy()
    edit(index)
    buf[start:start + len(index.tobytes())] = index.tobytes()
    return bytes(buf)


def _with_first_metric(data: bytes, metric: int) -> bytes:
    """``data`` with its first sparse value's metric id changed."""
    footer = np.frombuffer(data, ">u8", 14, len(data) - 112)
    at = int(footer[10]) + 2 + 12 + 8  # empty identifier tuple, the counts, the first value's bits
    return data[:at] + metric.to_bytes(2, "big") + data[at + 2:]


def _good() -> bytes:
    return encode_hpcrun(_profile([1, 2, 3, 4], [0, 1, 2, 2], [3, 4], [0, 1]))


def _set(field: str, changes: dict[int, int]):  # type: ignore[no-untyped-def]
    def edit(index: np.ndarray) -> None:
        for row, value in changes.items():
            index[field][row] = value
    return edit


BROKEN = {
    "a node id is 0": lambda: encode_hpcrun(_profile([1, 0, 3], [0, 1, 1], [3])),
    "two nodes share an id": lambda: encode_hpcrun(_profile([1, 2, 2], [0, 1, 1], [2])),
    "a parent is missing": lambda: encode_hpcrun(_profile([1, 2, 3], [0, 1, 9], [3])),
    "a child before its parent": lambda: encode_hpcrun(_profile([1, 3, 2], [0, 2, 1], [3])),
    "values for a node not in the tree": lambda: _with_index(_good(), _set("node", {0: 7})),
    "the index does not end with the sentinel": lambda: _with_index(_good(), _set("node", {-1: END_SENTINEL + 1})),
    "the sentinel is not at the value count": lambda: _with_index(_good(), _set("start", {-1: 1})),
    "index starts descend": lambda: _with_index(_good(), _set("start", {1: 3})),  # 0, 3, 2 (the sentinel)
    "values before the first context": lambda: _with_index(_good(), _set("start", {0: 1})),
    "a value names an undeclared metric": lambda: _with_first_metric(_good(), 5),
}


@pytest.mark.parametrize("rule", list(BROKEN))
def test_each_rule_is_checked_by_the_batch(rule: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    good, bad = tmp_path / "good.hpcrun", tmp_path / "bad.hpcrun"
    good.write_bytes(_good())
    bad.write_bytes(BROKEN[rule]())
    assert not isinstance(_one_by_one([good, good]), str)
    want = _one_by_one([good, bad, good])
    assert isinstance(want, str) and "bad.hpcrun" in want, want
    # The batch checks themselves find it (not only the reader of one file, had it been asked).
    checked: list[object] = []
    real = hpcrun_batch._checked
    monkeypatch.setattr(hpcrun_batch, "_checked", lambda *a: checked.append(real(*a)) or checked[-1])
    _assert_same(_batch([good, bad, good]), want)
    assert checked == [None]
    _assert_same(_batch([good, good]), _one_by_one([good, good]))
    assert checked[-1] is not None


def test_a_batch_of_none_and_of_one(tmp_path: Path) -> None:
    assert read_hpcrun_batch([]).profiles == []
    one = tmp_path / "one.hpcrun"
    one.write_bytes(_good())
    _assert_same(_batch([one]), _one_by_one([one]))


def test_values_before_the_first_context_are_one_line(tmp_path: Path) -> None:
    """The first context's values start at value 0: a file saying otherwise has values of no context (``dump``
    used to fail on it with a traceback)."""
    bad = tmp_path / "bad.hpcrun"
    bad.write_bytes(BROKEN["values before the first context"]())
    proc = run_cli("dump", str(bad))
    assert_one_line_error(proc, str(bad))
    assert "starts at value 1, not 0" in proc.stderr


def test_files_the_reader_of_one_accepts_are_read_whatever_the_batch_said(
        hpctoolkit_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the batch checks refuse and the reader of one file accepts every file (one rewritten between the
    two readings), the batch is the files read one by one, with the same columns."""
    paths = _real_profiles(hpctoolkit_data)[:6]
    want = _batch(paths)
    monkeypatch.setattr(hpcrun_batch, "_checked", lambda *args: None)
    _assert_same(_batch(paths), want)
