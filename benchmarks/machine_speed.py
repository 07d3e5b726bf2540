"""The machine's speed at this moment: seconds for a fixed loop of 500,000 dict inserts, the kind of work most
of an ``hpcsa`` run's Python is. The machines the benchmarks run on are shared and their speed varies during
a day (the same loop took 0.40 s and 0.86 s on the same machine on the same day), so every recording notes
it at its start and end: two recordings compare only where their probes agree.

    .venv/bin/python benchmarks/machine_speed.py      # prints the seconds
"""

from __future__ import annotations

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


def probe() -> float:
    """The loop in a fresh interpreter, so that the caller's heap does not change what it measures."""
    out = subprocess.run([sys.executable, __file__], check=True, capture_output=True, text=True).stdout
    return float(out)


if __name__ == "__main__":
    print(f"{loop_seconds():.2f}")
