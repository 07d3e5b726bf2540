"""Run every ``hpcsa`` command over the real inputs and the fixtures and print one line per output: its name
and a SHA-256 of what it wrote (files, directories file by file, standard output, exit status).

A change that should not change any output (a refactoring, a speed-up) is checked by running this with the
old and the new code on the same paths and comparing the two manifests line by line::

    python .ci/output_manifest.py --hpcsa OLD/.venv/bin/hpcsa --work /tmp/om > old.txt
    python .ci/output_manifest.py --hpcsa .venv/bin/hpcsa --work /tmp/om > new.txt
    diff old.txt new.txt

Outputs are written under ``--work``, emptied first (the same path for both runs: some outputs record their
own path).
Timings in what a command prints are masked (``0.41 s`` -> ``# s``); everything else counts. ``--quick``
leaves out the slow half (the binaries of every compiler, ``-j 2``, MPI).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("HPCSA_SHARED_DATA", os.path.join(os.path.dirname(ROOT), "shared", "data"))
TIMING = re.compile(rb"\b\d+(\.\d+)?( ?)(s|ms|us|MiB|MB|GiB|KiB|x|\xc3\x97)\b|\d+(\.\d+)?\s*(profiles|contexts)/s"
                    rb"|ranks: [0-9+]+ profiles")  # how MPI ranks shared the work is first come


#: struct's record of what it analysed: its keys hash the analysing code itself, by design (a cached result
#: made by other code is never reused), so they are masked.
CACHE_KEYS = re.compile(rb'"key": "[0-9a-f]+"')


def digest_path(path: str, checkouts: tuple[bytes, ...] = ()) -> str:
    """A file's bytes, or a directory's relative names and bytes, in name order; the paths of the checkouts
    (where the fixtures are read from) masked."""
    h = hashlib.sha256()
    if os.path.isdir(path):
        for base, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(files):
                full = os.path.join(base, name)
                h.update(os.path.relpath(full, path).encode() + b"\0")
                with open(full, "rb") as fh:
                    data = fh.read()
                if name == ".hpcsa-cache.json":
                    data = CACHE_KEYS.sub(b'"key": "#"', data)
                h.update(hashlib.sha256(_masked(data, checkouts)).digest())
    elif os.path.exists(path):
        with open(path, "rb") as fh:
            h.update(_masked(fh.read(), checkouts))
    else:
        return "absent"
    return h.hexdigest()[:16]


def _masked(data: bytes, checkouts: tuple[bytes, ...]) -> bytes:
    for path in checkouts:
        data = data.replace(path, b"<checkout>")
    return data


class Runner:
    def __init__(self, hpcsa: str, work: str, only: tuple[str, ...] = ()) -> None:
        self.hpcsa = hpcsa
        self.only = only
        self.work = work
        self.env = dict(os.environ, HPCSA_CACHE_DIR=os.path.join(work, "cache"), COLUMNS="120")
        # the checkout the command runs from (its .venv/bin/hpcsa: the demo's inputs) and this one (the other
        # fixtures), named in what the commands print and write
        self.checkouts = (os.path.dirname(os.path.dirname(os.path.dirname(hpcsa))).encode(), ROOT.encode())

    def out(self, *parts: str) -> str:
        path = os.path.join(self.work, *parts)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return path

    def run(self, name: str, argv: list[str], outputs: tuple[str, ...] = (), prefix: list[str] | None = None,
            cwd: str | None = None, makedirs: tuple[str, ...] = ()) -> str | None:
        """One line: ``name rc=N stdout=H stderr=H out=H...``; None for a step ``--only`` leaves out."""
        if self.only and not name.startswith(self.only):
            return None
        for path in outputs:
            if os.path.isdir(path):
                shutil.rmtree(path)
            elif os.path.exists(path):
                os.remove(path)
        for path in makedirs:
            os.makedirs(path, exist_ok=True)
        proc = subprocess.run([*(prefix or []), self.hpcsa, *argv], capture_output=True, env=self.env,
                              cwd=cwd or self.work, timeout=900)
        stdout = TIMING.sub(b"#", _masked(proc.stdout, self.checkouts))
        stderr = TIMING.sub(b"#", _masked(proc.stderr, self.checkouts))
        parts = [name, f"rc={proc.returncode}", "stdout=" + hashlib.sha256(stdout).hexdigest()[:16],
                 "stderr=" + hashlib.sha256(stderr).hexdigest()[:16]]
        parts += [f"out{i}=" + digest_path(p, self.checkouts) for i, p in enumerate(outputs)]
        if proc.returncode not in (0, 1) and os.environ.get("HPCSA_MANIFEST_VERBOSE"):
            sys.stderr.write(f"{name}: {proc.stderr.decode(errors='replace')[-400:]}\n")
        return " ".join(parts)


def binaries(quick: bool) -> Iterator[tuple[str, str]]:
    dirs = [os.path.join(SHARED, "hpctoolkit-extra", "bin"), os.path.join(SHARED, "hpctoolkit-extra", "stripped", "bin")]
    if not quick:
        dirs.insert(0, os.path.join(SHARED, "hpctoolkit", "bin"))
    for d in dirs:
        if os.path.isdir(d):
            for name in sorted(os.listdir(d)):
                if not name.endswith((".license", ".md")):
                    yield f"{os.path.basename(os.path.dirname(d))}-{name}", os.path.join(d, name)
    for name in ["structure/sample.so", "gpu/callgraph-sm75-lineinfo.cubin", "gpu/callgraph-sm80-G.cubin",
                 "gpu/callgraph-sm90-rdc.cubin", "gpu/callgraph-gfx90a-O2.co", "gpu/callgraph-gfx1030-O0.co",
                 "gpu/libcallgraph-cuda.so", "gpu/libcallgraph-hip.so", "gpu/callgraph-sm75-zstd.fatbin",
                 "demo/particles-sm75.cubin"]:
        yield "fixture-" + name.replace("/", "-"), os.path.join(ROOT, "fixtures", name)


def measurements() -> Iterator[tuple[str, str]]:
    meas = os.path.join(SHARED, "hpctoolkit", "meas")
    if os.path.isdir(meas):
        for name in sorted(os.listdir(meas)):
            yield name, os.path.join(meas, name)
    extra = os.path.join(SHARED, "hpctoolkit-extra", "meas-cxx1024")
    if os.path.isdir(extra):
        yield "cxx1024", extra
    yield "fixture-tiny.m", os.path.join(ROOT, "fixtures", "measurements", "tiny.m")


def vendor_sources() -> Iterator[tuple[str, str]]:
    records = os.path.join(SHARED, "gpu-records")
    if os.path.isdir(records):
        for vendor in sorted(os.listdir(records)):
            vdir = os.path.join(records, vendor)
            if os.path.isdir(vdir):
                for name in sorted(os.listdir(vdir)):
                    yield f"{vendor}-{name}", os.path.join(vdir, name)
    fixtures = os.path.join(ROOT, "fixtures", "ingest")
    for name in sorted(os.listdir(fixtures)):
        if name.startswith("tiny"):
            yield "fixture-" + name, os.path.join(fixtures, name)


def views(r: Runner, tag: str, db: str) -> Iterator[str | None]:
    for view in ("top-down", "bottom-up", "flat"):
        yield r.run(f"view-{view}-{tag}", ["view", db, "--view", view, "--all-metrics", "--width", "0"])
    yield r.run(f"view-hot-{tag}", ["view", db, "--hot-path", "--format", "json"])
    yield r.run(f"view-csv-{tag}", ["view", db, "--view", "flat", "--format", "csv", "--depth", "6"])
    yield r.run(f"stats-{tag}", ["stats", db])
    yield r.run(f"imbalance-{tag}", ["imbalance", db, "--format", "json"])
    yield r.run(f"dump-{tag}", ["dump", db, "--max-values", "200"])
    trace = r.out("trace", tag + ".json")
    yield r.run(f"export-trace-{tag}", ["export-trace", db, "-o", trace], (trace,))
    blamed = r.out("blame", tag + ".d")
    yield r.run(f"blame-{tag}", ["blame", db, "-o", blamed, "--format", "json"], (blamed,))
    for strategy in ("sum", "set", "key", "calltree"):
        agg = r.out("threads", f"{tag}-{strategy}.d")
        yield r.run(f"threads-{strategy}-{tag}", ["aggregate-threads", db, "-s", strategy, "-o", agg], (agg,))


def manifest(r: Runner, quick: bool) -> Iterator[str | None]:
    for name, path in binaries(quick):
        out = r.out("struct", name + ".hpcstruct")
        yield r.run(f"struct-{name}", ["struct", path, "-o", out], (out,))
    if not quick:
        for name, path in list(binaries(True))[:6]:
            out = r.out("struct-j2", name + ".hpcstruct")
            yield r.run(f"struct-j2-{name}", ["struct", "-j", "2", path, "-o", out], (out,))
    dev = r.out("struct-dev", "out", "libcallgraph-cuda.so.hpcstruct")
    yield r.run("struct-device-code", ["struct", "--device-code", os.path.join(ROOT, "fixtures/gpu/libcallgraph-cuda.so"),
                                       "-o", dev], (os.path.dirname(dev),), makedirs=(os.path.dirname(dev),))

    databases: list[tuple[str, str]] = []
    for name, path in measurements():
        jobs = ("1",) if quick else ("1", "2")
        for j in jobs:
            for mode, extra in (("struct", []), ("nostruct", ["--ignore-structs"])):
                db = r.out("prof", f"{name}-{mode}-j{j}.d")
                yield r.run(f"prof-{name}-{mode}-j{j}", ["prof", path, "-o", db, "-j", j, *extra], (db,))
                if j == "1":
                    databases.append((f"{name}-{mode}", db))
        copy = r.out("measdirs", name)
        if os.path.exists(copy):
            shutil.rmtree(copy)
        shutil.copytree(path, copy, symlinks=True)
        structs = os.path.join(copy, "structs")
        if os.path.isdir(structs):
            shutil.rmtree(structs)
        yield r.run(f"struct-measdir-{name}", ["struct", copy, "--cache", r.out("structcache", name)], (structs,))
    if not quick:
        mpiexec = os.path.join(os.path.dirname(r.hpcsa), "mpiexec")
        cxx = dict(measurements()).get("cxx1024")
        if cxx and os.path.exists(mpiexec):
            db = r.out("prof", "cxx1024-mpi2.d")
            yield r.run("prof-cxx1024-mpi2", ["prof", cxx, "-o", db], (db,), prefix=[mpiexec, "-n", "2"])
    for name, path in vendor_sources():
        meas = r.out("ingest", name + ".m")
        line = r.run(f"ingest-{name}", ["ingest", path, "-o", meas], (meas,))
        yield line
        if os.path.isdir(meas):
            db = r.out("ingest-prof", name + ".d")
            yield r.run(f"prof-ingest-{name}", ["prof", meas, "-o", db, "-j", "1"], (db,))
            databases.append((f"ingest-{name}", db))
    synth = r.out("synth", "gpu.m")
    yield r.run("synth-gpu", ["synth", synth, "-n", "32", "--gpu", "--contexts", "500"], (synth,))
    synth_cpu = r.out("synth", "cpu.m")
    yield r.run("synth-cpu", ["synth", synth_cpu, "-n", "32", "--contexts", "500"], (synth_cpu,))
    for tag, path in (("synth-gpu", synth), ("synth-cpu", synth_cpu)):
        db = r.out("prof", tag + ".d")
        yield r.run(f"prof-{tag}", ["prof", path, "-o", db, "-j", "1"], (db,))
        databases.append((tag, db))
    for fixture in ("seed003.d", "threads.d", "scaling-p2.d", "scaling-q4.d"):
        databases.append(("fixture-" + fixture, os.path.join(ROOT, "fixtures", "views", fixture)))
    for tag, db in databases:
        if os.path.isdir(db):
            yield from views(r, tag, db)
    ref = os.path.join(SHARED, "hpctoolkit", "dbase")
    for name in ("loops-cuda-nvidiapc-t", "small", "loops-hip-amd-t"):
        ours = r.out("prof", f"{name}.m-struct-j1.d")
        yield r.run(f"diff-{name}", ["diff", os.path.join(ref, name + ".d"), ours])
    yield r.run("scaling-fixture", ["scaling", os.path.join(ROOT, "fixtures/views/scaling-p2.d"),
                                    os.path.join(ROOT, "fixtures/views/scaling-q4.d"), "--format", "json"])
    gpu_meas = os.path.join(SHARED, "hpctoolkit", "meas", "recursion-cuda-nvidiapc-t.m")
    if os.path.isdir(gpu_meas):
        for f in sorted(os.listdir(gpu_meas)):
            if f.endswith(".hpcrun"):
                yield r.run(f"gpucct-{f}", ["gpucct", os.path.join(gpu_meas, f)])
                yield r.run(f"dump-{f}", ["dump", os.path.join(gpu_meas, f), "--max-values", "100"])
    demo = r.out("demo")
    yield r.run("demo", ["demo", "-o", demo], (demo,))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hpcsa", default=os.path.join(ROOT, ".venv", "bin", "hpcsa"))
    parser.add_argument("--work", required=True, help="scratch directory (the same for the runs compared)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", action="append", default=[], metavar="PREFIX",
                        help="run only the steps whose name starts with PREFIX (repeatable; a step that needs an "
                        "earlier step's output finds it only if that step runs too)")
    args = parser.parse_args()
    shutil.rmtree(args.work, ignore_errors=True)  # caches too: both runs start from nothing
    os.makedirs(args.work)
    runner = Runner(os.path.abspath(args.hpcsa), os.path.abspath(args.work), tuple(args.only))
    for line in manifest(runner, args.quick):
        if line is not None:
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
