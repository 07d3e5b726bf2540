"""Run every benchmark and record its results in benchmarks/results/ (``make bench``).

Each ``bench_*.py`` in this folder is run with ``--record`` in a fresh interpreter, one after the other
(they measure wall time and memory, so they must not share the machine with each other). Extra
arguments are passed to every script, e.g. ``--repeat 1`` for a quick run.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    scripts = sorted(HERE.glob("bench_*.py"))
    failed = []
    for script in scripts:
        start = time.monotonic()
        print(f"== {script.name}", flush=True)
        proc = subprocess.run([sys.executable, str(script), "--record", *argv], cwd=HERE.parent)
        print(f"== {script.name}: {'ok' if proc.returncode == 0 else 'FAILED'} in {time.monotonic() - start:.0f} s",
              flush=True)
        if proc.returncode:
            failed.append(script.name)
    print(f"benchmarks: {len(scripts) - len(failed)} of {len(scripts)} recorded in benchmarks/results"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
