"""Recursive components of a call graph: hand-written Tarjan on the hot path, networkx as the reference.

Recursion is found as the strongly connected components of the graph of
direct calls and collapsed into one node each, as in HPCToolkit's GPU
calling-context reconstruction ("Tools for Top-down Performance Analysis of
GPU-Accelerated Applications", ICS 2020). ``CallGraph`` uses
``strongly_connected`` (Tarjan's algorithm, "Depth-first search and linear
graph algorithms", SIAM J. Computing 1972, written iteratively so that deep
call chains cannot hit Python's recursion limit): on the largest benchmark
graph the networkx path (building the ``DiGraph``, its condensation and a
topological order) costs about 10% of one reconstruction or more, the hand-written
pass 1-2% (benchmarks/bench_gpucct.py; docs/design/gpucct.md).
``call_digraph`` and ``components`` are the networkx path: ``CallGraph.digraph``
offers the call graph as a networkx ``DiGraph`` for analyses that want one, and
the tests check that both paths give the same components in the same order.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: networkx takes a fifth of a second to import, reconstruction never needs it
    import networkx as nx


def call_digraph(n: int, edges: Iterable[tuple[int, int]]) -> nx.DiGraph[int]:
    """Vertices ``0..n-1``, one edge per distinct (caller, callee) pair, successors in the order given."""
    import networkx as nx

    graph: nx.DiGraph[int] = nx.DiGraph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(edges)
    return graph


def components(graph: nx.DiGraph[int]) -> list[list[int]]:
    """The strongly connected components of ``graph`` (members sorted), in reverse topological order.

    networkx numbers the condensation's components in the order its
    depth-first search (vertices in order, successors in insertion order)
    completes them; among the components whose callers are all placed, the
    highest-numbered is placed first, so the order is a function of the graph's
    vertex and successor order only.
    """
    import networkx as nx

    dag = nx.condensation(graph)
    order = list(nx.lexicographical_topological_sort(dag, key=operator.neg))
    return [sorted(dag.nodes[c]["members"]) for c in reversed(order)]


def strongly_connected(successors: Sequence[Sequence[int]]) -> list[list[int]]:
    """Components of the graph ``v -> successors[v]``, each a list of vertices (Tarjan, iterative).

    Components come out in reverse topological order: when an edge leads
    from component X to a different component Y, Y is listed before X.
    Vertices are visited in index order and successors in list order, so the
    result is a function of the inputs' order only, and it is the order of
    ``components`` on the same graph: the same depth-first search.
    """
    n = len(successors)
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    stack: list[int] = []
    out: list[list[int]] = []
    counter = 0
    for start in range(n):
        if index[start] >= 0:
            continue
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack[start] = True
        work = [(start, 0)]
        while work:
            v, i = work[-1]
            succ = successors[v]
            if i < len(succ):
                work[-1] = (v, i + 1)
                w = succ[i]
                if index[w] < 0:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, 0))
                elif on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
                continue
            work.pop()
            if work:
                u = work[-1][0]
                if low[v] < low[u]:
                    low[u] = low[v]
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp.append(w)
                    if w == v:
                        break
                out.append(comp)
    return out
