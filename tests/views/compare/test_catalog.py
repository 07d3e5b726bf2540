"""The run catalog: what each database records, and the user's metadata."""

from __future__ import annotations

import json

import pytest

from hpcsa.core.errors import HpcsaError
from hpcsa.views.compare import compare
from hpcsa.views.compare.catalog import parse_meta_options, read_meta_file, run_labels
from tests.views.compare.builders import METRIC, write_run


def test_labels_are_short_and_unique():
    assert run_labels(["x/run.d", "y/run.d", "z/other.d"]) == ["x/run", "y/run", "other"]
    assert run_labels(["a.d", "a.d"]) == ["a#1", "a#2"]


def test_meta_options():
    runs, labels = ["r1.d", "r2.d", "r3.d"], ["r1", "r2", "r3"]
    got = parse_meta_options(["nodes=1", "nodes=2", "nodes=4", "cc=gcc", "r2:cc=clang", "r3.d:note=a:b=c"],
                             runs, labels)
    assert got == [{"nodes": "1", "cc": "gcc"}, {"nodes": "2", "cc": "clang"},
                   {"nodes": "4", "cc": "gcc", "note": "a:b=c"}]
    with pytest.raises(HpcsaError, match="given 2 times for 3 runs"):
        parse_meta_options(["nodes=1", "nodes=2"], runs, labels)


def test_meta_files(tmp_path):
    runs, labels = ["/x/r1.d", "/x/r2.d"], ["r1", "r2"]
    (tmp_path / "m.csv").write_text("database,nodes,compiler\nr1.d,1,gcc\nr2,2,clang\nother.d,9,icx\n")
    assert read_meta_file(str(tmp_path / "m.csv"), runs, labels) == [{"nodes": "1", "compiler": "gcc"},
                                                                    {"nodes": "2", "compiler": "clang"}]
    (tmp_path / "m.json").write_text(json.dumps({"r1": {"nodes": 1}, "/x/r2.d": {"nodes": 2}}))
    assert read_meta_file(str(tmp_path / "m.json"), runs, labels) == [{"nodes": "1"}, {"nodes": "2"}]


def test_catalog_records_what_the_databases_hold(tmp_path):
    a = write_run(tmp_path / "a.d", loop=10, tail=2, own=1, threads=2, title="solver")
    b = write_run(tmp_path / "b.d", loop=10, tail=2, own=1, threads=4, title="solver")
    cmp = compare([a, b], meta=[{"nodes": "1"}, {"nodes": "2"}])
    r = cmp.runs[1]
    assert (r.label, r.title, r.program, r.threads, r.gpu_streams, r.hosts, r.ranks) == \
        ("b", "solver", "prog", 4, 0, 1, 1)
    assert r.metrics == [METRIC] and r.format == "4.0" and r.meta == {"nodes": "2"}
    assert r.duration_s is None and r.start is None  # no trace.db
    frame = cmp.catalog_frame()
    assert frame.loc["a", "threads"] == 2 and frame.loc["b", "meta.nodes"] == "2"


def test_real_catalog(shared_data):
    db = shared_data / "hpctoolkit-extra" / "db-cxx1024"
    r = compare([db]).runs[0]
    assert (r.program, r.threads, r.hosts, r.writer) == ("cxx-gcc-O2", 1024, 1, "hpcprof")
    assert r.start is not None and r.start.startswith("2026-11-2") and 0 < (r.duration_s or 0) < 200


def test_group_by_a_recorded_field(tmp_path):
    dbs = [write_run(tmp_path / f"t{t}.d", loop=10, tail=2, own=1, threads=t) for t in (1, 2, 2)]
    cmp = compare(dbs, group_by="threads")
    assert [(g.value, g.runs) for g in cmp.groups or []] == [("1", [0]), ("2", [1, 2])]
    with pytest.raises(HpcsaError, match="no 'nodes'"):
        compare(dbs, group_by="nodes")
