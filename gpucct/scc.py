"""Strongly connected components of a call graph (Tarjan, iterative).

Written out rather than taken from networkx or scipy: the algorithm is the one
seed 002 names, it is a few dozen lines, and device call graphs are small
enough (thousands of functions) that a pure-Python pass costs milliseconds
(benchmarks/results/gpucct.md). Iterative so that deep call chains cannot hit
Python's recursion limit.
"""

from __future__ import annotations

from collections.abc import Sequence


def strongly_connected(successors: Sequence[Sequence[int]]) -> list[list[int]]:
    """Components of the graph ``v -> successors[v]``, each a list of vertices.

    Components come out in reverse topological order: when an edge leads
    from component X to a different component Y, Y is listed before X.
    Vertices are visited in index order and successors in list order, so the
    result is a function of the inputs' order only.
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
