"""Small databases for the compare tests, written with the views' writer (tests/views/synthetic.py, which
writes through hpcsa.views.dbwrite) from point costs chosen by hand, so that every expected number in the
tests is worked out on paper from these costs.

The tree (lines are a.c unless said; ``main`` calls ``solve`` from line 10 and ``io`` from line 14)::

    main thread
      main                    (call)
        a.c:10                (line)
          solve               (call)
            loop at a.c:20
              a.c:21          <- point cost "loop"
            a.c:30            <- point cost "tail"
        a.c:12                <- point cost "own"
        a.c:14                (line; only with io=True)
          io                  (call)
            io.c:5            <- point cost "io"
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.views.synthetic import DatabaseBuilder, thread_tuple

METRIC = "CPUTIME (sec)"


def write_run(path: Path, loop: float, tail: float, own: float, io: float | None = 3.0, title: str = "prog",
              threads: int = 1) -> Path:
    """One run's database; ``io=None`` leaves ``io`` out of the tree (a context missing from the run). With
    several threads the point costs are split evenly among them (the summary's Sum is the same)."""
    b = DatabaseBuilder(title)
    app = b.module("/opt/app/bin/prog")
    a, iof = b.file("/src/a.c"), b.file("/src/io.c")
    f_main, f_solve = b.function("main", app, a, 1), b.function("solve", app, a, 18)
    main = b.call(None, f_main)
    l10 = b.line(main, a, 10)
    solve = b.call(l10, f_solve)
    lp = b.loop(solve, a, 20)
    l21 = b.line(lp, a, 21)
    l30 = b.line(solve, a, 30)
    l12 = b.line(main, a, 12)
    costs = {l21: loop, l30: tail, l12: own}
    if io is not None:
        f_io = b.function("io", app, iof, 3)
        l14 = b.line(main, a, 14)
        call_io = b.call(l14, f_io)
        l5 = b.line(call_io, iof, 5)
        costs[l5] = io
    point = np.zeros((len(b.rows), 1))
    for row, v in costs.items():
        point[row, 0] = v
    profiles = [(thread_tuple(0, None, t), point / threads) for t in range(threads)]
    b.write(path, [METRIC], profiles)
    return path
