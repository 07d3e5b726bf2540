"""Planted databases for ``hpcsa blame``: a small context tree with one context per kind of frame, and trace
lines written from (time, context name) lists, so that every answer can be computed by hand."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from hpcsa.formats.db import metadb
from hpcsa.formats.db.tracedb import elements
from tests.views.synthetic import DatabaseBuilder, stream_tuple, thread_tuple

#: context name -> (function name, load module) under main; "kernel" is the <gpu kernel> placeholder under launch
FRAMES = {
    "compute": ("compute", "/app/bin/app"),
    "barrier": ("GOMP_barrier", "/usr/lib/libgomp.so.1"),
    "omp_internal": ("gomp_team_start", "/usr/lib/libgomp.so.1"),
    "launch": ("cudaLaunchKernel", "/usr/lib/libcudart.so.12"),
    "sync": ("cudaDeviceSynchronize", "/usr/lib/libcudart.so.12"),
    "sleep": ("nanosleep", "/usr/lib/libc.so.6"),
    "mpi_wait": ("MPI_Wait", "/usr/lib/libmpi.so.40"),
    "memcpy": ("cudaMemcpyAsync", "/usr/lib/libcudart.so.12"),
}


class Plant:
    """The tree: main (application) with one call per frame kind; context ids by name in :attr:`ctx`."""

    def __init__(self) -> None:
        b = DatabaseBuilder(title="blame plant")
        app = b.module("/app/bin/app")
        main = b.call(None, b.function("main", app))
        self.ctx = {"main": main + 2}
        for name, (fn, mod) in FRAMES.items():
            row = b.call(main, b.function(fn, b.module(mod)))
            self.ctx[name] = row + 2
        kernel = b.context(self.ctx["launch"] - 2, metadb.FUNCTION, metadb.CALL, function=b.function("<gpu kernel>"))
        self.ctx["kernel"] = kernel + 2
        self.builder = b

    def line(self, events: Sequence[tuple[int, str]]) -> np.ndarray:
        return elements(np.array([t for t, _ in events], np.uint64),
                        np.array([0 if c == "none" else self.ctx[c] for _, c in events], np.uint32))

    def write(self, path: str | os.PathLike[str], cpu: dict[tuple[int | None, int], Sequence[tuple[int, str]]],
              gpu: dict[tuple[int | None, int, int], Sequence[tuple[int, str]]] = {}) -> dict:  # noqa: B006
        """``cpu``: (rank, thread) -> events; ``gpu``: (rank, context, stream) -> events ("none" = idle).
        Returns profile index -> key."""
        profiles, traces, keys = [], [], {}
        n_rows = len(self.builder.rows)
        for key, events in cpu.items():
            profiles.append((thread_tuple(0, key[0], key[1]), np.full((n_rows, 1), 1.0)))
            traces.append((len(profiles), self.line(events)))
            keys[len(profiles)] = ("cpu", key)
        for key, events in gpu.items():
            profiles.append((stream_tuple(0, key[0], key[1], key[2]), np.zeros((n_rows, 1))))
            traces.append((len(profiles), self.line(events)))
            keys[len(profiles)] = ("gpu", key)
        self.builder.write(path, ["REALTIME (sec)"], profiles, traces=traces)
        return keys
