"""Benchmark: ``hpcsa struct -j 2`` next to ``readelf --debug-dump=decodedline`` on three binaries, and the
speed of reading ``.hpcstruct`` XML.

Binaries (small to large):

* ``inlines+loops-x86_64-gcc12-dr`` — HPCToolkit's test binary (../shared/data; skipped when absent);
* ``synth.so`` — built here with ``gcc -g -O2`` from C code this script generates (loops, inlined
  helpers, switches, calls: the shapes hpcstruct handles), in benchmarks/work/;
* ``synthxx.so`` — built here with ``g++ -g -O2`` from C++ this script generates: translation units that
  instantiate standard containers and algorithms for many record types, so that DWARF is dominated by
  templates and deep inline trees (over 10 MB of .debug_info), in benchmarks/work/;
* ``/usr/bin/python3.11d`` — Debian's debug interpreter (package python3.11-dbg: 10 MB of .debug_info;
  ``apt-get install python3.11-dbg``, or ``--install`` lets this script run apt-get). Real hpcstruct needs
  about 4.1 s and 720 MiB for it with -j 2 on this machine kind (issue 4).

Each command runs in a fresh process under a small wrapper that reports the peak resident memory of its
children (``ru_maxrss``; with -j 2 that is the largest single process); the median and the best wall
time of ``--repeat`` runs are kept. ``hpcsa struct MEASDIR`` is timed on a copy of the real measurement
``hpctoolkit-extra/meas-cxx1024`` (../shared/data; skipped when absent). The load average is recorded: the machine is shared, so take numbers taken
under load with care.

    .venv/bin/python benchmarks/bench_struct.py [--record] [--repeat N] [--only NAME ...] [--install]

``--record`` writes benchmarks/results/struct.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("HPCSA_SHARED_DATA", ROOT.parent / "shared" / "data"))
WORK = ROOT / "benchmarks" / "work"
PYTHON_DBG = Path("/usr/bin/python3.11d")
SYNTH_FUNCTIONS = 1500
SYNTHXX_UNITS, SYNTHXX_TYPES = 4, 24  # translation units, record types per unit

# Commands run as an installed package does, with its bytecode cached (a development shell that sets
# PYTHONDONTWRITEBYTECODE would have every run compile hpcsa's modules again: 0.1 s of a warm hpcsa prof).
RUN_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
WRAPPER = ("import os, resource, subprocess, sys, tempfile, time\n"
           "fd, first = tempfile.mkstemp()\n"
           "os.close(fd)\n"
           "t = time.perf_counter()\n"
           "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,\n"
           "                   env={**os.environ, 'BENCH_FIRST_CPU': first})\n"
           "dt = time.perf_counter() - t\n"
           "sys.stderr.write(p.stderr.decode(errors='replace')[-2000:] if p.returncode else '')\n"
           "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
           "with open(first) as fh:\n"
           "    mine = fh.read().strip() or 'nan'\n"
           "os.unlink(first)\n"
           "print(p.returncode, dt, r.ru_maxrss, r.ru_utime + r.ru_stime, mine)\n")
# hpcsa run in the process the wrapper starts, which then writes its own CPU seconds (user + system, its
# forked workers excluded; they end with os._exit and write nothing): the CPU of the first process, which
# runs the chain of steps that no other process shares (start, function discovery, skeleton, its chunks,
# writing), and so the wall time to expect with idle cores, however loaded the machine is when measured.
LAUNCH = ("import os, resource, sys\n"
          "from hpcsa.cli.main import main\n"
          "try:\n"
          "    rc = main(sys.argv[1:])\n"
          "finally:\n"
          "    r = resource.getrusage(resource.RUSAGE_SELF)\n"
          "    if os.environ.get('BENCH_FIRST_CPU'):\n"
          "        with open(os.environ['BENCH_FIRST_CPU'], 'w') as fh:\n"
          "            fh.write(str(r.ru_utime + r.ru_stime))\n"
          "sys.exit(rc)\n")


def measure(cmd: list[str], repeat: int, before: Callable[[], None] | None = None
            ) -> tuple[float, float, float, float, float]:
    """Median and best wall seconds of ``repeat`` runs, the median peak RSS (MiB), the median CPU seconds
    (user + system, all processes: what load on the machine inflates least) and the median CPU seconds of
    the first process (hpcsa commands; see ``LAUNCH``). ``before`` runs before each run, untimed (e.g. to
    remove a cache)."""
    walls, rss_all, cpus, firsts = [], [], [], []
    for _ in range(repeat):
        if before is not None:
            before()
        out = subprocess.run([sys.executable, "-c", WRAPPER, *cmd], capture_output=True, text=True, check=True,
                             env=RUN_ENV)
        rc, wall, rss, cpu, first = out.stdout.split()
        if int(rc) != 0:
            raise SystemExit(f"{' '.join(cmd)} failed ({rc}):\n{out.stderr}")
        walls.append(float(wall))
        rss_all.append(int(rss) / 1024)
        cpus.append(float(cpu))
        firsts.append(float(first))
    return (statistics.median(walls), min(walls), statistics.median(rss_all), statistics.median(cpus),
            statistics.median(firsts))


def synth_source(n: int) -> str:
    """C code with loop nests, static inline helpers (inlined at -O2), switches (jump tables) and calls."""
    parts = ["#include <stddef.h>\n", "volatile double sink;\n"]
    for i in range(n):
        parts.append(f"""
static inline double helper{i}(const double *a, int n, int k) {{
    double s = 0;
    for (int j = 0; j < n; j++) s += a[j] * (j + k + {i % 7});
    return s;
}}
double work{i}(double *a, int n, int m, int sel) {{
    double acc = 0;
    for (int r = 0; r < m; r++) {{
        for (int c = 0; c < n; c++) {{
            switch ((c + sel) & 7) {{
            case 0: a[c] += r; break;
            case 1: a[c] *= 1.0001; break;
            case 2: a[c] -= c * 0.5; break;
            case 3: acc += helper{i}(a, c, r); break;
            case 4: a[c] = a[c] / (1 + r); break;
            case 5: acc -= a[c]; break;
            default: acc += a[(c * {i % 5 + 1}) % n]; break;
            }}
        }}
        if (acc > 1e9) acc = helper{i}(a, n, r);
    }}
    {"" if i == 0 else f"if (sel > {i}) acc += work{i - 1}(a, n, m - 1, sel - 1);"}
    sink = acc;
    return acc;
}}
""")
    return "".join(parts)


def build_synth() -> Path:
    WORK.mkdir(parents=True, exist_ok=True)
    out = WORK / "synth.so"
    src = WORK / "synth.c"
    text = synth_source(SYNTH_FUNCTIONS)
    if out.is_file() and src.is_file() and src.read_text() == text:
        return out
    src.write_text(text)
    if shutil.which("gcc") is None:
        raise SystemExit("gcc is needed to build the synthetic binary")
    print(f"building {out} from {SYNTH_FUNCTIONS} generated functions ...", file=sys.stderr)
    subprocess.run(["gcc", "-g", "-O2", "-fPIC", "-shared", "-o", str(out), str(src)], check=True)
    return out


def synthxx_unit(unit: int, types: int) -> str:
    """One C++ translation unit: per record type, a map, a vector, a sort, a string stream and a lambda
    (each instantiated for that type, inlined at -O2)."""
    parts = ["#include <algorithm>\n#include <map>\n#include <unordered_map>\n#include <sstream>\n"
             "#include <string>\n#include <vector>\n#include <functional>\n#include <numeric>\n"]
    for t in range(types):
        name = f"Rec{unit}_{t}"
        parts.append(f"""
struct {name} {{ int key; double value; std::string label; bool operator<(const {name} &o) const {{
    return key < o.key; }} }};
double run_{name}(int n, int seed) {{
    std::vector<{name}> v;
    std::map<int, {name}> by_key;
    std::unordered_map<std::string, double> totals;
    for (int i = 0; i < n; i++) {{
        {name} r{{(i * {t + 3} + seed) % 97, i * 0.5, std::to_string(i % {t + 2})}};
        v.push_back(r);
        by_key[r.key] = r;
        totals[r.label] += r.value;
    }}
    std::sort(v.begin(), v.end());
    std::stable_sort(v.begin(), v.end(), [](const {name} &a, const {name} &b) {{ return a.value > b.value; }});
    std::ostringstream os;
    for (const auto &kv : by_key) os << kv.first << ':' << kv.second.label << ';';
    std::function<double(double)> f = [&](double x) {{ return x + totals.size() + os.str().size(); }};
    return std::accumulate(v.begin(), v.end(), 0.0, [&](double acc, const {name} &r) {{ return f(acc) + r.value; }});
}}
""")
    return "".join(parts)


def build_synthxx() -> Path:
    """The large generated binary (C++ templates: > 10 MB of .debug_info), compiled once per source text."""
    WORK.mkdir(parents=True, exist_ok=True)
    out = WORK / "synthxx.so"
    sources = [WORK / f"synthxx{u}.cc" for u in range(SYNTHXX_UNITS)]
    texts = [synthxx_unit(u, SYNTHXX_TYPES) for u in range(SYNTHXX_UNITS)]
    if out.is_file() and all(p.is_file() and p.read_text() == t for p, t in zip(sources, texts, strict=True)):
        return out
    if shutil.which("g++") is None:
        raise SystemExit("g++ is needed to build the synthetic C++ binary")
    for p, t in zip(sources, texts, strict=True):
        p.write_text(t)
    print(f"building {out} from {SYNTHXX_UNITS} generated C++ units (about a minute per unit and core) ...",
          file=sys.stderr)
    objects = [p.with_suffix(".o") for p in sources]
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        for r in pool.map(lambda so: subprocess.run(["g++", "-g", "-O2", "-fPIC", "-c", "-o", str(so[1]), str(so[0])]),
                          zip(sources, objects, strict=True)):
            r.check_returncode()
    subprocess.run(["g++", "-shared", "-o", str(out), *map(str, objects)], check=True)
    return out


def debug_info_size(path: Path) -> int:
    from hpcsa.structure.elf import open_elf
    sec = open_elf(path).section_named(".debug_info")
    return sec.size if sec else 0


def xml_speed(path: Path, repeat: int) -> tuple[float, float]:
    """MB/s of hpcsa's .hpcstruct reader and of bare expat (no Python callbacks) on the same file."""
    import xml.parsers.expat as expat

    from hpcsa.formats.hpcstruct.reader import read_hpcstruct
    size = path.stat().st_size / 1e6
    best = best_expat = float("inf")
    data = path.read_bytes()
    for _ in range(repeat):
        t = time.perf_counter()
        read_hpcstruct(path)
        best = min(best, time.perf_counter() - t)
        t = time.perf_counter()
        p = expat.ParserCreate()
        p.Parse(data, True)
        best_expat = min(best_expat, time.perf_counter() - t)
    return size / best, size / best_expat


MEAS_CXX = DATA / "hpctoolkit-extra" / "meas-cxx1024"
MEAS_CXX_BINARY = DATA / "hpctoolkit-extra" / "bin" / "cxx-gcc-O2"
HPCSTRUCT_NOTE = ("Real hpcstruct (HPCToolkit develop, Dyninst 13) on this machine kind, -j 2: python3.11d 3.4-4.1 s "
                  "and 720 MiB; the whole meas-cxx1024 directory 12.8 s and 460 MB (its 8 binaries, libhpcrun.so "
                  "included, which is absent here), libstdc++.so.6 alone 1.11 s.")


def copy_measurement(tmp: Path) -> Path | None:
    """meas-cxx1024 without its structs/, its program binary found through ``original-path`` (the run's
    /opt/extra-out/bin/cxx-gcc-O2 is ``bin/cxx-gcc-O2`` under /opt/extra-out); the system libraries it
    recorded (libc with Debian's debug info, libm, libgomp, libstdc++, libgcc_s, ld.so) are read in place."""
    if not MEAS_CXX.is_dir() or not MEAS_CXX_BINARY.is_file():
        return None
    meas = tmp / "meas-cxx1024"
    shutil.copytree(MEAS_CXX, meas, ignore=shutil.ignore_patterns("structs", "*.hpctrace", "*.log"))
    (meas / "bin").mkdir()
    shutil.copy2(MEAS_CXX_BINARY, meas / "bin")
    (meas / "original-path").write_text("/opt/extra-out\n")
    return meas


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--record", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", nargs="*", metavar="NAME", choices=("small", "synth", "synthxx", "python", "measdir"),
                    help="measure only these (default: all; synthxx takes minutes of g++ to build)")
    ap.add_argument("--install", action="store_true", help="apt-get install python3.11-dbg if it is absent")
    args = ap.parse_args()
    want = set(args.only or ("small", "synth", "synthxx", "python", "measdir"))
    if not PYTHON_DBG.exists() and args.install:
        subprocess.run(["apt-get", "install", "-y", "python3.11-dbg"], check=True)
    binaries: list[tuple[str, Path]] = []
    small = DATA / "hpctoolkit" / "bin" / "inlines+loops-x86_64-gcc12-dr"
    if small.exists() and "small" in want:
        binaries.append(("small: inlines+loops-x86_64-gcc12-dr", small))
    if "synth" in want:
        binaries.append((f"medium: synth.so ({SYNTH_FUNCTIONS} generated functions)", build_synth()))
    if "synthxx" in want:
        binaries.append((f"large, generated: synthxx.so ({SYNTHXX_UNITS} C++ units of STL templates)",
                         build_synthxx()))
    if PYTHON_DBG.exists() and "python" in want:
        binaries.append(("large: /usr/bin/python3.11d", PYTHON_DBG))
    elif "python" in want:
        print("python3.11d is absent: apt-get install python3.11-dbg (or run with --install)", file=sys.stderr)
    hpcsa = [sys.executable, "-c", LAUNCH]
    rows = []
    meas_rows = []
    struct_out: Path | None = None
    with tempfile.TemporaryDirectory() as tmp:
        for label, path in binaries:
            out = Path(tmp) / (path.name + ".hpcstruct")
            j2 = measure([*hpcsa, "struct", str(path), "-j", "2", "-o", str(out)], args.repeat)
            j1 = measure([*hpcsa, "struct", str(path), "-j", "1", "-o", str(out)], args.repeat)
            readelf = shutil.which("readelf")
            re_ = measure([readelf, "--debug-dump=decodedline", str(path)], args.repeat) if readelf \
                else (float("nan"),) * 5
            rows.append((label, path.stat().st_size, debug_info_size(path), j2, j1, re_))
            print(rows[-1], file=sys.stderr)
            if path == PYTHON_DBG:
                struct_out = WORK / "python3.11d.hpcstruct"
                WORK.mkdir(parents=True, exist_ok=True)
                shutil.copy(out, struct_out)
        meas = copy_measurement(Path(tmp)) if "measdir" in want else None
        if meas is not None:
            for jobs in (2, 1):
                got = measure([*hpcsa, "struct", "-j", str(jobs), str(meas)], args.repeat,
                              before=lambda: shutil.rmtree(meas / "structs", ignore_errors=True))
                meas_rows.append((jobs, got, sum(p.stat().st_size for p in (meas / "structs").glob("*.hpcstruct"))))
                print(meas_rows[-1], file=sys.stderr)
        xml_rows = []
        largest_real = DATA / "hpctoolkit" / "meas" / "loops-cputime-t.m" / "structs" / "libc-2.31.so.hpcstruct"
        for label, p in (("libc-2.31.so.hpcstruct (real, hpcstruct)", largest_real),
                         ("python3.11d.hpcstruct (hpcsa's output)", struct_out)):
            if p is not None and p.exists():
                ours, bare = xml_speed(p, args.repeat)
                xml_rows.append((label, p.stat().st_size, ours, bare))
    load = os.getloadavg()
    lines = [
        "# hpcsa struct: speed and memory",
        "",
        f"Recorded {time.strftime('%Y-%m-%d %H:%M')} by `benchmarks/bench_struct.py --repeat {args.repeat}"
        f"{' --only ' + ' '.join(args.only) if args.only else ''}` on {platform.machine()}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}; load average at the end "
        f"{load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (a shared machine: other work ran beside it, so the "
        f"medians carry its noise and the best run is only the least disturbed one). Median (best) of "
        f"{args.repeat} runs; memory = median peak resident set of the largest process; Python bytecode cached, "
        f"as an installed package runs.",
        "",
        HPCSTRUCT_NOTE,
        "",
        "Wall: median (best); CPU: median user + system seconds of all processes; first: median CPU seconds "
        "of the first process alone, the chain of steps no other process shares (start, function discovery, "
        "skeleton, its chunks, writing; its waits excluded), about the wall time to expect with idle cores.",
        "",
        "| binary | file size | .debug_info | hpcsa struct -j 2 | CPU | first | memory | hpcsa struct -j 1 | CPU "
        "| memory | readelf decodedline | memory |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, size, dbg, j2, j1, re_ in rows:
        lines.append(f"| {label} | {size / 1e6:.1f} MB | {dbg / 1e6:.1f} MB | {j2[0]:.2f} s ({j2[1]:.2f}) "
                     f"| {j2[3]:.2f} s | {j2[4]:.2f} s | {j2[2]:.0f} MiB | {j1[0]:.2f} s ({j1[1]:.2f}) | {j1[3]:.2f} s "
                     f"| {j1[2]:.0f} MiB | {re_[0]:.2f} s | {re_[2]:.0f} MiB |")
    if meas_rows:
        lines += ["", "## A measurement directory", "",
                  "`hpcsa struct -j N MEASDIR` on a copy of meas-cxx1024 (1,024 thread profiles of a C++ OpenMP "
                  "program: the program, libc with Debian's debug info, libm, libgomp, libstdc++, libgcc_s, "
                  "ld.so), structs/ removed before each run:", "",
                  "| -j | wall | CPU | memory (largest process) | structure files |", "|---:|---:|---:|---:|---:|"]
        for jobs, (med, best, rss, cpu, _first), size in meas_rows:
            lines.append(f"| {jobs} | {med:.2f} s ({best:.2f}) | {cpu:.2f} s | {rss:.0f} MiB | {size / 1e6:.1f} MB |")
    lines += ["", "## Reading .hpcstruct XML", "",
              "| file | size | hpcsa reader | expat alone (no callbacks) | 23 MB at the reader's speed |",
              "|---|---:|---:|---:|---:|"]
    for label, size, ours, bare in xml_rows:
        lines.append(f"| {label} | {size / 1e6:.1f} MB | {ours:.1f} MB/s | {bare:.1f} MB/s | {23 / ours:.2f} s |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.record:
        out = ROOT / "benchmarks" / "results" / "struct.md"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        print(f"recorded in {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
