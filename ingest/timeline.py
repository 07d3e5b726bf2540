"""The processes of one ``hpcsa ingest`` as one run: each with its rank and host
(:mod:`hpcsa.ingest.ranks`), all on one timeline (:mod:`hpcsa.ingest.clocks`)."""

from __future__ import annotations

from hpcsa.ingest import model as M
from hpcsa.ingest.clocks import align_clocks
from hpcsa.ingest.ranks import assign_ranks, distinct_ranks, hosts


def one_run(traces: list[M.GpuTrace]) -> str:
    """Give the processes their ranks and correct their clocks; return what the summary says about it ("" for
    a measurement of one process)."""
    how = assign_ranks(traces)
    if not how:
        return ""
    ranks = distinct_ranks(traces)
    if not ranks:
        return ""  # processes of one recording, none ranked: nothing to say, one clock
    clocks = align_clocks(traces)
    text = f"{ranks} rank(s) on {hosts(traces)} host(s), {how}"
    return f"{text}; {clocks.text()}" if clocks is not None else text

