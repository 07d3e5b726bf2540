"""The peak memory of a whole process tree, for commands that fork workers or start MPI ranks.

GNU time's ``%M`` is the largest resident set of any one of a command's processes: for ``hpcsa prof -j 2``
(this process and a forked worker) it leaves one of the two out. A C++ tool that runs its workers as threads
has one process, whose resident set is all of it. The fair figure for a process tree is the sum of its
processes' proportional set sizes (PSS: a page shared by k processes counts 1/k in each), sampled from /proc
every 5 ms (the sampler of ``bench_prof.py``).

    .venv/bin/python benchmarks/tree_peak.py COMMAND [ARG...]     # prints "seconds peak-KiB"
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_prof import measure  # noqa: E402


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    wall, peak, _ = measure(argv, 0.005)
    print(f"{wall:.2f} {peak // 1024}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
