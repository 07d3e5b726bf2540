"""``hpcsa`` with a fault injected into one MPI rank's phase 2 (for tests/aggregate/test_mpi_prof.py).

Run as ``mpiexec -n R python tests/aggregate/mpi_fault.py RANK KIND prof ...``. On rank RANK the first
profile processed fails: ``input`` raises an HpcsaError naming the profile (bad input found late),
``crash`` raises a RuntimeError (a bug), ``kill`` kills the process (a node going away).
"""

from __future__ import annotations

import os
import signal
import sys

from hpcsa.aggregate.phase2 import points as phase2_points
from hpcsa.cli.main import main
from hpcsa.core.errors import HpcsaError


def inject(kind: str) -> None:
    original = phase2_points.batch_points

    def failing(c2, indexes):  # type: ignore[no-untyped-def]
        if kind == "input":
            raise HpcsaError(c2.profiles[indexes[0]].input.path, "injected: unreadable on the second reading")
        if kind == "crash":
            raise RuntimeError("injected bug")
        os.kill(os.getpid(), signal.SIGKILL)
        return original(c2, indexes)

    phase2_points.batch_points = failing


if __name__ == "__main__":
    rank, kind, *argv = sys.argv[1:]
    if os.environ.get("PMI_RANK") == rank:
        inject(kind)
    sys.exit(main(argv))
