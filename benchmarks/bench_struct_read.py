"""Benchmark: reading structure files, the vectorized reader of hpcstruct's form against the expat reader.

A first ``hpcsa prof`` run on new structure files spends most of its extra time reading them (a later run
maps the parsed-structure cache). Inputs: the structure files real hpcstruct made for the real 1,024-thread
OpenMP run in ../shared/data (libc with Debian's debug info: 7.6 MB), and those ``hpcsa struct`` makes of
the machine's own libraries and of python3.11d (13.7 MB; benchmarks/realshape.py builds them once). For each
file: best of ``--repeat`` reads by each reader (same result, checked), and each reader's peak resident
memory reading the largest file in a fresh process.

    .venv/bin/python benchmarks/bench_struct_read.py [--repeat N] [--record]

``--record`` writes the table to benchmarks/results/struct_read.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]

from hpcsa.formats.hpcstruct.model import StructureFile  # noqa: E402
from hpcsa.formats.hpcstruct.scan import read_canonical  # noqa: E402
from hpcsa.formats.hpcstruct.stream import read_with_expat  # noqa: E402

DATA = Path(os.environ.get("HPCSA_SHARED_DATA", ROOT.parent / "shared" / "data"))
REAL = DATA / "hpctoolkit-extra" / "meas-cxx1024" / "structs"


def inputs(log: Callable[[str], None]) -> list[tuple[str, Path]]:
    files = [(f"hpcstruct: {p.name}", p) for p in sorted(REAL.glob("*.hpcstruct"))] if REAL.is_dir() else []
    if not files:
        log(f"bench_struct_read: {REAL} is missing; only hpcsa's own structure files are read")
    import realshape
    for name in ("python3.11d", "libc", "libm", "libstdc++"):
        try:
            files.append((f"hpcsa struct: {name}", realshape.structure_file(name, log=log)))
        except (OSError, subprocess.CalledProcessError) as exc:
            log(f"bench_struct_read: no structure file for {name} ({exc})")
    return files


def best(read: Callable[[str], StructureFile | None], path: Path, repeat: int) -> tuple[float, StructureFile]:
    times, got = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        got = read(str(path))
        times.append(time.perf_counter() - t)
    assert got is not None, f"{path}: the vectorized reader declined it"
    return min(times), got


def peak_kib(reader: str, path: Path) -> int:
    """Peak resident memory (KiB) of a fresh process that imports the readers and reads ``path`` once,
    less that of one that only imports them. Read from VmHWM: ``ru_maxrss`` of a process started by a large
    one reports its parent's size (Linux keeps the larger across exec)."""
    code = (f"import sys; sys.path[:0] = [{str(ROOT)!r}]\n"
            "from hpcsa.formats.hpcstruct.stream import read_with_expat\n"
            "from hpcsa.formats.hpcstruct.scan import read_canonical\n"
            "if sys.argv[1] != 'none': globals()[sys.argv[1]](sys.argv[2])\n"
            "print(next(line.split()[1] for line in open('/proc/self/status') if line.startswith('VmHWM')))")
    run = [sys.executable, "-c", code]
    base = int(subprocess.run(run + ["none", str(path)], capture_output=True, text=True, check=True).stdout)
    used = int(subprocess.run(run + [reader, str(path)], capture_output=True, text=True, check=True).stdout)
    return used - base


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()

    def log(message: str) -> None:
        print(message, file=sys.stderr)

    files = inputs(log)
    rows = []
    totals = [0.0, 0.0, 0.0]
    for label, path in files:
        size = path.stat().st_size / 1e6
        t_expat, by_expat = best(read_with_expat, path, args.repeat)
        t_scan, by_scan = best(lambda p: read_canonical(p, strict=True), path, args.repeat)
        if not by_scan.same_content(by_expat) or by_scan.version != by_expat.version:
            raise SystemExit(f"bench_struct_read: {path}: the two readers disagree")
        scopes = sum(len(m.scopes) for m in by_scan.modules)
        rows.append(f"| {label} | {size:.2f} | {scopes:,} | {t_expat:.3f} | {t_scan:.3f} | "
                    f"{t_expat / t_scan:.1f}x | {size / t_scan:.0f} |")
        totals[0] += size
        totals[1] += t_expat
        totals[2] += t_scan
        log(rows[-1])
    largest = max(files, key=lambda f: f[1].stat().st_size)
    mem = {r: peak_kib(r, largest[1]) for r in ("read_with_expat", "read_canonical")}
    try:
        load = f", load average {os.getloadavg()[0]:.2f}"
    except OSError:
        load = ""
    lines = [
        "# Reading structure files: vectorized reader against expat",
        "",
        f"`.venv/bin/python benchmarks/bench_struct_read.py --repeat {args.repeat}` on "
        f"{time.strftime('%Y-%m-%d', time.gmtime())}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
        f"{load}. Best of {args.repeat} reads of each file; both readers give the same modules (checked).",
        "",
        "| file | MB | scopes | expat (s) | vectorized (s) | speed-up | MB/s |",
        "|---|---:|---:|---:|---:|---:|---:|",
        *rows,
        f"| **all** | {totals[0]:.1f} | | {totals[1]:.3f} | {totals[2]:.3f} | {totals[1] / totals[2]:.1f}x | "
        f"{totals[0] / totals[2]:.0f} |",
        "",
        f"Peak memory reading the largest file ({largest[0]}, in a fresh process, above the imports): "
        f"expat {mem['read_with_expat'] / 1024:.0f} MiB, vectorized {mem['read_canonical'] / 1024:.0f} MiB.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.record:
        out = ROOT / "benchmarks" / "results" / "struct_read.md"
        out.write_text(text)
        log(f"recorded in {out.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
