"""Lexical chains computed while phase 1 reads: class 2 finds them done, and the database does not change."""

from __future__ import annotations

import filecmp
import os
from pathlib import Path

import pytest

from hpcsa.aggregate import driver
from hpcsa.aggregate.inputs import find_inputs
from hpcsa.aggregate.phase1 import chain_warmer as phase1_chain_warmer
from hpcsa.aggregate.phase1 import unify as phase1_unify
from hpcsa.formats.hpcstruct.model import Module
from hpcsa.ingest.synth.directory import generate
from hpcsa.ingest.synth.program import SynthSpec

FILES = ("meta.db", "profile.db", "cct.db", "trace.db", "metrics/default.yaml")


@pytest.fixture(scope="module")
def meas(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("warm") / "app.m"
    generate(out, SynthSpec.preset("cpu", 48, threads_per_rank=8, contexts=1500, leaves=60, seed=5))
    return out


def _run(meas: Path, out: Path, monkeypatch: pytest.MonkeyPatch, *, warm: bool, cache: Path, jobs: int = 1
         ) -> dict[str, int]:
    """One aggregation; the statements whose lexical path was worked out in phase 1 and in class 2."""
    monkeypatch.setenv("HPCSA_CACHE_DIR", str(cache))
    counts = {"phase 1": 0, "class 2": 0}
    where = ["phase 1"]
    real_paths, real_expand = Module.lexical_paths, phase1_unify.expand

    def lexical_paths(self: Module, leaves: list[int]) -> list:
        counts[where[0]] += len(leaves)
        return real_paths(self, leaves)

    def expand(*args: object) -> phase1_unify.Expansion:
        where[0] = "class 2"
        return real_expand(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(Module, "lexical_paths", lexical_paths)
    monkeypatch.setattr(phase1_unify, "expand", expand)
    if not warm:
        monkeypatch.setattr(phase1_chain_warmer.ChainWarmer, "add_points", lambda self, raw: None)
    driver.aggregate(find_inputs([str(meas)]), driver.Options(output=str(out), jobs=jobs, progress=False))
    monkeypatch.undo()
    return counts


def test_class_two_finds_the_chains_done_and_the_database_is_the_same(meas: Path, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    cold = _run(meas, tmp_path / "off.d", monkeypatch, warm=False, cache=tmp_path / "cache-off")
    assert cold["phase 1"] == 0 and cold["class 2"] > 100  # without the warmer class 2 does it all
    # A cold cache: the structure file is parsed after the first batch's offsets arrive (they wait for it);
    # then a warm cache: it is mapped before them.
    for label in ("cold", "warm"):
        got = _run(meas, tmp_path / f"{label}.d", monkeypatch, warm=True, cache=tmp_path / "cache-on")
        assert got == {"phase 1": cold["class 2"], "class 2": 0}, label  # each statement once, all in phase 1
        for name in FILES:
            assert filecmp.cmp(tmp_path / "off.d" / name, tmp_path / f"{label}.d" / name, shallow=False), name
    assert os.listdir(tmp_path / "cache-on")  # (the second run did use the parsed-structure cache)


def test_workers_and_warmer_give_the_same_database(meas: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _run(meas, tmp_path / "j1.d", monkeypatch, warm=False, cache=tmp_path / "c1")
    got = _run(meas, tmp_path / "j2.d", monkeypatch, warm=True, cache=tmp_path / "c2", jobs=2)
    assert got["class 2"] == 0
    for name in FILES:
        assert filecmp.cmp(tmp_path / "j1.d" / name, tmp_path / "j2.d" / name, shallow=False), name


def test_chains_worked_out_in_small_batches_give_the_same_database(meas: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Statements are expanded CHAIN_BATCH at a time (bounded memory); any batch size, the same contexts."""
    from hpcsa.aggregate import lexical

    whole = _run(meas, tmp_path / "whole.d", monkeypatch, warm=False, cache=tmp_path / "c1")
    monkeypatch.setattr(lexical, "CHAIN_BATCH", 7)
    small = _run(meas, tmp_path / "small.d", monkeypatch, warm=False, cache=tmp_path / "c2")
    assert small == whole  # each statement once
    for name in FILES:
        assert filecmp.cmp(tmp_path / "whole.d" / name, tmp_path / "small.d" / name, shallow=False), name
