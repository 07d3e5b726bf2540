"""The vectorized callers and flat views against a naive walk of the tree, on random recursive programs.

The naive versions follow "Effectively Presenting Call Path Profiles of Application Performance" §IV literally, one context at a time: an instance is exposed when no
ancestor context is an instance of the same scope; inclusive = sum over exposed instances, exclusive = sum of
each instance's own procedure (or loop/line) cost.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from hpcsa.formats.db.metricsyaml import Input
from hpcsa.views import open_experiment
from hpcsa.views import tree as T
from hpcsa.views.metrics import Partial
from tests.views.synthetic import DatabaseBuilder, thread_tuple

CPU = "CPUTIME (sec)"


def random_program(path: Path, seed: int, n: int = 120) -> None:
    """Few functions, so that recursion (direct and mutual) is everywhere; lines hold calls, loops hold lines."""
    rng = np.random.default_rng(seed)
    b = DatabaseBuilder(f"random{seed}")
    src = b.file("/src/r.c")
    funcs = [b.function(f"f{i}", -1, src, i) for i in range(5)]
    kinds = [0]
    rows = [b.call(None, funcs[0])]
    for _ in range(n - 1):
        i = int(rng.integers(0, len(rows)))
        pk = kinds[i]
        if pk == 2:  # a line calls
            rows.append(b.call(rows[i], funcs[int(rng.integers(0, 5))]))
            kinds.append(0)
        elif rng.random() < 0.25:
            rows.append(b.loop(rows[i], src, int(rng.integers(1, 6)) * 10))
            kinds.append(1)
        else:
            rows.append(b.line(rows[i], src, int(rng.integers(1, 9))))
            kinds.append(2)
    point = np.zeros((len(b.rows), 1))
    point[:, 0] = np.where(np.array(kinds) == 2, rng.integers(0, 5, len(kinds)), 0)
    b.write(path, [CPU], [(thread_tuple(0, 0, 0), point)])


def ancestors(c: T.CCT, r: int) -> list[int]:
    out = []
    r = int(c.parent[r])
    while r >= 0:
        out.append(r)
        r = int(c.parent[r])
    return out


@pytest.mark.parametrize("seed", range(12))
def test_callers_view_matches_a_naive_walk(tmp_path: Path, seed: int) -> None:
    random_program(tmp_path / "r.d", seed)
    exp = open_experiment(tmp_path / "r.d")
    c = exp.cct
    inc_rows = exp.inclusive(CPU)
    own = exp.self_column(Partial(CPU))
    frames = [r for r in range(len(c)) if c.kind[r] == T.FUNCTION]

    def frame_of(r: int) -> int:
        while c.kind[r] not in (T.FUNCTION, T.ENTRY, T.ROOT):
            r = int(c.parent[r])
        return r

    body: dict[int, float] = defaultdict(float)
    for r in range(len(c)):
        body[frame_of(r)] += own[r]

    def key(x: int, level: int) -> tuple[str, ...]:
        out = [exp.scope_name(x)]
        for _ in range(level):
            x = frame_of(int(c.parent[x]))
            out.append(exp.scope_name(x))
        return tuple(out)

    want: dict[tuple[str, ...], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for level in (0, 1):
        keys = {x: key(x, level) for x in frames}
        for x in frames:
            exposed = not any(keys.get(a) == keys[x] for a in ancestors(c, x))
            want[keys[x]][0] += inc_rows[x] if exposed else 0.0
            want[keys[x]][1] += body[x]
    bu = exp.bottom_up(depth=2)
    inc, exc = bu.values(CPU, "inclusive"), bu.values(CPU, "exclusive")
    got = {}
    for node in range(1, len(bu)):
        par = int(bu.parent[node])
        k = (exp.scope_name(int(bu.rep[node])),) if par < 0 else \
            (exp.scope_name(int(bu.rep[par])), exp.scope_name(int(bu.rep[node])))
        got[k] = [inc[node], exc[node]]
    assert set(got) == set(want)
    for k in want:
        assert got[k] == pytest.approx(want[k]), k
    assert sum(v[1] for k, v in got.items() if len(k) == 1) == pytest.approx(exp.total(CPU))


@pytest.mark.parametrize("seed", range(12))
def test_flat_view_matches_a_naive_walk(tmp_path: Path, seed: int) -> None:
    random_program(tmp_path / "r.d", seed)
    exp = open_experiment(tmp_path / "r.d")
    c = exp.cct
    inc_rows = exp.inclusive(CPU)
    fl = exp.flat()
    inc = fl.values(CPU, "inclusive")
    # every static scope: the set of contexts mapped to it, exposed ones summed
    members: dict[int, list[int]] = defaultdict(list)
    for r in range(1, len(c)):
        node = int(fl.node_of_row[r])
        while node >= 0:
            members[node].append(r)
            node = int(fl.parent[node])
    for node, rows in members.items():
        if node == fl.pseudo_node:
            continue
        rs = set(rows)
        want = sum(inc_rows[r] for r in rows if not any(a in rs for a in ancestors(c, r)))
        assert inc[node] == pytest.approx(want), fl.label(node)
    # procedures: exclusive = the function scope of their instances (hpcprof's own values)
    fn = exp.input_column(Input(CPU, "function"))
    exc = fl.values(CPU, "exclusive")
    for node in np.flatnonzero(fl.kind == 12):
        if node == fl.pseudo_node:
            continue
        rows = [r for r in range(len(c)) if fl.node_of_row[r] == node]
        assert exc[node] == pytest.approx(sum(fn[r] for r in rows)), fl.label(int(node))
