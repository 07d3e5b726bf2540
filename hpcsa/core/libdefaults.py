"""Environment defaults for the native libraries hpcsa loads, set before they load (a user's own setting wins).

hpcsa runs in parallel with processes (``-j``) and MPI ranks, one per CPU, and never calls BLAS. Two libraries
it loads nevertheless spend CPU time of their own when they load:

- numpy's OpenBLAS starts a pool of one thread per CPU (OpenBLAS's documentation: ``OPENBLAS_NUM_THREADS``
  sets its size). On a node full of hpcsa processes those threads compete with them: with two MPI ranks on
  two CPUs, ``import numpy`` took 0.17 s instead of 0.11 s and a whole ``hpcsa prof`` run 0.07 s longer.
- UCX, which MPICH's library links, installs memory hooks as it loads so that its registration cache can see
  memory being unmapped (UCX's configuration, ``ucx_info -f``: ``UCX_MEM_EVENTS``). It patches each hooked
  function by binary instrumentation and then waits out a grace period for threads that might be running the
  code being patched: 40 ms of every rank's start-up here. The cache helps programs that send large buffers
  again and again by RDMA; hpcsa sends a few pickled messages and uses one small window of counters, and
  without memory events UCX falls back to registering memory for each transfer.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping

#: Set before numpy loads (the ``hpcsa`` command, before it imports a subcommand).
BLAS_THREADS: Mapping[str, str] = {"OPENBLAS_NUM_THREADS": "1"}
#: Set before MPI loads (an MPI run, before it imports ``mpi4py.MPI``).
MPI_MEMORY_HOOKS: Mapping[str, str] = {"UCX_MEM_EVENTS": "no"}


def set_defaults(defaults: Mapping[str, str], environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set the variables of ``defaults`` that the environment does not set; return those that were set."""
    env = os.environ if environ is None else environ
    added = {name: value for name, value in defaults.items() if name not in env}
    env.update(added)
    return added
