"""Phase 1's cache lookups on a thread: needed files first, each once, what is not needed given up, errors
reaching the caller; and a run that uses them writes the database a run without a cache writes."""

from __future__ import annotations

import filecmp
import threading
from pathlib import Path

import pytest

from hpcsa.aggregate.inputs import StructInput
from hpcsa.aggregate.phase1 import cache_lookups as phase1_cache_lookups
from hpcsa.aggregate.phase1.cache_lookups import CacheLookups
from hpcsa.core.errors import HpcsaError
from tests.conftest import run_cli


def files(*names: str) -> list[StructInput]:
    """Structure files by name (never opened: the lookups are faked)."""
    return [StructInput(f"/structs/{n}.hpcstruct", f"/lib/{n}", None) for n in names]


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], threading.Event, threading.Event]:
    """Lookups recorded in order (the file's name); the first one sets ``looking`` and waits until ``go`` is
    set, so that the test can queue others behind it. "bad" raises; "new" has no entry."""
    order: list[str] = []
    go, looking = threading.Event(), threading.Event()

    def read_cached(path: str) -> str | None:
        name = Path(path).stem
        if not order:
            looking.set()
            assert go.wait(10)
        order.append(name)
        if name == "bad":
            raise HpcsaError(path, "unreadable")
        return None if name == "new" else f"entry of {name}"

    monkeypatch.setattr(phase1_cache_lookups, "read_cached", read_cached)
    return order, go, looking


def test_lookups_are_handed_back_in_order_once_done(held) -> None:
    order, go, looking = held
    with CacheLookups() as lookups:
        for s in files("first", "a", "b"):
            lookups.start(s)
        assert lookups.pending == 3
        assert list(lookups.finished()) == []  # nothing done yet, and no waiting
        go.set()
        done = [(Path(s.path).stem, entry) for s, entry in lookups.finished(wait=True)]
        assert not lookups.missed
        lookups.start(files("new")[0])
        assert [entry for _, entry in lookups.finished(wait=True)] == [None]
        assert lookups.missed  # a file without an entry: a first run
    assert order == ["first", "a", "b", "new"]
    assert done == [("first", "entry of first"), ("a", "entry of a"), ("b", "entry of b")]
    assert lookups.pending == 0


def test_a_lookup_that_fails_raises_in_the_caller(held) -> None:
    order, go, looking = held
    go.set()
    with CacheLookups() as lookups:
        for s in files("first", "bad", "after"):
            lookups.start(s)
        with pytest.raises(HpcsaError, match="unreadable"):
            list(lookups.finished(wait=True))
        assert [s.path for s, _ in lookups.finished(wait=True)] == ["/structs/after.hpcstruct"]


def test_closing_gives_up_what_is_queued(held) -> None:
    order, go, looking = held
    lookups = CacheLookups()
    for s in files("first", "a", "b"):
        lookups.start(s)
    assert looking.wait(10)
    threading.Timer(0.05, go.set).start()
    lookups.close()  # waits for the lookup under way only
    assert order == ["first"]


def test_only_the_structure_files_of_loaded_modules_are_looked_up(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Each run hashes the structure file of each sampled module once: a second run on the lookup thread
    where a CPU is spare (whether phase 1 has a worker or not), else in the reading process itself; a
    structure file of a module nothing loads is never read. The database is the one a run without a cache
    writes."""
    from hpcsa.aggregate import driver
    from hpcsa.aggregate.inputs import find_inputs
    from hpcsa.aggregate.phase1 import share as phase1_share
    from hpcsa.formats.hpcstruct import parsedcache
    from hpcsa.ingest.synth.directory import generate
    from hpcsa.ingest.synth.program import SynthSpec

    meas = tmp_path / "app.m"
    generate(meas, SynthSpec.preset("cpu", 48, contexts=600, seed=5))
    structs = meas / "structs"
    some = find_inputs([str(meas)]).structs[0]
    text = Path(some.path).read_text()
    module = some.module
    assert module is not None and f'n="{module}"' in text
    (structs / "unloaded.hpcstruct").write_text(text.replace(f'n="{module}"', 'n="/elsewhere/lib/libunloaded.so"'))

    monkeypatch.setenv("HPCSA_CACHE_DIR", "off")
    plain = tmp_path / "plain.d"
    assert run_cli("prof", str(meas), "-o", str(plain)).returncode == 0

    monkeypatch.setenv("HPCSA_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HPCSA_POOL_MIN_BYTES", "0")  # phase 1 in a pool, not in one go
    hashed: list[tuple[str, str]] = []
    digest_of = parsedcache._digest_of

    def logged(path: str) -> str | None:
        hashed.append((Path(path).name, threading.current_thread().name))
        return digest_of(path)

    monkeypatch.setattr(parsedcache, "_digest_of", logged)
    needed: list[str] = []
    # (-j, CPUs available): the first run fills the cache; a CPU is spare, or none is
    for run, (jobs, cpus) in enumerate([(1, 8), (1, 8), (2, 8), (2, 2)]):
        monkeypatch.setattr(phase1_share, "default_jobs", lambda cpus=cpus: cpus)
        hashed.clear()
        out = tmp_path / f"run{run}-j{jobs}.d"
        driver.aggregate(find_inputs([str(meas)]), driver.Options(output=str(out), jobs=jobs, progress=False))
        names = sorted(name for name, _ in hashed)
        threads = {thread for _, thread in hashed}
        if run == 0:  # each looked up once, and not found
            needed = names
            assert needed and len(set(needed)) == len(needed) and "unloaded.hpcstruct" not in needed, hashed
        else:  # the same files, found: nothing parsed, nothing hashed elsewhere
            assert names == needed, hashed
            assert threads == ({"hpcsa cache lookups"} if jobs < cpus else {threading.main_thread().name}), hashed
        for name in ("meta.db", "profile.db", "cct.db", "trace.db"):
            assert filecmp.cmp(plain / name, out / name, shallow=False), (run, name)
