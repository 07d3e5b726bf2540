"""``hpcsa serve`` over HTTP: the token, the values (against ``hpcsa view``/``hpcsa imbalance --format json``),
filters, the trace summaries, hostile paths, and that the database is never written."""

from __future__ import annotations

import glob
import hashlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from hpcsa.views.experiment import open_experiment
from tests.conftest import assert_one_line_error, run_cli
from tests.interrupting import sigint_as_in_a_terminal
from tests.views.helpers import SEED003
from tests.views.serve.helpers import Served, serving, tree_rows

DBASE = ("small.d", "loops-cuda-nvidia-t.d", "loops-cputime-t.d")


def view_json(db: Path, *args: str) -> dict:
    return json.loads(run_cli("view", str(db), "--format", "json", "--top", "0", *args, check=True).stdout)


def column_index(s: Served, header: str) -> int:
    name = header.rsplit(" (", 1)[0]
    return next(c["index"] for c in s.get("/api/info")["columns"] if c["name"] == name)


def compare_view(s: Served, doc: dict, depth: int, view: str, flatten: int = 0, filters: str = "") -> None:
    cols = sorted({column_index(s, f"{c['name']} (I)") for c in doc["columns"]})
    params = {"view": view, "columns": ",".join(map(str, cols)), "flatten": flatten, "filters": filters}
    got = tree_rows(s, depth, **params)
    want = [r for r in doc["rows"] if "label" in r]
    assert [(d, r["label"]) for d, r in got] == [(r["depth"], r["label"]) for r in want]
    sides = [f"{c['name']} ({'I' if c['side'] == 'inclusive' else 'E'})" for c in doc["columns"]]
    for (_, rec), ref in zip(got, want, strict=True):
        assert rec["values"] == [ref["values"][h] for h in sides], ref["label"]


@pytest.mark.parametrize("name", DBASE)
def test_views_match_hpcsa_view(hpctoolkit_data: Path, name: str) -> None:
    db = hpctoolkit_data / "dbase" / name
    with serving(db) as s:
        compare_view(s, view_json(db, "--depth", "3"), 3, "top-down")
        compare_view(s, view_json(db, "--view", "bottom-up", "--depth", "2"), 2, "bottom-up")
        compare_view(s, view_json(db, "--view", "flat", "--depth", "3"), 3, "flat")
        compare_view(s, view_json(db, "--view", "flat", "--flatten", "2", "--depth", "1"), 1, "flat", 2)


def test_cxx_all_metrics_hot_path_and_imbalance(cxx: Path) -> None:
    with serving(cxx) as s:
        doc = view_json(cxx, "--depth", "4", "--all-metrics")
        compare_view(s, doc, 4, "top-down")
        # the callers view is built a few levels deep and deepened as nodes are opened: same as built at once
        compare_view(s, view_json(cxx, "--view", "bottom-up", "--depth", "9"), 9, "bottom-up")
        hot = view_json(cxx, "--hot-path")["hot_path"]["nodes"]
        path = s.get("/api/hotpath", view="top-down")["path"]
        rows = s.get("/api/rows", view="top-down", nodes=",".join(map(str, path)))["rows"]
        assert [r["label"] for r in rows] == [n["label"] for n in hot]
        assert [r["ctx_id"] for r in rows] == [n["ctx_id"] for n in hot]
        node = path[-1]
        ref = json.loads(run_cli("imbalance", str(cxx), "--format", "json", "--context", f"#{rows[-1]['ctx_id']}",
                                 check=True).stdout)["context"]
        dist = s.get("/api/distribution", view="top-down", node=node)
        for k in ("min", "max", "mean", "stddev", "imbalance"):
            assert dist["stats"][k] == pytest.approx(ref[k], rel=1e-12, abs=1e-15), k
        # compared where the context is present; the profiles that lack it are counted apart
        assert dist["stats"]["profiles"] == len(ref["values"]) == 1024 - dist["lacking"] == 1024 - ref["lacking"]
        assert dist["compared"] == 1024 and all(v != 0 for v in ref["values"].values())
        assert sum(dist["histogram"]["counts"]) == len(ref["values"])
        values = sorted(ref["values"].values())
        assert dist["sorted"]["value"][0] == values[0] and dist["sorted"]["value"][-1] == values[-1]
        status, body, _ = s.request("/api/distribution", {"view": "flat", "node": 1})
        assert status == 404 and b"top-down" in body


def test_token(hpctoolkit_data: Path) -> None:
    with serving(hpctoolkit_data / "dbase" / "small.d") as s:
        tok = s.app.token
        assert len(tok) >= 32
        for path in ("/", "/api/info", "/static/app.js", "/src/x.c", "/api/children"):
            assert s.request(path, token=False)[0] == 403
            assert s.request(path, {"token": tok[:-1] + ("A" if tok[-1] != "A" else "B")}, token=False)[0] == 403
            assert s.request(path, {"token": ""}, token=False)[0] == 403
        assert s.request("/api/info", token=False, headers={"X-Hpcsa-Token": tok})[0] == 200
        status, body, headers = s.request("/")
        assert status == 200 and b"app.js" in body
        cookie = headers["Set-Cookie"].split(";")[0]
        assert "HttpOnly" in headers["Set-Cookie"] and "SameSite=Strict" in headers["Set-Cookie"]
        assert s.request("/api/info", token=False, headers={"Cookie": cookie})[0] == 200
        assert "no-referrer" in headers["Referrer-Policy"] and "default-src 'self'" in headers["Content-Security-Policy"]
        assert s.url.startswith(f"http://127.0.0.1:{s.port}/?token=")


@pytest.fixture(scope="module")
def with_sources(hpctoolkit_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """small.m aggregated with its source found through -R, and hostile links planted in its src/."""
    tmp = tmp_path_factory.mktemp("served")
    (tmp / "moved").mkdir()
    (tmp / "moved" / "small.c").write_text("".join(f"line {i}\n" for i in range(1, 40)))
    db = tmp / "small.d"
    run_cli("prof", str(hpctoolkit_data / "meas" / "small.m"), "-o", str(db), "-j", "1",
            "-R", f"/builds/hpctoolkit/hpctoolkit/tests/data/meas={tmp / 'moved'}", check=True)
    (tmp / "secret.txt").write_text("secret\n")
    src = db / "src"
    os.symlink(tmp / "secret.txt", src / "out-abs")
    os.symlink("../meta.db", src / "out-rel")
    os.symlink("/etc", src / "etc")
    (src / "inside.txt").write_text("inside\n")
    os.symlink("inside.txt", src / "in-link")
    return db


def snapshot(db: Path) -> dict[str, tuple[int, int, str]]:
    out = {}
    for p in sorted(db.rglob("*")):
        st = p.lstat()
        digest = hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() and not p.is_symlink() else ""
        out[str(p.relative_to(db))] = (st.st_mtime_ns, st.st_size, digest)
    return out


def test_source_pane_and_hostile_paths(with_sources: Path) -> None:
    before = snapshot(with_sources)
    with serving(with_sources) as s:
        rows = [r for _, r in tree_rows(s, 8) if r.get("kind") == "line"]
        assert rows
        src = s.get("/api/source", view="top-down", node=rows[0]["node"])
        assert src["available"] and src["src"] == "builds/hpctoolkit/hpctoolkit/tests/data/meas/small.c"
        status, body, headers = s.request(f"/src/{src['src']}")
        assert status == 200 and body.decode().splitlines()[src["line"] - 1] == f"line {src['line']}"
        assert headers["Content-Type"].startswith("text/plain")
        assert s.request("/src/inside.txt")[0] == 200 and s.request("/src/in-link")[0] == 200
        hostile = ["/src/../meta.db", "/src/%2e%2e/meta.db", "/src/..%2fmeta.db", "/src//etc/passwd",
                   "/src/%2fetc%2fpasswd", "/src/out-abs", "/src/out-rel", "/src/etc/passwd", "/src/",
                   "/src/./inside.txt", "/src/builds/../inside.txt", "/src/inside.txt%00", "/src/nothing.c",
                   "/meta.db", "/../meta.db", "/static/../meta.db", "/static/x.js", "/src/builds"]
        for path in hostile:
            status, body, _ = s.request(path)
            assert status == 404, path
            assert b"secret" not in body and b"root:" not in body
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            assert s.request("/api/info", method=method)[0] == 405
        for view in ("top-down", "bottom-up", "flat"):
            tree_rows(s, 3, view=view)
        s.get("/api/trace/pixels", width=300, height=10)
        s.get("/api/trace/window", depth=1)
    assert snapshot(with_sources) == before


def test_filters_give_cost_to_parent(cxx: Path) -> None:
    exp = open_experiment(cxx)
    td = exp.top_down()
    col = exp.catalog.find("CPUTIME (sec)")
    inc, exc = td.values(col, "inclusive"), td.values(col, "exclusive")
    c = exp.cct
    frames = np.flatnonzero((c.kind == 0) & (c.relation != 0) & (td.parent >= 0))
    target = int(frames[np.argmax(np.where(np.isin(td.parent[frames], frames), inc[frames], -1))])
    name = exp.meta.functions.names[int(c.function[target])]
    same = np.flatnonzero((c.function == c.function[target]) & np.isin(np.arange(len(c)), frames))
    assert len(same) == 1, "pick a procedure with one frame"
    up = int(td.parent[target])
    while not ((c.kind[up] == 0 and c.relation[up] != 0) or c.kind[up] in (8, 9)):
        up = int(td.parent[up])
    pattern = glob.escape(name)
    with serving(cxx) as s:
        def rec(node: int, mode: str) -> dict:
            return s.get("/api/rows", view="top-down", nodes=node, filters=f"{mode}:{pattern}")["rows"][0]

        both, self_only, kids = rec(up, "both"), rec(up, "self"), rec(target, "children")
        assert both["values"][0] == pytest.approx(inc[up]) and self_only["values"][0] == pytest.approx(inc[up])
        assert both["values"][1] == pytest.approx(exc[up] + inc[target], rel=1e-9)
        below = float(inc[td.parent == target].sum())
        assert self_only["values"][1] == pytest.approx(exc[up] + inc[target] - below, rel=1e-9)
        assert kids["values"][1] == pytest.approx(exc[target] + below, rel=1e-9) and kids["children"] == 0
        status, _, _ = s.request("/api/path", {"view": "top-down", "node": target, "filters": f"both:{pattern}"})
        assert status == 404
        parent = int(td.parent[target])
        kid_nodes = [r["node"] for r in s.get("/api/children", view="top-down", node=parent, limit=2000,
                                               filters=f"self:{pattern}")["rows"]]
        grand = [r["node"] for r in s.get("/api/children", view="top-down", node=target, limit=2000)["rows"]]
        assert grand and set(grand) <= set(kid_nodes) and target not in kid_nodes
        found = s.get("/api/search", view="top-down", q=name[:12])["nodes"]
        assert target in found


# seed003.d (fixtures/views/make_fixtures.py): m calls f (file1.c:9) and g (file1.c:10, g3); f calls g (file1.c:3,
# g1); g1 calls g (file2.c:3, g2); every g calls h (file2.c:4). Costs sit on lines: g1's and g3's file2.c:2 (1
# each), h's loops under g2 (3), g1 (2) and g3 (2). Filtering happens on that tree; the callers and flat views
# are built from what is left. (inclusive, exclusive) of the rows, by label path, for each filter:
SEED_FILTERED = {
    # g hidden, its lines and calls kept under the call-site lines in f and m: g's costs are f's and m's own
    "self:g": {
        "bottom-up": {("m",): (9, 1), ("f",): (6, 1), ("h",): (7, 7), ("h", "f (at file2.c:4)"): (5, 5),
                      ("h", "m (at file2.c:4)"): (2, 2), ("f", "m (at file1.c:9)"): (6, 1)},
        "flat": {("app",): (9, 9), ("app", "file1.c"): (9, 2), ("app", "file1.c", "m"): (9, 1),
                 ("app", "file1.c", "f"): (6, 1), ("app", "file2.c"): (7, 7), ("app", "file2.c", "h"): (7, 7),
                 ("app", "file1.c", "f", "file1.c:3", "file2.c:2"): (1, 1)}},
    # everything below g hidden: g's inclusive cost is its own
    "children:g": {
        "bottom-up": {("g",): (9, 9), ("g", "f (at file1.c:3)"): (6, 6), ("g", "m (at file1.c:10)"): (3, 3),
                      ("m",): (9, 0), ("f",): (6, 0)},
        "flat": {("app", "file2.c"): (9, 9), ("app", "file2.c", "g"): (9, 9), ("app", "file1.c"): (9, 0),
                 ("app", "file1.c", "m"): (9, 0), ("app", "file1.c", "f"): (6, 0)}},
    # g and everything below hidden: the calls of g cost f and m what g cost inclusively
    "both:g": {
        "bottom-up": {("m",): (9, 3), ("f",): (6, 6), ("f", "m (at file1.c:9)"): (6, 6)},
        "flat": {("app",): (9, 9), ("app", "file1.c"): (9, 9), ("app", "file1.c", "m"): (9, 3),
                 ("app", "file1.c", "m", "file1.c:10"): (3, 3), ("app", "file1.c", "f"): (6, 6),
                 ("app", "file1.c", "f", "file1.c:3"): (6, 6)}},
    # a glob; h's loops land in g's body (g1: 1 + 2, g2: 3, g3: 1 + 2)
    "self:h*": {
        "bottom-up": {("g",): (9, 9), ("g", "g (at file2.c:3)"): (3, 3), ("m",): (9, 0), ("f",): (6, 0)},
        "flat": {("app", "file2.c", "g"): (9, 9), ("app", "file2.c", "g", "file2.c:4", "loop at file2.c:8"): (7, 1),
                 ("app", "file2.c", "g", "file2.c:4", "loop at file2.c:8", "loop at file2.c:9"): (6, 6)}},
}
GONE = {"self:g": {"g"}, "children:g": {"h"}, "both:g": {"g", "h"}, "self:h*": {"h"}}


def labelled(s: Served, view: str, filters: str) -> dict[tuple[str, ...], tuple[float, float]]:
    """Every shown row of a view through the API, by label path: (inclusive, exclusive) of the first metric."""
    out: dict[tuple[str, ...], tuple[float, float]] = {}
    path: list[str] = []
    for depth, rec in tree_rows(s, 99, view=view, columns="0", filters=filters):
        del path[depth:]
        path.append(rec["label"])
        inc, exc = (v or 0.0 for v in rec["values"])
        out[tuple(path)] = (inc, exc)
    return out


@pytest.mark.parametrize("filters", sorted(SEED_FILTERED))
def test_filters_in_callers_and_flat_views(filters: str) -> None:
    with serving(SEED003) as s:
        assert s.get("/api/info")["columns"][0]["name"] == "CPUTIME (sec)"
        for view, want in SEED_FILTERED[filters].items():
            got = labelled(s, view, filters)
            for key, values in want.items():
                assert got.get(key) == pytest.approx(values), (view, key, got.get(key))
            # the hidden procedures have no rows, the totals do not move
            assert not {p.split(" (at ")[0].split(" ")[-1] for k in got for p in k} & GONE[filters], view
            top = s.get("/api/children", view=view, node=-1, columns="0", filters=filters)["rows"]
            if view == "bottom-up":  # every procedure's exclusive cost once, the root's included
                assert sum(r["values"][1] or 0 for r in top) == pytest.approx(9)
            else:
                assert [r["values"] for r in top] == [[9, 9]]
        # the same numbers as hpcsa view with the same filter
        compare_view(s, view_json(SEED003, "--view", "bottom-up", "--depth", "9", "--filter", filters), 9,
                     "bottom-up", filters=filters)
        compare_view(s, view_json(SEED003, "--view", "flat", "--depth", "9", "--filter", filters), 9,
                     "flat", filters=filters)
        compare_view(s, view_json(SEED003, "--view", "flat", "--flatten", "2", "--depth", "9", "--filter",
                                  filters), 9, "flat", 2, filters=filters)


def test_trace_pixels_and_window(cxx: Path) -> None:
    exp = open_experiment(cxx)
    tdb = exp.db.trace
    with serving(cxx) as s:
        meta = s.get("/api/trace/meta")
        assert meta["rows"] == len(tdb) and meta["cpu_rows"] == len(tdb) and len(meta["groups"]) == 64
        # rows grouped by process (run), each run's threads in thread order
        assert meta["group"] == sorted(meta["group"]) and meta["labels"][:2] == ["core 0 thread 0", "core 0 thread 1"]
        px = s.get("/api/trace/pixels", width=640, height=100, depth=2)
        assert len(px["rows"]) == 100
        for r in px["rows"]:
            assert sum(r["runs"][1::2]) == 640
        used = {v for r in px["rows"] for v in r["runs"][0::2] if v >= 0}
        assert used == {int(k) for k in px["legend"]}
        t0, t1 = meta["t_min"], meta["t_max"]
        mid = (t0 + t1) // 2
        w = s.get("/api/trace/window", t0=t0, t1=mid, depth=0)
        want = present = 0
        slot = {int(p): k for k, p in enumerate(tdb.prof_index.tolist())}
        for p in meta["profiles"]:  # every sample's time within [t0, mid), independently of the server
            line = tdb.trace(slot[p])
            ts = line["timestamp"].astype(np.int64)
            if len(ts) < 2:
                continue
            ok = exp.cct.row_of(line["ctxId"][:-1].astype(np.int64)) > 0  # context 0: no activity
            span = np.clip(np.minimum(ts[1:], mid) - np.maximum(ts[:-1], t0), 0, None)  # the last element: the end
            want += int(span[ok].sum())
            present += int(span.sum())
        assert w["busy"] == want == w["total"] and w["present"] == present == w["busy"] + w["idle"]
        assert w["present"] <= w["capacity"] == len(tdb) * (mid - t0)
        assert sum(p["time"] for p in w["procedures"]) == pytest.approx(want) or w["more"]
        cp = s.get("/api/trace/callpath", row=0, t=t0 + 9_158_000)  # run 1's main thread, in its first sample
        labels = [p["label"] for p in cp["path"]]
        assert cp["label"] == "node 0 run 1 core 0 thread 0" and labels[0] == "main thread"
        depth = s.get("/api/trace/depth", row=0, t0=t0, t1=t0 + 2 * 10**9, width=300)
        assert depth["label"] == cp["label"] and [d["depth"] for d in depth["depths"]] == list(range(len(depth["depths"])))
        assert all(sum(d["runs"][1::2]) == 300 for d in depth["depths"])


def test_command_line(hpctoolkit_data: Path, tmp_path: Path) -> None:
    """``hpcsa serve``: prints the URL with its token once ready, answers on 127.0.0.1, stops on Ctrl-C;
    bad databases and busy ports are one-line errors."""
    import signal
    import socket
    import subprocess
    import sys
    import urllib.request

    db = hpctoolkit_data / "dbase" / "small.d"
    proc = subprocess.Popen([sys.executable, "-m", "hpcsa", "serve", str(db), "--port", "0", "-d", "twice=2*$0"],
                            preexec_fn=sigint_as_in_a_terminal,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        head = [proc.stdout.readline() for _ in range(2)]
        url = head[1].split("open ", 1)[1].strip()
        assert url.startswith("http://127.0.0.1:") and "/?token=" in url
        port = int(url.split(":")[2].split("/")[0])
        with urllib.request.urlopen(url.replace("/?", "/api/info?"), timeout=30) as r:
            info = json.loads(r.read())
        assert info["contexts"] > 0
        cols = {c["name"]: c for c in info["columns"]}
        first = next(c for c in info["columns"] if c["index"] == 0)
        assert cols["twice"]["derived"] and cols["twice"]["total"] == pytest.approx(2 * first["total"])
        assert cols["twice"]["index"] in info["default_columns"]  # a -d metric is shown from the start
        with socket.socket() as busy:
            busy.bind(("127.0.0.1", 0))
            busy.listen()
            taken = busy.getsockname()[1]
            err = run_cli("serve", str(db), "--port", str(taken))
            assert_one_line_error(err, str(taken))
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0 and "stopped" in out
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    (tmp_path / "meta.db").write_bytes(b"not a database")
    assert_one_line_error(run_cli("serve", str(tmp_path), "--port", "0"), str(tmp_path))
