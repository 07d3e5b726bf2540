"""The writer pieces the aggregation uses: streaming profile.db, cct.db by ranges, trace.db regions,
meta.db elision, metrics taxonomy generation, and atomicity when a writer is interrupted."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from hpcsa.formats.db import cctdb, database, metadb, metricsyaml, profiledb, tracedb
from hpcsa.formats.db.metricsyaml import MetricRef

# -- profile.db ----------------------------------------------------------------------------------------


def _values(seed: int, n_ctx: int = 50, n_metric: int = 6) -> profiledb.ProfileValues:
    rng = np.random.default_rng(seed)
    n = 200
    ctx = rng.integers(0, n_ctx, n)
    met = rng.integers(0, n_metric, n)
    key = np.unique(ctx * 1000 + met)
    return profiledb.ProfileValues.from_triples(key // 1000, key % 1000, rng.random(len(key)) + 0.5)


def test_from_triples_sorts_and_drops_zeros() -> None:
    v = profiledb.ProfileValues.from_triples([7, 3, 7, 3, 9], [2, 5, 1, 0, 4], [1.5, 2.5, 0.0, 3.5, 4.5])
    assert v.ctx_ids.tolist() == [3, 7, 9]
    assert v.starts.tolist() == [0, 2, 3]
    assert v.metric_ids.tolist() == [0, 5, 2, 4]
    assert v.values.tolist() == [3.5, 2.5, 1.5, 4.5]
    assert v.get(3) == {0: 3.5, 5: 2.5} and v.get(8) == {}
    with pytest.raises(ValueError, match="two values for context 3, metric 0"):
        profiledb.ProfileValues.from_triples([3, 3], [0, 0], [1.0, 2.0])


def test_profiledb_streaming_with_chosen_offsets_and_workers(tmp_path: Path) -> None:
    """Blobs placed at caller-chosen offsets (as workers with a shared counter do) read back in index order."""
    tuples = [[(1, 1, 0, 0xABC), (3, 0, t, t)] for t in range(4)]
    vals = {i: _values(i) for i in range(5)}
    out = tmp_path / "profile.db"
    with profiledb.ProfileDBWriter(out, tuples) as w:
        blobs = {i: profiledb.ProfileBlob.encode(vals[i]) for i in (3, 1, 4, 2)}
        # A "worker" places profile 3 and 1 itself through the temporary file...
        fd = os.open(w.temp_path, os.O_WRONLY)
        for i in (3, 1):
            at = w.allocate(blobs[i].size)
            profiledb.write_blob_at(fd, at, blobs[i])
            w.record(i, blobs[i], at)
        os.close(fd)
        # ...the owner writes the others, then the summary last.
        w.write_profile(4, blobs[4])
        w.write_profile(2, vals[2])
        w.write_summary(vals[0])
        assert not out.exists(), "nothing under the final name before the writer completes"
    pdb = profiledb.ProfileDB(out)
    assert len(pdb) == 5 and pdb.is_summary(0) and not pdb.is_summary(1)
    for i in range(5):
        got = pdb.profile(i)
        assert np.array_equal(got.ctx_ids, vals[i].ctx_ids) and np.array_equal(got.values, vals[i].values)
        assert np.array_equal(got.metric_ids, vals[i].metric_ids)
    assert pdb.id_tuple(2)["logicalId"].tolist() == [0, 1]
    assert profiledb.id_tuple_text(pdb.id_tuple(2), metadb.DEFAULT_ID_NAMES) == "NODE 0 [0xabc] / THREAD 1"
    # Layout rules: 48-byte infos at 0x40, tuples right after, blobs 4-aligned.
    raw = out.read_bytes()
    assert raw[0x3C] == 48 and int.from_bytes(raw[0x38:0x3C], "little") == 5
    assert (pdb.p_values % 4 == 0).all() and (pdb.p_ctx_indices % 4 == 0).all()
    assert raw.endswith(b"_prof.db")


def test_profiledb_blobs_placed_many_at_once_equal_one_by_one(tmp_path: Path) -> None:
    """allocate_many/record_many (blobs copied by the caller) write the same file as write_profile per blob."""
    tuples = [[(3, 0, t, t)] for t in range(4)]
    blobs = [profiledb.ProfileBlob.encode(_values(i, n_ctx=5 + 7 * i)) for i in range(1, 5)]
    with profiledb.ProfileDBWriter(tmp_path / "one.db", tuples) as w:
        for i, b in enumerate(blobs, start=1):
            w.write_profile(i, b)
        w.write_summary(_values(0))
    with profiledb.ProfileDBWriter(tmp_path / "many.db", tuples) as w:
        sizes = np.array([b.size for b in blobs])
        offsets = w.allocate_many(sizes)
        assert (offsets % 4 == 0).all() and (np.diff(offsets) >= sizes[:-1]).all()
        for b, at in zip(blobs, offsets.tolist(), strict=True):
            profiledb.write_blob_at(w.fileno, at, b)
        w.record_many(np.arange(1, 5), [b.n_values for b in blobs], [b.n_ctxs for b in blobs], offsets, sizes)
        with pytest.raises(ValueError, match="already written"):
            w.record_many(np.array([2]), [1], [1], offsets[:1], sizes[:1])
        w.write_summary(_values(0))
    assert (tmp_path / "one.db").read_bytes() == (tmp_path / "many.db").read_bytes()


def test_profiledb_rejects_misuse(tmp_path: Path) -> None:
    with profiledb.ProfileDBWriter(tmp_path / "p.db", [[(3, 0, 0, 0)]]) as w:
        w.write_profile(1, _values(1))
        with pytest.raises(ValueError, match="already written"):
            w.write_profile(1, _values(1))
        with pytest.raises(ValueError, match="reserved area"):
            w.record(0, profiledb.ProfileBlob.encode(_values(2)), 8)
    # An unwritten summary is an empty block, still readable.
    assert len(profiledb.ProfileDB(tmp_path / "p.db").summary()) == 0


def _no_files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_interrupted_profiledb_writer_leaves_nothing(tmp_path: Path) -> None:
    def source():
        yield _values(1)
        yield _values(2)
        raise RuntimeError("source failed midway")

    with pytest.raises(RuntimeError, match="midway"), \
            profiledb.ProfileDBWriter(tmp_path / "profile.db", [[(3, 0, t, t)] for t in range(3)]) as w:
        for i, vals in enumerate(source(), start=1):
            w.write_profile(i, vals)
    assert _no_files(tmp_path) == []


def test_interrupted_cct_trace_meta_and_yaml_writers_leave_nothing(shared_data: Path, tmp_path: Path) -> None:
    small = shared_data / "hpctoolkit" / "dbase" / "small.d"
    layout = cctdb.CctLayout.from_counts([0, 2], [0, 1])
    with pytest.raises(ValueError, match="has 1 values but the layout reserved 2"), \
            cctdb.CctDBWriter(tmp_path / "cct.db", layout) as w:
        w.write_range(0, 2, cctdb.sort_values(np.array([1]), np.array([0]), np.array([1]), np.array([1.0])))
    with pytest.raises(ValueError, match="not sorted"), \
            tracedb.TraceDBWriter(tmp_path / "trace.db", [1], reserve=[4]) as t:
        t.write_trace(0, tracedb.elements(np.array([5, 3]), np.array([1, 1])))
    meta = metadb.read_metadb(small / "meta.db")
    meta.contexts.function[0] = 99  # a dangling function index: the writer fails while encoding
    with pytest.raises(ValueError, match="function index is outside"):
        metadb.write_metadb(tmp_path / "meta.db", meta)
    assert _no_files(tmp_path) == []

    class Exploding(dict):
        def items(self):  # the document fails while being written out
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        metricsyaml.write_metrics_yaml(tmp_path / "default.yaml", Exploding(version=0))
    assert _no_files(tmp_path) == []


def test_interrupted_database_writer_leaves_no_directory(shared_data: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    db = database.open_database(shared_data / "hpctoolkit" / "dbase" / "small.d")

    def failing(*args, **kwargs):
        raise RuntimeError("trace writer failed")

    monkeypatch.setattr(tracedb, "write_tracedb", failing)
    with pytest.raises(RuntimeError, match="trace writer failed"):
        database.write_database(tmp_path / "out.d", db)
    assert _no_files(tmp_path) == []


# -- cct.db --------------------------------------------------------------------------------------------


def test_cct_paths_agree(tmp_path: Path) -> None:
    """cct.db from flat values, from a profile.db transpose (1 and 3 ranges) and from counts: same bytes."""
    profiles = {i: _values(10 + i, n_ctx=40) for i in range(1, 5)}
    pdb_path = tmp_path / "profile.db"
    with profiledb.ProfileDBWriter(pdb_path, [[(3, 0, t, t)] for t in range(4)]) as w:
        for i, v in profiles.items():
            w.write_profile(i, v)
        w.write_summary(_values(0))
    ctx = np.concatenate([v.value_ctx_ids() for v in profiles.values()])
    met = np.concatenate([v.metric_ids for v in profiles.values()])
    prof = np.concatenate([np.full(len(v), i) for i, v in profiles.items()])
    val = np.concatenate([v.values for v in profiles.values()])
    n_ctxs = 45  # ids 40..44 have no data but exist (e.g. contexts without values)
    cctdb.write_cctdb(tmp_path / "flat.db", n_ctxs, cctdb.RangeValues(ctx, met, prof, val))
    layout = cctdb.write_cctdb_from_profiledb(pdb_path, tmp_path / "t1.db", n_ctxs)
    cctdb.write_cctdb_from_profiledb(pdb_path, tmp_path / "t3.db", n_ctxs, layout=layout, range_bytes=1)
    assert len(layout.ranges(256)) > 2
    flat = (tmp_path / "flat.db").read_bytes()
    assert flat == (tmp_path / "t1.db").read_bytes() == (tmp_path / "t3.db").read_bytes()
    c = cctdb.CctDB(tmp_path / "flat.db")
    assert len(c) == n_ctxs
    # Spot check against the profiles directly.
    for ctx_id in (0, 7, 39):
        for m in range(6):
            expect = {p: v.get(ctx_id).get(m) for p, v in profiles.items() if v.get(ctx_id).get(m)}
            assert c.context(ctx_id).get(m) == expect
    assert len(c.context(44)) == 0
    assert (c.p_values % 4 == 0).all()


# -- trace.db ------------------------------------------------------------------------------------------


def test_tracedb_reserved_regions_and_time_range(tmp_path: Path) -> None:
    lines = [tracedb.elements(np.array([10, 20, 30]), np.array([0, 5, 0])),
             tracedb.elements(np.array([], np.uint64), np.array([], np.uint32)),
             tracedb.elements(np.array([15, 40]), np.array([2, 2]))]
    out = tmp_path / "trace.db"
    with tracedb.TraceDBWriter(out, [1, 2, 3], reserve=[5, 1, 2]) as w:
        for slot in (2, 0, 1):  # any order: the regions are reserved
            w.write_trace(slot, lines[slot])
    t = tracedb.TraceDB(out)
    assert (t.min_timestamp, t.max_timestamp) == (10, 40)
    assert t.prof_index.tolist() == [1, 2, 3]
    for i in range(3):
        assert np.array_equal(t.trace(i), lines[i])
    # Data starts after the 3 headers (0x40 + 3 * 0x18); regions are align8(capacity * 12) = 64, 16, 24;
    # the footer follows the last region.
    assert t.p_start.tolist() == [0x88, 0x88 + 64, 0x88 + 64 + 16]
    assert out.stat().st_size == 0x88 + 64 + 16 + 24 + 8
    with tracedb.TraceDBWriter(tmp_path / "e.db", [1]) as w:
        pass
    empty = tracedb.TraceDB(tmp_path / "e.db")
    assert (empty.min_timestamp, empty.max_timestamp) == (tracedb.NO_MIN_TIMESTAMP, tracedb.NO_MAX_TIMESTAMP)



def test_tracedb_headers_written_early_give_the_same_file(tmp_path: Path) -> None:
    """write_heads_now (hpcsa prof, once every line is in) writes the same bytes as writing them at the end,
    and refuses where regions were not reserved (a line's place is known only when it is written)."""
    lines = [tracedb.elements(np.array([10, 20, 30]), np.array([0, 5, 0])),
             tracedb.elements(np.array([15, 40]), np.array([2, 2]))]
    for name, early in (("late.db", False), ("early.db", True)):
        with tracedb.TraceDBWriter(tmp_path / name, [1, 2], reserve=[5, 2]) as w:
            for slot, line in enumerate(lines):
                w.write_trace(slot, line)
            if early:
                w.write_heads_now()
                assert len(w.starts) == 0  # let go
    assert (tmp_path / "early.db").read_bytes() == (tmp_path / "late.db").read_bytes()
    # lines written by other processes into their regions, their lengths noted at once (hpcsa prof's phase 2)
    with tracedb.TraceDBWriter(tmp_path / "lengths.db", [1, 2], reserve=[5, 2]) as w:
        for slot, line in enumerate(lines):
            start, capacity = w.region(slot)
            assert capacity == [5, 2][slot]
            with open(w.temp_path, "r+b") as fh:
                os.pwrite(fh.fileno(), line.tobytes(), start)
        with pytest.raises(ValueError, match="trace slot 1: 3 elements do not fit"):
            w.record_lengths(np.array([1, 3]))
        with pytest.raises(ValueError, match="1 line lengths for 2 traces"):
            w.record_lengths(np.array([1]))
        w.record_lengths(np.array([len(line) for line in lines], np.uint32))
        w.min_timestamp, w.max_timestamp = 10, 40
        w.write_heads_now()
    assert (tmp_path / "lengths.db").read_bytes() == (tmp_path / "late.db").read_bytes()
    with pytest.raises(ValueError, match="reserved"), tracedb.TraceDBWriter(tmp_path / "u.db", [1]) as w:
        w.write_heads_now()

# -- meta.db -------------------------------------------------------------------------------------------


def _meta_with(tree: metadb.ContextTree) -> metadb.MetaDB:
    return metadb.MetaDB(title="t", modules=["/bin/app"], module_flags=np.zeros(1, np.uint32), files=["/src/a.c"],
                         file_flags=np.zeros(1, np.uint32),
                         functions=metadb.Functions(["main", "<gpu kernel>"], np.array([0, -1], np.int32),
                                                    np.array([0x40, 0], np.uint64), np.array([0, -1], np.int32),
                                                    np.array([3, 0], np.uint32), np.zeros(2, np.uint32)),
                         contexts=tree)


def test_instruction_contexts_are_elided_and_children_hoisted(tmp_path: Path) -> None:
    # main -> line a.c:4 -> instruction (lexical, elided) -> <gpu kernel> (call)
    #                    -> line a.c:5
    entry = [metadb.EntryPoint(1, 1, "main thread")]
    tree = metadb.ContextTree.from_columns(
        entry, ctx_id=[2, 3, 4, 5, 6], parent=[-1, 0, 1, 2, 0],
        relation=[1, 0, 0, 1, 0], lexical_type=[0, 2, 3, 0, 2],
        function=[0, -1, -1, 1, -1], file=[-1, 0, -1, -1, 0], line=[0, 4, 0, 0, 5],
        module=[-1, -1, 0, -1, -1], offset=[0, 0, 0x99, 0, 0])
    meta = _meta_with(tree)
    metadb.write_metadb(tmp_path / "meta.db", meta)
    back = metadb.read_metadb(tmp_path / "meta.db").contexts
    assert back.ctx_id.tolist() == [2, 3, 5, 6]
    assert back.parent.tolist() == [-1, 0, 1, 0]
    assert back.function[2] == 1 and back.relation[2] == metadb.CALL
    # Without elision the instruction stays, in its place.
    metadb.write_metadb(tmp_path / "full.db", meta, elide=False)
    full = metadb.read_metadb(tmp_path / "full.db").contexts
    assert full.ctx_id.tolist() == [2, 3, 4, 5, 6] and full.offset[2] == 0x99


def test_from_columns_orders_any_input_into_preorder() -> None:
    entry = [metadb.EntryPoint(1, 1, "main thread"), metadb.EntryPoint(9, 2, "application thread")]
    # rows given children-first and interleaved across entry points
    tree = metadb.ContextTree.from_columns(
        entry, ctx_id=[12, 11, 10, 20, 13], parent=[2, 2, -1, -1, 0], entry=[0, 0, 0, 1, 0],
        relation=[0] * 5, lexical_type=[2] * 5, file=[0] * 5, line=[1, 2, 3, 4, 5])
    assert tree.ctx_id.tolist() == [10, 12, 13, 11, 20]
    assert tree.parent.tolist() == [-1, 0, 1, 0, -1]
    assert tree.depth.tolist() == [0, 1, 2, 1, 0]
    assert tree.subtree_size.tolist() == [4, 2, 1, 1, 1]
    assert tree.children(0).tolist() == [1, 3] and tree.children(-2).tolist() == [4]
    assert tree.row_of(np.array([13, 1, 99])).tolist() == [2, -1, -1]
    sparse = metadb.ContextTree.from_columns(entry[:1], ctx_id=[5, 3_000_000_000], parent=[-1, 0],
                                             relation=[1, 1], lexical_type=[0, 0])
    assert sparse.row_of(np.array([3_000_000_000, 5, 6])).tolist() == [1, 0, -1] and sparse.row_of(5) == 0


@pytest.mark.parametrize("shape", ["deep", "wide"])
def test_large_trees_round_trip(tmp_path: Path, shape: str) -> None:
    n = 5000 if shape == "deep" else 50000
    parent = np.arange(-1, n - 1) if shape == "deep" else np.r_[-1, np.zeros(n - 1, np.int64)]
    rng = np.random.default_rng(3)
    kind = rng.integers(0, 3, n)  # function / line / loop with a point
    tree = metadb.ContextTree.from_columns(
        [metadb.EntryPoint(1, 1, "main thread")], ctx_id=np.arange(2, n + 2), parent=parent,
        relation=np.where(kind == 0, 1, 0), lexical_type=np.choose(kind, [0, 2, 1]),
        function=np.where(kind == 0, 0, -1), file=np.where(kind > 0, 0, -1), line=np.arange(n),
        module=np.where(kind == 2, 0, -1), offset=np.arange(n) * 4)
    metadb.write_metadb(tmp_path / "meta.db", _meta_with(tree))
    back = metadb.read_metadb(tmp_path / "meta.db").contexts
    for col in metadb.CONTEXT_COLUMNS:
        assert np.array_equal(getattr(back, col), getattr(tree, col)), col
    assert int(back.depth.max()) == (n - 1 if shape == "deep" else 1)


# -- metrics/default.yaml ------------------------------------------------------------------------------


def test_formula_parser_precedence() -> None:
    names = [f"m{i}" for i in range(5)]
    parse = metricsyaml.parse_hpcrun_formula
    a, b, c = MetricRef("m0"), MetricRef("m1"), MetricRef("m2")
    assert parse("#0 + #1 * #2", names) == {"+": [a, {"*": [b, c]}]}
    assert parse("#0 - #1 - #2", names) == {"-": [{"-": [a, b]}, c]}  # left-associative
    assert parse("#0 ^ #1 ^ 2", names) == {"^": [a, {"^": [b, 2]}]}  # right-associative
    assert parse("100*#2/#1", names) == {"/": [{"*": [100, c]}, b]}
    assert parse("-(#0) + 0.5", names) == {"+": [{"-": [a]}, 0.5]}
    assert parse("min(100, max(0, #1))", names) == {"min": [100, {"max": [0, b]}]}
    for bad in ("#9", "#0 +", "(#0", "foo(#0)", "#0 $ #1"):
        with pytest.raises(ValueError, match="invalid metric formula"):
            parse(bad, names)


# Scalars YAML 1.1 reads as something other than a string unless quoted (booleans, null, numbers, dates...),
# their near misses, and strings that need no quotes.
TRICKY_SCALARS = ["yes", "Yes", "YES", "yEs", "no", "No", "NO", "on", "On", "OFF", "off", "true", "False", "tRUE",
                  "null", "Null", "NULL", "nULL", "~", "y", "n", "N", "0", "12", "-3", "+7", "1.5", ".5", "1e3",
                  "1_000", "0x1f", "0o17", "0b101", ".inf", "-.Inf", ".NaN", "190:20:30", "2001-12-14", "<<", "=",
                  "-", "1.", "12e", "number", "percent", "$$", "1 + 2", "CPUTIME (sec)", "ñull", "Yes please",
                  "0x", "yes!"]


@pytest.mark.parametrize("flow", [False, True])
def test_scalars_read_back_as_the_same_strings(flow: bool) -> None:
    """Every string the writer emits, plain or quoted, loads back (PyYAML, YAML 1.1) as that string."""
    from hpcsa.formats.db.metricsyaml_write import _string

    for s in TRICKY_SCALARS:
        text = _string(s, flow)
        doc = f"[{text}]" if flow else f"k: {text}"
        back = yaml.safe_load(doc)
        assert (back[0] if flow else back["k"]) == s, (s, text)
    assert _string("number", flow) == "number" and _string("$$", False) == "$$"  # plain where it can be
    assert _string("yes", flow) == '"yes"' and _string("1.5", flow) == '"1.5"'


def test_a_usual_taxonomy_is_written_without_importing_yaml(tmp_path: Path) -> None:
    """Writing metrics/default.yaml needs PyYAML's resolver only for scalars that may read as numbers."""
    code = ("import sys\n"
            "from hpcsa.formats.db import metricsyaml\n"
            "spec = metricsyaml.MetricSpec('CPUTIME (sec)', 'CPUTIME (sec)', statistics=('Sum',), order_id=0)\n"
            f"metricsyaml.write_metrics_yaml({str(tmp_path / 'd.yaml')!r}, metricsyaml.standard_taxonomy([spec], []))\n"
            "print('yaml' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
    assert "metric: CPUTIME (sec)" in (tmp_path / "d.yaml").read_text()


def test_statistics_variants_and_partials(tmp_path: Path) -> None:
    spec = metricsyaml.MetricSpec("REALTIME (sec)", "real time", statistics=("Sum", "Mean", "StdDev", "Max"),
                                  order_id=1)
    hidden = metricsyaml.MetricSpec("X", "hidden one", statistics=("Sum",), visibility="hidden", order_id=2)
    extra = metricsyaml.ExtraStatSpec("RATIO", "x per realtime", {"/": [MetricRef("X"), MetricRef("REALTIME (sec)")]},
                                      scopes=("lex_aware", "function", "point"), show_percent=False, format="%6.2f",
                                      order_id=3)
    tax = metricsyaml.standard_taxonomy([spec, hidden], [extra])
    # Partials in hpcprof's order: count, sum, x^2, max - for each of execution, lex_aware, function.
    first = [(i.formula, i.combine) for i in tax.inputs if i.metric == "REALTIME (sec)" and i.scope == "execution"]
    assert first == [("1", "sum"), ("$$", "sum"), ("($$^2)", "sum"), ("$$", "max")]
    assert len([i for i in tax.inputs if i.metric == "REALTIME (sec)"]) == 12
    text = metricsyaml.dumps(tax)
    assert "&REALTIMEx20_x28_secx29_-sum-1-execution" in text
    assert "&REALTIMEx20_x28_secx29_-sum-x5b_0x0x5d_x20_x5e_x20_2-execution" in text
    assert "&REALTIMEx20_x28_secx29_-max-x5b_0x0x5d_-function" in text
    assert "visible by default: false" in text and 'format: "%6.2f"' in text
    assert not text.endswith("\n")
    (tmp_path / "default.yaml").write_text(text)
    back = metricsyaml.read_metrics_yaml(tmp_path / "default.yaml")
    assert back.document == tax.document
    real = back.roots[0]
    assert list(real["variants"]) == ["Sum", "Mean", "StdDev", "Max"]
    mean = real["variants"]["Mean"]["formula"]["inclusive"]["standard"]
    assert list(mean) == ["/"] and [x.formula for x in mean["/"]] == ["$$", "1"]
    assert real["variants"]["Sum"]["render"] == ["number", "percent"]
    assert real["variants"]["Mean"]["render"] == ["number"]
    ratio = back.roots[2]
    assert "inclusive" not in ratio["variants"][""]["formula"]
    std = ratio["variants"][""]["formula"]["exclusive"]["standard"]["/"]
    assert [(x.metric, x.scope) for x in std] == [("X", "function"), ("REALTIME (sec)", "function")]


@pytest.mark.parametrize("big", [1, 3, 1 << 30])
def test_cct_blocks_are_the_same_bytes_copied_or_scattered(big: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A range's blocks, each context's {Val} records copied as one slice (contexts of ``big`` values or more)
    or scattered by position, are the same bytes, and read back as the values given (context by context:
    metric ids, their first values, profiles and values)."""
    rng = np.random.default_rng(7)
    rows = sorted({(int(c), int(m), int(p)) for c, m, p in zip(rng.integers(0, 9, 300), rng.integers(0, 4, 300),
                                                                 rng.integers(1, 40, 300), strict=True)})
    ctx = np.array([r[0] for r in rows], np.uint32)
    mid = np.array([r[1] for r in rows], np.uint16)
    prof = np.array([r[2] for r in rows], np.uint32)
    val = rng.random(len(rows))
    n_values = np.bincount(ctx, minlength=10)
    n_metrics = np.array([len({m for c, m, _ in rows if c == k}) for k in range(10)])
    layout = cctdb.CctLayout.from_counts(n_values, n_metrics)
    values = cctdb.RangeValues(ctx, mid, prof, val)
    want = bytes(cctdb.encode_blocks(layout, 0, 10, values))
    monkeypatch.setattr(cctdb, "BIG_BLOCK", big)
    got = bytes(cctdb.encode_blocks(layout, 0, 10, values))
    assert got == want
    base = int(layout.offsets[0])
    for k in range(10):
        at = int(layout.offsets[k]) - base
        n, nm = int(n_values[k]), int(n_metrics[k])
        recs = np.frombuffer(got[at:at + cctdb.SZ_VALUE * n], cctdb.VALUE)
        mine = ctx == k
        assert recs["profIndex"].tolist() == prof[mine].tolist() and recs["value"].tolist() == val[mine].tolist()
        idx = np.frombuffer(got[at + cctdb.SZ_VALUE * n:at + cctdb.SZ_VALUE * n + cctdb.SZ_METRIC_INDEX * nm],
                            cctdb.METRIC_INDEX)
        mids = mid[mine]
        firsts = np.flatnonzero(np.r_[True, mids[1:] != mids[:-1]]) if n else np.zeros(0, np.int64)
        assert idx["metricId"].tolist() == mids[firsts].tolist() and idx["startIndex"].tolist() == firsts.tolist()
