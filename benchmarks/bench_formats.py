"""Benchmark: reading speed of every HPCToolkit file format, in MB/s next to ``cat`` on the same file.

For each format the largest real file in ../shared/data is read completely
(every section, every value) ``--repeat`` times and the best time is kept;
``cat FILE > /dev/null`` on the same file (warm page cache, best of the same
number of runs, process start included) gives the reference. The real files
are small, so the v4 database formats are also measured on a synthetic
database written by hpcsa's own writers (100,000 contexts), which shows how
the readers scale; for that database the writers are timed too (profile.db
streaming, cct.db transpose with 1 and 2 worker processes).

    .venv/bin/python benchmarks/bench_formats.py [--record] [--repeat N]

``--record`` writes the tables to benchmarks/results/formats.md.

Other format owners: add a reader to ``FORMATS`` (name, file pattern, function
reading the whole file); ``.hpcstruct`` is waiting for its reader.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from hpcsa.formats.db import cctdb, metadb, metricsyaml, profiledb, tracedb
from hpcsa.formats.measurement.hpcrun import read_hpcrun
from hpcsa.formats.measurement.hpctrace import read_hpctrace

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("HPCSA_SHARED_DATA", ROOT.parent / "shared" / "data"))


# -- one full read per format --------------------------------------------------------------------------


def read_hpcrun_file(path: Path) -> None:
    prof = read_hpcrun(path)
    prof.value_floats()


def read_hpctrace_file(path: Path) -> None:
    read_hpctrace(path)


def read_metadb_file(path: Path) -> None:
    metadb.read_metadb(path)


def read_profiledb_file(path: Path) -> None:
    pdb = profiledb.ProfileDB(path)
    for i in range(len(pdb)):
        pdb.profile(i)


def read_cctdb_file(path: Path) -> None:
    cctdb.CctDB(path).range_values()


def read_tracedb_file(path: Path) -> None:
    tdb = tracedb.TraceDB(path)
    for i in range(len(tdb)):
        np.asarray(tdb.trace(i)).copy()


def read_metrics_yaml_file(path: Path) -> None:
    metricsyaml.read_metrics_yaml(path)


def read_hpcstruct_file(path: Path) -> None:
    from hpcsa.formats.hpcstruct.reader import read_hpcstruct
    read_hpcstruct(path)


#: (format, glob pattern under ../shared/data, reader). Add new formats here.
FORMATS: list[tuple[str, str, Callable[[Path], None]]] = [
    (".hpcrun", "**/*.hpcrun", read_hpcrun_file),
    (".hpctrace", "**/*.hpctrace", read_hpctrace_file),
    ("meta.db", "**/meta.db", read_metadb_file),
    ("profile.db", "**/profile.db", read_profiledb_file),
    ("cct.db", "**/cct.db", read_cctdb_file),
    ("trace.db", "**/trace.db", read_tracedb_file),
    ("metrics/default.yaml", "**/metrics/default.yaml", read_metrics_yaml_file),
    (".hpcstruct", "**/*.hpcstruct", read_hpcstruct_file),
]


def readable(reader: Callable[[Path], None], path: Path) -> bool:
    try:
        reader(path)
        return True
    except Exception:  # the largest file of a pattern may be a pre-release or foreign file
        return False


def largest(pattern: str, reader: Callable[[Path], None]) -> Path | None:
    files = sorted((p for p in DATA.glob(pattern) if p.is_file()), key=lambda p: p.stat().st_size, reverse=True)
    return next((p for p in files if readable(reader, p)), None)


def best_time(fn: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def cat_time(path: Path, repeat: int) -> float:
    return best_time(lambda: subprocess.run(["cat", str(path)], stdout=subprocess.DEVNULL, check=True), repeat)


def measure(path: Path, reader: Callable[[Path], None], repeat: int) -> tuple[int, float, float]:
    size = path.stat().st_size
    return size, best_time(lambda: reader(path), repeat), cat_time(path, repeat)


# -- a synthetic database (100k contexts) --------------------------------------------------------------


def synthetic_database(directory: Path, n_ctx: int = 100_000, n_profiles: int = 16,
                       values_per_profile: int = 100_000, seed: int = 1) -> dict[str, float]:
    """Write meta.db, profile.db, cct.db and trace.db for a random tree; returns the write times."""
    rng = np.random.default_rng(seed)
    parent = np.full(n_ctx, -1, np.int64)
    parent[1:] = (rng.random(n_ctx - 1) * np.arange(1, n_ctx)).astype(np.int64)  # a random recursive tree
    kind = rng.integers(0, 3, n_ctx)
    n_func, n_files = 2000, 300
    tree = metadb.ContextTree.from_columns(
        [metadb.EntryPoint(1, 1, "main thread")], ctx_id=np.arange(2, n_ctx + 2), parent=parent,
        relation=np.where(kind == 0, 1, 0), lexical_type=np.choose(kind, [0, 2, 1]),
        function=np.where(kind == 0, rng.integers(0, n_func, n_ctx), -1),
        file=np.where(kind > 0, rng.integers(0, n_files, n_ctx), -1), line=rng.integers(1, 5000, n_ctx),
        module=np.where(kind == 2, 0, -1), offset=rng.integers(0, 1 << 20, n_ctx))
    meta = metadb.MetaDB(
        title="synthetic", modules=["/usr/bin/app"], module_flags=np.zeros(1, np.uint32),
        files=[f"/src/file{i}.c" for i in range(n_files)], file_flags=np.zeros(n_files, np.uint32),
        functions=metadb.Functions([f"function_{i}" for i in range(n_func)], np.zeros(n_func, np.int32),
                                   np.arange(n_func, dtype=np.uint64) * 64, rng.integers(0, n_files, n_func,
                                                                                        dtype=np.int32),
                                   rng.integers(1, 5000, n_func, dtype=np.uint32), np.zeros(n_func, np.uint32)),
        metrics=[metadb.Metric("CPUTIME (sec)", [metadb.ScopeInstance(s, s) for s in range(4)],
                               [metadb.Summary(s, "$$", 0, s) for s in range(4)])],
        contexts=tree)
    times = {}
    t0 = time.perf_counter()
    metadb.write_metadb(directory / "meta.db", meta)
    times["meta.db write"] = time.perf_counter() - t0
    triples = []
    for _ in range(n_profiles):
        key = np.unique(rng.integers(0, (n_ctx + 2) * 4, values_per_profile))
        triples.append((key // 4, key % 4, rng.random(len(key)) + 0.1))
    t0 = time.perf_counter()  # from (context, metric, value) triples in any order to the finished file
    with profiledb.ProfileDBWriter(directory / "profile.db",
                                   [[(1, 1, 0, 0x1234), (3, 0, t, t)] for t in range(n_profiles)]) as w:
        for p, (ctx, met, val) in enumerate(triples, start=1):
            order = rng.permutation(len(ctx))
            w.write_profile(p, profiledb.ProfileValues.from_triples(ctx[order], met[order], val[order]))
        w.write_summary(profiledb.ProfileValues.from_triples(np.arange(n_ctx), np.full(n_ctx, 3), np.ones(n_ctx)))
    times["profile.db write"] = time.perf_counter() - t0
    for workers in (1, 2):
        t0 = time.perf_counter()
        cctdb.write_cctdb_from_profiledb(directory / "profile.db", directory / "cct.db", n_ctx + 2, workers=workers,
                                         range_bytes=4 << 20)
        times[f"cct.db transpose, {workers} worker{'s' if workers > 1 else ''}"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    with tracedb.TraceDBWriter(directory / "trace.db", list(range(1, n_profiles + 1))) as tw:
        for p in range(n_profiles):
            n = 50_000
            tw.write_trace(p, tracedb.elements(np.cumsum(rng.integers(1, 1000, n)), rng.integers(0, n_ctx, n)))
    times["trace.db write"] = time.perf_counter() - t0
    return times


# -- main ----------------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()

    real_rows = []
    for name, pattern, reader in FORMATS:
        path = largest(pattern, reader)
        if path is None:
            print(f"{name}: no readable file under {DATA}")
            continue
        size, t, tc = measure(path, reader, args.repeat)
        real_rows.append((name, str(path.relative_to(DATA)), size, t, tc))
        print(f"{name:22} {size / 1e6:8.3f} MB  hpcsa {size / t / 1e6:8.1f} MB/s  cat {size / tc / 1e6:8.1f} MB/s")

    synth_rows = []
    with tempfile.TemporaryDirectory() as tmp:
        write_times = synthetic_database(Path(tmp))
        for name, _, reader in FORMATS:
            path = Path(tmp) / name
            if path.exists():
                size, t, tc = measure(path, reader, args.repeat)
                synth_rows.append((name, size, t, tc))
                print(f"synthetic {name:12} {size / 1e6:8.3f} MB  hpcsa {size / t / 1e6:8.1f} MB/s  "
                      f"({t * 1e3:.1f} ms)  cat {size / tc / 1e6:8.1f} MB/s")
        sizes = {n: (Path(tmp) / n).stat().st_size for n in ("meta.db", "profile.db", "cct.db", "trace.db")}
        for what, t in write_times.items():
            print(f"synthetic {what:32} {t:7.3f} s")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    if args.record:
        lines = [
            "# Reading speed of the HPCToolkit file formats", "",
            f"Machine: {platform.machine()}, {os.cpu_count()} CPUs (shared), Python {platform.python_version()}; "
            f"best of {args.repeat}; peak RSS {peak:.0f} MiB. Command: "
            "`.venv/bin/python benchmarks/bench_formats.py --record`.", "",
            "A full read: every section and every value (profile.db: all profiles; cct.db: all contexts; "
            "trace.db: all lines). `cat` is `cat FILE > /dev/null` on the same file, process start included, "
            "so on small files it mostly measures starting a process.", "",
            "## Largest real file of each format", "",
            "| format | file | size (bytes) | hpcsa read (ms) | hpcsa MB/s | cat MB/s |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for name, rel, size, t, tc in real_rows:
            lines.append(f"| {name} | {rel} | {size:,} | {t * 1e3:.2f} | {size / t / 1e6:.1f} | {size / tc / 1e6:.1f} |")
        lines += ["", "## Synthetic database (100,000 contexts, 16 thread profiles x 100,000 values)", "",
                  "| file | size (bytes) | hpcsa read (ms) | hpcsa MB/s | cat MB/s |", "|---|---:|---:|---:|---:|"]
        for name, size, t, tc in synth_rows:
            lines.append(f"| {name} | {size:,} | {t * 1e3:.1f} | {size / t / 1e6:.1f} | {size / tc / 1e6:.1f} |")
        lines += ["", "| write step | seconds | MB/s |", "|---|---:|---:|"]
        for what, t in write_times.items():
            size = sizes[what.split()[0]]
            lines.append(f"| {what} | {t:.3f} | {size / t / 1e6:.1f} |")
        out = ROOT / "benchmarks" / "results" / "formats.md"
        out.parent.mkdir(exist_ok=True)
        out.write_text("\n".join(lines) + "\n")
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
