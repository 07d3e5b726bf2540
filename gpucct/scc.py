"""The call graph as a networkx ``DiGraph``, and its recursive components.

Recursion is found as the strongly connected components of the graph of
direct calls and collapsed by its condensation, as HPCToolkit's GPU
calling-context reconstruction does ("Measurement and Analysis of
GPU-Accelerated Applications with HPCToolkit", Zhou et al., Parallel
Computing 2021). networkx does the graph work: its components come from an
iterative depth-first search (so deep call chains cannot hit Python's
recursion limit), and everything here is built once per GPU binary, a small
share of reconstruction time (README, "GPU calling contexts").
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence

import networkx as nx


def call_digraph(n: int, edges: Iterable[tuple[int, int]]) -> nx.DiGraph:
    """Vertices ``0..n-1``, one edge per distinct (caller, callee) pair, successors in the order given."""
    graph = nx.DiGraph()
    graph.add_nodes_from(range(n))
    graph.add_edges_from(edges)
    return graph


def components(graph: nx.DiGraph) -> list[list[int]]:
    """The strongly connected components of ``graph`` (members sorted), in reverse topological order.

    When an edge leads from component X to a different component Y, Y is
    listed before X. The order is a function of the graph's vertex and
    successor order only: networkx numbers the condensation's components in
    the order its depth-first search (vertices in order, successors in
    insertion order) completes them, and among the components whose callers
    are all placed, the highest-numbered is placed first.
    """
    dag = nx.condensation(graph)
    order = list(nx.lexicographical_topological_sort(dag, key=operator.neg))
    return [sorted(dag.nodes[c]["members"]) for c in reversed(order)]


def strongly_connected(successors: Sequence[Sequence[int]]) -> list[list[int]]:
    """Components of the graph ``v -> successors[v]``, in reverse topological order (see ``components``)."""
    return components(call_digraph(len(successors), ((v, w) for v, succ in enumerate(successors) for w in succ)))
