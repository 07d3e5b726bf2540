"""Per-profile state of ``hpcsa prof`` as columns (aggregate/profile_table.py, hpcsa/core/ragged.py).

The tables must give back exactly the per-profile records they were built from (through concatenation,
remapping and reordering, as phase 1's shares are merged and class 2 sorts the profiles), and must hold
no Python object per profile: checked on a run's class-2 tables by counting live record objects and by
the pickled size (what is broadcast to MPI ranks), which may grow by the column bytes alone.
"""

from __future__ import annotations

import copy
import gc
import os
import pickle
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from hpcsa.aggregate import driver
from hpcsa.aggregate.inputs import find_inputs
from hpcsa.aggregate.phase2 import share as phase2_share
from hpcsa.aggregate.profile_table import ProfileFacts, ProfileInput, ProfileInputs, ProfileTable
from hpcsa.core.ragged import Ragged
from hpcsa.formats.measurement.hpcrun import ID_ELEMENT
from hpcsa.ingest.synth.replicate import replicate

TINY = Path(__file__).resolve().parents[2] / "fixtures" / "measurements" / "tiny.m"  # 2 profiles with traces


def test_ragged_take_and_concat_are_those_of_the_lists() -> None:
    rng = np.random.default_rng(5)
    lists = [rng.integers(0, 100, rng.integers(0, 5)) for _ in range(40)]
    r = Ragged.of(lists, np.int64)
    assert len(r) == 40 and r.lengths.tolist() == [len(x) for x in lists]
    order = rng.permutation(40)[:25]
    taken = r.take(order)
    assert [t.tolist() for t in taken] == [lists[i].tolist() for i in order]
    both = Ragged.concat([taken, Ragged.of(lists[:3], np.int64), Ragged.of([], np.int64)])
    assert [t.tolist() for t in both] == [lists[i].tolist() for i in order] + [x.tolist() for x in lists[:3]]
    assert Ragged.from_lengths(np.arange(6), [2, 0, 4])[2].tolist() == [2, 3, 4, 5]


@pytest.mark.parametrize("width", [0, 1, 3])
def test_ragged_take_of_rows_of_one_length_is_that_of_the_lists(width: int) -> None:
    """Rows all of one length (a run's identifier tuples) are taken as a table: the same rows and offsets
    as the lists give, from a Ragged whose rows array is longer than its rows (a view's) too."""
    rng = np.random.default_rng(width)
    lists = [rng.integers(0, 100, width) for _ in range(30)]
    order = rng.permutation(30)[:20]
    for r in (Ragged.of(lists, np.int64), Ragged(np.concatenate([*lists, [7, 7]]), Ragged.of(lists, np.int64).offsets)):
        taken = r.take(order)
        assert [t.tolist() for t in taken] == [lists[i].tolist() for i in order]
        assert taken.offsets.tolist() == (np.arange(21) * width).tolist() and len(taken.rows) == 20 * width


def _inputs(root: str) -> list[ProfileInput]:
    odd = os.fsdecode(b"\xff-odd.hpcrun")  # a name that is not UTF-8 (os.listdir gives it escaped)
    out = []
    for k, (folder, name) in enumerate([("a.m", "p-0.hpcrun"), ("a.m", "p-1.hpcrun"), ("b.m", odd),
                                         ("b.m/sub", "q.hpcrun"), ("", "loose.hpcrun")]):
        path = os.path.join(root, folder, name)
        trace = path[: -len(".hpcrun")] + ".hpctrace" if k % 2 == 0 else None
        out.append(ProfileInput(path, trace, 100 + k, 10 * k if trace else 0, os.path.join(root, folder)))
    return out


def test_profile_inputs_give_back_what_they_were_built_from() -> None:
    a, b = _inputs("/data/x"), _inputs("/other")
    ta, tb = ProfileInputs.of(a), ProfileInputs.of(b)
    assert list(ta) == a and ta[-1] == a[-1]
    joined = ProfileInputs.concat([ta, tb])
    assert list(joined) == a + b
    assert list(joined.take([7, 0, 3])) == [(a + b)[i] for i in (7, 0, 3)]
    assert joined.paths() == [p.path for p in a + b] and joined.traces() == [p.trace for p in a + b]
    assert joined.cost.tolist() == [p.size + p.trace_size for p in a + b]
    paths = [p.path for p in a + b]
    assert joined.path_order().tolist() == [sorted(paths).index(p) for p in paths]
    assert list(pickle.loads(pickle.dumps(joined))) == a + b
    # all-ASCII paths are ordered by their bytes: the same order, folders that prefix others included
    plain = [p for p in a + b if p.path.isascii()] + [ProfileInput("/data/x/a.m-z.hpcrun", None, 1, 0, "/data/x")]
    paths = [p.path for p in plain]
    assert ProfileInputs.of(plain).path_order().tolist() == [sorted(paths).index(p) for p in paths]
    with pytest.raises(IndexError):
        joined[len(a + b)]
    # sizes are held in 4 bytes where they fit, in 8 where not; a profile's cost is summed in 8 either way
    big = [replace(p, size=s, trace_size=t if p.trace else 0)
           for p, s, t in zip(a, [0xF0000000, 5 << 30, 1, 2, 3], [0xF0000000] * 5, strict=True)]
    narrow, wide = ProfileInputs.of(big[:1] + big[2:]), ProfileInputs.of(big)
    assert (narrow.size.dtype, narrow.trace_size.dtype, wide.size.dtype) == (np.uint32, np.uint32, np.int64)
    assert narrow.cost.tolist() == [p.size + p.trace_size for p in big[:1] + big[2:]] and narrow.cost[0] > 1 << 32
    joined = ProfileInputs.concat([narrow, wide])
    assert list(joined) == big[:1] + big[2:] + big and joined.size.dtype == np.int64
    with pytest.raises(ValueError, match="not named after"):
        ProfileInputs.of([ProfileInput("/m/p.hpcrun", "/m/elsewhere.hpctrace", 1, 1, "/m")])


def _facts(inputs: list[ProfileInput], seed: int) -> list[ProfileFacts]:
    rng = np.random.default_rng(seed)
    out = []
    for k, inp in enumerate(inputs):
        tup = np.zeros(rng.integers(1, 4), ID_ELEMENT)
        tup["kind"], tup["physical"] = rng.integers(1, 8, len(tup)), rng.integers(0, 1 << 40, len(tup))
        kept = (f"/scratch/phase1-{seed}-{k % 2}.arrays", int(rng.integers(0, 1 << 30)), 64) if k != 1 else None
        out.append(ProfileFacts(inp, tup, k % 3, k % 2, 7 * k, (k + 1) % 2, kept))
    return out


def _same(a: ProfileFacts, b: ProfileFacts) -> bool:
    return (a.input, a.trace_disorder, a.metrics, a.trace_records, a.loadmap, a.kept) == \
        (b.input, b.trace_disorder, b.metrics, b.trace_records, b.loadmap, b.kept) and \
        a.id_tuple.tobytes() == b.id_tuple.tobytes()


def test_profile_table_merges_remaps_and_reorders_like_the_records() -> None:
    fa, fb = _facts(_inputs("/r0"), 1), _facts(_inputs("/r1"), 2)
    ta, tb = ProfileTable.of(fa), ProfileTable.of(fb)
    assert all(_same(x, y) for x, y in zip(ta, fa, strict=True))
    # shares merged as phase1_survey.merge does: each share's metric tables and load maps renumbered
    joined = ProfileTable.concat([ta.remapped([4, 2], [1, 0]), tb.remapped([3, 5], [0, 1])])
    want = [ProfileFacts(f.input, f.id_tuple, f.trace_disorder, [4, 2][f.metrics], f.trace_records,
                         [1, 0][f.loadmap], f.kept) for f in fa] + \
           [ProfileFacts(f.input, f.id_tuple, f.trace_disorder, [3, 5][f.metrics], f.trace_records,
                         [0, 1][f.loadmap], f.kept) for f in fb]
    assert len(joined) == len(want) and all(_same(x, y) for x, y in zip(joined, want, strict=True))
    assert len(joined.kept_files) == 4  # two scratch files per share, named once each
    order = np.random.default_rng(3).permutation(len(want))
    assert all(_same(x, want[i]) for x, i in zip(joined.take(order), order.tolist(), strict=True))
    back = pickle.loads(pickle.dumps(joined))
    assert all(_same(x, y) for x, y in zip(back, want, strict=True))


def test_concat_taking_is_concat_and_lets_go_of_the_parts() -> None:
    """Joined from parts handed over (phase 1's merges), the union is the one :meth:`ProfileTable.concat`
    makes, the list is emptied, and no part's column is kept alive by the union or the list."""
    import weakref

    parts = [ProfileTable.of(_facts(_inputs(f"/r{k}"), k)) for k in range(3)]
    want = ProfileTable.concat(parts)
    names = [weakref.ref(p.inputs) for p in parts]  # (the parts' nested columns: freed once let go)
    handed = list(parts)
    del parts
    got = ProfileTable.concat_taking(handed)
    assert handed == [] and all(r() is None for r in names)
    assert len(got) == len(want) and all(_same(x, y) for x, y in zip(got, want, strict=True))
    assert got.kept_files == want.kept_files and got.kept_file.tolist() == want.kept_file.tolist()
    one = ProfileTable.of(_facts(_inputs("/r9"), 9))
    assert ProfileTable.concat_taking([one]) is one


def test_take_taking_is_take_and_lets_go_of_the_table() -> None:
    """Reordered from a table handed over (class 2's reorder into profile.db's order), the result is the one
    :meth:`ProfileTable.take` makes, the list is emptied, and none of the table's columns is kept alive."""
    import weakref

    table = ProfileTable.concat([ProfileTable.of(_facts(_inputs(f"/r{k}"), k)) for k in range(3)])
    order = np.random.default_rng(4).permutation(len(table))
    want = table.take(order)
    refs = [weakref.ref(table.inputs), weakref.ref(table.inputs.names), weakref.ref(table.id_tuple.rows),
            weakref.ref(table.kept_offset)]
    handed = [table]
    del table
    got = ProfileTable.take_taking(handed, order)
    assert handed == [] and all(r() is None for r in refs)
    assert len(got) == len(want) and all(_same(x, y) for x, y in zip(got, want, strict=True))
    assert got.kept_files == want.kept_files and got.inputs.dirs == want.inputs.dirs


def _class_two(src: Path, tmp: Path, copies: int, monkeypatch: pytest.MonkeyPatch):
    """Replicate ``src`` ``copies`` times, run ``hpcsa prof`` on it and return its class-2 tables (taken
    where phase 2 starts: a shallow copy, since the run lets go of the profiles and identifier tuples once
    phase 2 and profile.db's layout are done with them)."""
    meas = tmp / f"x{copies}.m"
    replicate(src, meas, copies, seed=copies)
    got = []
    real = phase2_share.run

    def spy(c2, *args, **kwargs):
        got.append(copy.copy(c2))
        got.append(c2)
        return real(c2, *args, **kwargs)

    monkeypatch.setattr(phase2_share, "run", spy)
    driver.aggregate(find_inputs([str(meas)]), driver.Options(output=str(tmp / f"x{copies}.d"), jobs=1,
                                                                   progress=False))
    # the run itself held neither the profiles' table nor the identifier tuples through phase 3
    assert len(got[1].profiles) == 0 and len(got[1].id_tuples) == 0 and len(got[0].profiles) == 2 * copies
    return got[0]


def _records_alive() -> int:
    gc.collect()
    return sum(isinstance(o, (ProfileFacts, ProfileInput)) for o in gc.get_objects())


def _column_bytes(c2) -> int:
    t = c2.profiles
    arrays = [t.inputs.folder, t.inputs.measdir, t.inputs.names, t.inputs.size,
              t.inputs.trace_size, t.inputs.has_trace, t.id_tuple.rows, t.id_tuple.offsets, t.trace_disorder,
              t.metrics, t.trace_records, t.loadmap, t.kept_file, t.kept_offset, t.kept_size,
              c2.id_tuples.rows, c2.id_tuples.offsets, c2.trace_reserve]
    return sum(a.nbytes for a in arrays)


def test_class_two_holds_no_python_object_per_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _records_alive()
    small = _class_two(TINY, tmp_path, 4, monkeypatch)    # 8 profiles
    large = _class_two(TINY, tmp_path, 32, monkeypatch)   # 64 profiles
    assert (len(small.profiles), len(large.profiles)) == (8, 64)
    # no ProfileFacts / ProfileInput kept alive by the tables (64 profiles would leave 64 or more)
    assert _records_alive() - before <= 2
    assert len(large.profiles.inputs.dirs) <= 2 and len(large.profiles.kept_files) <= 2  # (folder, measdir)
    # pickled (what the other MPI ranks receive): the growth is the columns' bytes, not an object each
    per_profile = {}
    for c2 in (small, large):
        size = len(pickle.dumps((c2.profiles, c2.id_tuples, c2.trace_reserve), protocol=pickle.HIGHEST_PROTOCOL))
        per_profile[len(c2.profiles)] = (size, _column_bytes(c2))
    (s8, c8), (s64, c64) = per_profile[8], per_profile[64]
    grown, columns = (s64 - s8) / 56, (c64 - c8) / 56
    assert grown <= columns + 4, (grown, columns)
    # here 60 column bytes: the few bytes where the file names differ (packed), 12 numbers of at most 4
    # bytes (trace_reserve is trace_records, pickled once) and the offsets of the identifier tuples, which
    # profile.db's sink has taken by then; the records pickled one object each took 350 bytes a profile
    assert columns < 80 and grown < 80, (grown, columns)
    # and the tables read back as the records of the run, in profile.db's order
    paths = [f.input.path for f in large.profiles]
    assert len(set(paths)) == 64 and all(p.startswith(str(tmp_path / "x32.m") + os.sep) for p in paths)
    assert large.trace_reserve.tolist() == [f.trace_records for f in large.profiles]
    assert all(f.kept is not None for f in large.profiles)


def test_profile_order_is_python_tuple_order_then_path() -> None:
    """profile.db's order, sorted by columns, is the order of the tuples of (kind, logical id, physical
    id) per level as Python compares them (a tuple before those it is a prefix of), then of the paths."""
    from hpcsa.aggregate.phase1.id_tuples import profile_order
    from hpcsa.formats.db.profiledb import IDENTIFIER

    rng = np.random.default_rng(11)
    physical = [0, 5, 1 << 63, (1 << 64) - 1]
    levels = [[(int(rng.integers(0, 4)), int(rng.integers(0, 3)), physical[int(rng.integers(0, 4))])
               for _ in range(rng.integers(0, 4))] for _ in range(60)]
    levels += [levels[3][:1], levels[3], levels[7][:2], [], [(0, 0, 0)], [], levels[3] + [(0, 0, 0)]]  # prefixes,
    # equal tuples, and zeros that only the presence of a level tells from a missing one
    tuples = Ragged.of([np.array([(k, 0, lg, ph) for k, lg, ph in t], IDENTIFIER) for t in levels], IDENTIFIER)
    names = [f"/m{int(rng.integers(0, 3))}/p-{int(rng.integers(0, 10**6)):07d}-{i}.hpcrun" for i in range(len(levels))]
    facts = [ProfileFacts(ProfileInput(p, None, 1, 0, os.path.dirname(p)), np.zeros(0, ID_ELEMENT), 0, 0, 0)
             for p in names]
    table = ProfileTable.of(facts)
    order = profile_order(table.inputs, tuples)
    profiles, ordered = table.take(order), tuples.take(order)
    want = sorted(range(len(levels)), key=lambda i: (tuple(levels[i]), names[i]))
    assert [f.input.path for f in profiles] == [names[i] for i in want]
    assert [t.tolist() for t in ordered] == [tuples[i].tolist() for i in want]


def _finalized_one_by_one(tuples: list[list[tuple[int, int, int]]]) -> list[list[tuple[int, int, int, int]]]:
    """The rules, profile by profile: a GLOBAL logical id is the rank of the physical id among those of its
    kind (all profiles), a LOCAL one among those of its kind under the same (kind, physical id) path above
    it; generated and BOTH_VALID ids are marked physical; a logical id keeps 32 bits."""
    from hpcsa.formats.db.profiledb import IS_PHYSICAL
    from hpcsa.formats.measurement.hpcrun import BOTH_VALID, ID_KIND_MASK, LOGIC_GLOBAL, LOGIC_LOCAL

    groups: dict[object, set[int]] = {}
    for t in tuples:
        path: list[tuple[int, int]] = []
        for kind, phys, _ in t:
            k, interp = kind & ID_KIND_MASK, kind >> 14
            if interp in (LOGIC_GLOBAL, LOGIC_LOCAL):
                groups.setdefault((k,) if interp == LOGIC_GLOBAL else (tuple(path), k), set()).add(phys)
            path.append((k, phys))
    out = []
    for t in tuples:
        path, rows = [], []
        for kind, phys, logical in t:
            k, interp = kind & ID_KIND_MASK, kind >> 14
            if interp in (LOGIC_GLOBAL, LOGIC_LOCAL):
                logical = sorted(groups[(k,) if interp == LOGIC_GLOBAL else (tuple(path), k)]).index(phys)
            flags = IS_PHYSICAL if interp in (LOGIC_GLOBAL, LOGIC_LOCAL, BOTH_VALID) else 0
            rows.append((k, flags, logical & 0xFFFFFFFF, phys))
            path.append((k, phys))
        out.append(rows)
    return out


@pytest.mark.parametrize("block", [7, 1 << 16])
def test_identifier_tuples_finalized_together_follow_the_rules_profile_by_profile(
        block: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from hpcsa.aggregate.phase1 import id_tuples
    from hpcsa.aggregate.phase1.id_tuples import finalize_id_tuples
    from hpcsa.aggregate.profile_table import narrow_id_rows

    monkeypatch.setattr(id_tuples, "FINALIZE_BLOCK", block)  # (rows finalized a block at a time)
    from hpcsa.formats.measurement.hpcrun import BOTH_VALID, LOGIC_GLOBAL, LOGIC_LOCAL

    rng = np.random.default_rng(3)
    interps = [0, LOGIC_GLOBAL, LOGIC_LOCAL, BOTH_VALID]
    tuples = []
    for _ in range(300):
        depth = int(rng.integers(0, 5))
        tuples.append([(int(rng.integers(1, 4)) | (interps[int(rng.integers(0, 4))] << 14),
                        [0, 5, 9, 1 << 40, (1 << 64) - 1][int(rng.integers(0, 5))], int(rng.integers(0, 1 << 33)))
                       for _ in range(depth)])
    raw = Ragged.of([np.array(t, dtype=[("kind", "u2"), ("physical", "u8"), ("logical", "u8")]).astype(ID_ELEMENT)
                     for t in tuples], ID_ELEMENT)
    got = finalize_id_tuples(raw)
    want = _finalized_one_by_one(tuples)
    assert [got[i][["kind", "flags", "logicalId", "physicalId"]].tolist() for i in range(len(tuples))] == want
    # held narrow: profile.db's fields, packed, the physical ids as wide as the raw rows' (here 64 bits)
    assert got.rows.dtype.itemsize == 1 + 2 + 4 + 8
    small = [[(k, p & 0xFFFFFFFF, logical) for k, p, logical in t] for t in tuples]
    wide = Ragged.of([np.array(t, dtype=[("kind", "u2"), ("physical", "u8"), ("logical", "u8")]).astype(ID_ELEMENT)
                      for t in small], ID_ELEMENT)
    got = finalize_id_tuples(Ragged(narrow_id_rows(wide.rows), wide.offsets))  # (as phase 1's union holds them)
    assert got.rows.dtype.itemsize == 1 + 2 + 4 + 4
    assert [got[i][["kind", "flags", "logicalId", "physicalId"]].tolist() for i in range(len(small))] == \
        _finalized_one_by_one(small)


def test_narrowed_identifier_rows_keep_their_values_through_joins() -> None:
    """Phase 1's running union holds identifier rows narrowed to the widths their values need
    (:func:`narrow_id_rows`); joined with rows that need more, every value is kept (the widest fields win)."""
    from hpcsa.aggregate.profile_table import narrow_id_rows

    small = ProfileTable.of(_facts(_inputs("/r0"), 0))
    wide_facts = _facts(_inputs("/r1"), 1)
    wide_facts[2].id_tuple["logical"] = (1 << 40) + 3  # a logical id past 32 bits
    wide = ProfileTable.of(wide_facts)
    narrowed = [replace(t, id_tuple=Ragged(narrow_id_rows(t.id_tuple.rows), t.id_tuple.offsets)) for t in (small, wide)]
    assert narrowed[0].id_tuple.rows.dtype.itemsize < ID_ELEMENT.itemsize
    assert narrowed[1].id_tuple.rows.dtype["logical"] == np.dtype("<u8")
    joined = ProfileTable.concat_taking(list(narrowed))
    want = ProfileTable.concat([small, wide])
    for name in ("kind", "physical", "logical"):
        assert joined.id_tuple.rows[name].tolist() == want.id_tuple.rows[name].tolist(), name
    assert joined.id_tuple.offsets.tolist() == want.id_tuple.offsets.tolist()
