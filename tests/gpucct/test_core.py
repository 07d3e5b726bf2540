"""The core of gpucct takes arrays (it imports no reader, writer or later phase); its components match their
definition, and the networkx and hand-written paths agree."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import hpcsa.gpucct
from hpcsa.gpucct import CallGraph, CallSite, DeviceFunction
from hpcsa.gpucct.scc import call_digraph, components, strongly_connected

CORE = ("model.py", "reconstruct.py", "scc.py")
ALLOWED_PROJECT_IMPORTS = {"hpcsa.core.errors"} | {f"hpcsa.gpucct.{name[:-3]}" for name in CORE}


def _project_imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("hpcsa"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("hpcsa"):
            found.add(node.module or "")
    return found


@pytest.mark.parametrize("name", CORE)
def test_core_module_imports_no_reader_or_phase(name: str) -> None:
    path = Path(hpcsa.gpucct.__file__).parent / name
    assert _project_imports(path) <= ALLOWED_PROJECT_IMPORTS


def _random_graph(rnd: random.Random) -> tuple[list[DeviceFunction], list[CallSite]]:
    n = rnd.randint(1, 40)
    entries = [0x100 * (i + 1) for i in range(n)]
    calls = {}
    for _ in range(rnd.randint(0, 3 * n)):
        caller = rnd.randrange(n)
        pc = entries[caller] + 0x10 * rnd.randint(1, 15)
        calls[pc] = CallSite(pc, None if rnd.random() < 0.05 else entries[rnd.randrange(n)])
    return [DeviceFunction(e) for e in entries], list(calls.values())


@pytest.mark.parametrize("seed", range(60))
def test_components_are_mutual_reachability_and_topo_is_topological(seed: int) -> None:
    """Against definitions computed here from the calls: components are the classes of mutual
    reachability (Warshall closure), recursive = several members or a self call, the component
    edges go from lower to higher topological rank."""
    functions, calls = _random_graph(random.Random(seed))
    g = CallGraph(functions, calls)
    n = g.n_functions
    assert isinstance(g.digraph, nx.DiGraph)
    reach = np.eye(n, dtype=bool)
    self_call = np.zeros(n, dtype=bool)
    for a, b in zip(g.call_caller.tolist(), g.call_callee.tolist(), strict=True):
        if b >= 0:
            reach[a, b] = True
            self_call[a] |= a == b
    for k in range(n):
        reach |= reach[:, [k]] & reach[[k], :]
    same = reach & reach.T
    assert np.array_equal(g.comp_of[:, None] == g.comp_of[None, :], same)
    assert [m[0] for m in g.comp_members] == sorted(m[0] for m in g.comp_members)  # ids by smallest member
    for c, members in enumerate(g.comp_members):
        assert bool(g.comp_recursive[c]) == (len(members) > 1 or bool(self_call[members[0]]))
    assert sorted(g.comp_topo.tolist()) == list(range(g.n_components))
    assert np.all(g.comp_topo[g.edge_src] < g.comp_topo[g.edge_dst])


@pytest.mark.parametrize("seed", range(60))
def test_networkx_and_hand_written_components_agree(seed: int) -> None:
    """The networkx path (condensation, topological order) and the hand-written Tarjan pass that CallGraph
    uses give the same components in the same order, on random call graphs rich in recursion."""
    rnd = random.Random(seed)
    n = rnd.randint(1, 60)
    succ = [[rnd.randrange(n) for _ in range(rnd.randint(0, 4))] for _ in range(n)]
    v, a, b = rnd.randrange(n), rnd.randrange(n), rnd.randrange(n)
    succ[v].append(v)  # a self call and a call back, at least
    succ[a].append(b)
    succ[b].append(a)
    hand = [sorted(c) for c in strongly_connected(succ)]
    graph = call_digraph(n, ((v, w) for v in range(n) for w in succ[v]))
    assert hand == components(graph)


def test_call_graph_digraph_is_the_direct_calls() -> None:
    functions, calls = _random_graph(random.Random(7))
    g = CallGraph(functions, calls)
    direct = {(g.index_of(c.pc - c.pc % 0x100), g.index_of(c.callee)) for c in calls if c.callee is not None}
    assert set(g.digraph.edges) == direct
    assert list(g.digraph.nodes) == list(range(g.n_functions))
