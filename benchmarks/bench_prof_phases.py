"""Benchmark: CPU time of ``hpcsa prof``'s start-up and of each phase, old code against new, interleaved.

On a shared machine wall-clock times say more about the neighbours than about the code, so this measures
CPU time: the imports of ``hpcsa prof`` (a fresh interpreter importing the command, less one importing
nothing), and each phase of one in-process ``-j 1`` run (the pipeline's own phase laps, taken with the
process's CPU clock). With ``--against PYTHON`` (another checkout's interpreter, e.g. the main branch's
venv) the two are run alternately, ``--repeat`` pairs, and medians are printed side by side; the
databases of the two must be byte-identical.

    .venv/bin/python benchmarks/bench_prof_phases.py MEASDIR [--against /work/main/.venv/bin/python] [--repeat 5]

Imports are timed with the bytecode cache in use (``PYTHONPYCACHEPREFIX`` in a temporary directory when
``PYTHONDONTWRITEBYTECODE`` is set), as an installed package has it: otherwise every run compiles every
module first.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

#: Run in the measured interpreter: one -j 1 run, each phase's CPU seconds as JSON on stdout.
PHASES = r"""
import json, sys, time
import hpcsa.core.progress
try:
    from hpcsa.aggregate import driver as pipeline
    from hpcsa.aggregate.inputs import find_inputs
except ImportError:  # a checkout from before hpcsa prof's modules moved up into hpcsa.aggregate
    from hpcsa.aggregate.prof import pipeline
    from hpcsa.aggregate.prof.inputs import find_inputs
start = time.process_time()
hpcsa.core.progress.Progress.elapsed = lambda self: time.process_time() - start
inputs = find_inputs([sys.argv[1]], [])
aggregate = getattr(pipeline, 'aggregate', None) or pipeline.run  # named run before this release
r = aggregate(inputs, pipeline.Options(output=sys.argv[2], jobs=1, progress=False))
print(json.dumps(dict(r.timings, total=time.process_time() - start)))
"""
IMPORTS = "import hpcsa.cli.main, hpcsa.cli.prof"


def cpu_of(python: str, code: str, env: dict[str, str]) -> float:
    """User + system CPU seconds of ``python -c code`` (children included)."""
    before = os.times()
    subprocess.run([python, "-c", code], check=True, env=env, stdout=subprocess.DEVNULL)
    after = os.times()
    return (after.children_user - before.children_user) + (after.children_system - before.children_system)


def one(python: str, measdir: str, out: Path, env: dict[str, str]) -> dict[str, float]:
    res = subprocess.run([python, "-c", PHASES, measdir, str(out)], check=True, env=env, capture_output=True,
                         text=True)
    got = json.loads(res.stdout.strip().splitlines()[-1])
    got["imports"] = cpu_of(python, IMPORTS, env) - cpu_of(python, "pass", env)
    return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("measdir")
    ap.add_argument("--against", metavar="PYTHON", help="another checkout's interpreter, run alternately")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    pythons = {"this": sys.executable} | ({"against": args.against} if args.against else {})
    runs: dict[str, list[dict[str, float]]] = {k: [] for k in pythons}
    with tempfile.TemporaryDirectory(prefix="bench-phases-") as tmp:
        for label in pythons:
            cache = Path(tmp) / f"pycache-{label}"
            env = dict(os.environ, HPCSA_NO_PROGRESS="1", PYTHONPYCACHEPREFIX=str(cache))
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            subprocess.run([pythons[label], "-c", IMPORTS], check=True, env=env)  # fill the bytecode cache
        for i in range(args.repeat):
            for label, python in pythons.items():
                env = dict(os.environ, HPCSA_NO_PROGRESS="1", PYTHONPYCACHEPREFIX=str(Path(tmp) / f"pycache-{label}"))
                env.pop("PYTHONDONTWRITEBYTECODE", None)
                runs[label].append(one(python, args.measdir, Path(tmp) / f"{label}-{i}.d", env))
        if args.against:
            a, b = Path(tmp) / "this-0.d", Path(tmp) / "against-0.d"
            names = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
            same = names == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file()) and all(
                filecmp.cmp(a / n, b / n, shallow=False) for n in names)
            print(f"databases byte-identical: {'yes' if same else 'NO'}")
    keys = list(runs["this"][0])
    print(f"CPU seconds, median of {args.repeat} (load average at the end: {os.getloadavg()[0]:.1f})")
    print("| step | " + " | ".join(pythons) + " |\n|---|" + "---:|" * len(pythons))
    for k in keys:
        cells = [f"{statistics.median(r[k] for r in runs[label]):.3f}" for label in pythons]
        print(f"| {k} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
