"""The machine's speed at this moment: seconds for a fixed loop of 500,000 dict inserts, the kind of work most
of an ``hpcsa`` run's Python is. The machines the benchmarks run on are shared and their speed varies during
a day (the same loop took 0.40 s and 0.86 s on the same machine on the same day), so every recording notes
it at its start and end: two recordings compare only where their probes agree.

    .venv/bin/python benchmarks/machine_speed.py          # prints the seconds
    .venv/bin/python benchmarks/machine_speed.py --pair   # and how much 2 processes at once gain

Two processes of the same work at once do not each run as fast as one alone where the two CPUs share a
physical core or memory bandwidth, as virtual CPUs may: ``--pair`` measures it, for the dict loop and for a
numpy loop of gathers and sorts (the kind of work of ``hpcsa prof``'s phase 2), so that a speed-up measured
with 2 workers or ranks can be read against the most 2 processes gained on the machine at that moment.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time


def loop_seconds() -> float:
    """The loop, in this process."""
    start = time.perf_counter()
    d = {}
    for i in range(500_000):
        d[(i, i + 1, (i,))] = i
    return time.perf_counter() - start


def numpy_seconds() -> float:
    """Gathers, sorts and scatter-adds over arrays larger than the caches, in this process."""
    import numpy as np

    rng = np.random.default_rng(0)
    values = rng.random(1 << 21)
    at = rng.integers(0, len(values), len(values))
    start = time.perf_counter()
    for _ in range(4):
        picked = np.sort(values[at])
        np.add.at(picked, at[: 1 << 18], 1.0)
    return time.perf_counter() - start


def probe(kind: str = "dict") -> float:
    """The loop in a fresh interpreter, so that the caller's heap does not change what it measures."""
    out = subprocess.run([sys.executable, __file__, "--kind", kind], check=True, capture_output=True,
                         text=True).stdout
    return float(out)


def pair(kind: str = "numpy", rounds: int = 3) -> tuple[float, float]:
    """(seconds alone, seconds of each of two at once): medians of ``rounds``, alone and together in turn."""
    alone, both = [], []
    for _ in range(rounds):
        alone.append(probe(kind))
        procs = [subprocess.Popen([sys.executable, __file__, "--kind", kind], stdout=subprocess.PIPE, text=True)
                 for _ in range(2)]
        both += [float(p.communicate()[0]) for p in procs]
    return statistics.median(alone), statistics.median(both)


def pair_text(rounds: int = 3) -> str:
    """One sentence on what 2 processes at once gained, for the benchmarks' reports."""
    parts = []
    for kind in ("dict", "numpy"):
        one, two = pair(kind, rounds)
        parts.append(f"the {kind} loop {two:.2f} s each against {one:.2f} s alone ({2 * one / two:.2f}x for two)")
    return "two copies at once (`benchmarks/machine_speed.py --pair`): " + "; ".join(parts)


if __name__ == "__main__":
    if "--pair" in sys.argv:
        print(pair_text())
    else:
        print(f"{(numpy_seconds if sys.argv[-1] == 'numpy' else loop_seconds)():.2f}")
