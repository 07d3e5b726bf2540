"""``hpcsa demo``: the whole pipeline on a small CUDA application installed with hpcsa, in seconds.

The application is ``particles.cu`` (kernels calling device functions from loops, and a recursion), its
cubin, and the nvprof records of a PC-sampling run of it: package data of this command in
``hpcsa/cli/demo_data/`` (a wheel holds them; the scripts that build them are ``fixtures/demo/make_cubin.py``
and ``fixtures/demo/make_records.py`` of the source tree), with a CPU binary, ``sample.so`` (a copy of
``fixtures/structure/sample.so``). The demo runs the documented subcommands in this process, each
after printing its command line, so what it shows can be redone by hand step by step:
ingest (records + cubin -> measurement), struct (every binary of the measurement), prof (database, GPU
calling contexts reconstructed from PC samples), view (hot paths of GPU instructions and kernel time),
gpucct (the reconstructed tree per launch context), and struct on a CPU binary. It ends with the GPU
functions the reconstruction split over several call sites, and where the outputs are.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
import time
from collections.abc import Callable

import numpy as np

from hpcsa.core.errors import HpcsaError, output_error
from hpcsa.core.outputs import STDOUT

#: The demo's inputs, installed with the package (``[tool.setuptools.package-data]`` in pyproject.toml).
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "demo_data")
RECORDS = os.path.join(DATA, "particles.nvprof")
CUBIN = os.path.join(DATA, "particles-sm75.cubin")
SOURCE = os.path.join(DATA, "particles.cu")
CPU_BINARY = os.path.join(DATA, "sample.so")
MARKER = ".hpcsa-demo"  # written into the output directory: only such a directory is replaced


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-o", "--output", default="demo-out",
                        help="directory for the demo's outputs (default demo-out; a previous demo output there "
                        "is replaced)")


class StepFailed(Exception):
    """A subcommand of the demo exited non-zero (it has printed why)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def shown(path: str) -> str:
    """``path`` as the user would type it here: relative below the working directory, else absolute."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def prepare_output(out: str) -> None:
    """Make ``out`` an empty demo directory; replace only a previous demo output or an empty directory."""
    if os.path.lexists(out):
        if not os.path.isdir(out) or os.path.islink(out):
            raise HpcsaError(out, "exists and is not a directory (choose another -o)")
        if os.listdir(out) and not os.path.exists(os.path.join(out, MARKER)):
            raise HpcsaError(out, f"exists and is not an hpcsa demo output (no {MARKER} inside): remove it or "
                             "choose another -o")
        try:
            shutil.rmtree(out)
        except OSError as exc:
            raise output_error(out, exc) from None
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise HpcsaError(out, "the directory to write into does not exist")
    try:
        os.mkdir(out)
        with open(os.path.join(out, MARKER), "w", encoding="utf-8") as fh:
            fh.write("written by `hpcsa demo`; the next demo run with this -o replaces this directory\n")
    except OSError as exc:
        raise output_error(out, exc) from None


def check_inputs() -> None:
    for path in (RECORDS, CUBIN, SOURCE, CPU_BINARY):
        if not os.path.isfile(path):
            raise HpcsaError(path, "demo input missing: this installation of hpcsa is incomplete (reinstall it)")


class Steps:
    """Numbered steps: a title, the command line, then the subcommand itself (its output and summary)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0

    def header(self, title: str) -> None:
        self.done += 1
        print(f"\n[{self.done}/{self.total}] {title}", flush=True)

    def command(self, argv: list[str]) -> None:
        from hpcsa.cli.main import main

        print("$ hpcsa " + shlex.join(argv), flush=True)
        status = main(argv)
        sys.stdout.flush()
        sys.stderr.flush()
        if status:
            raise StepFailed(status)

    def python(self, title: str, fn: Callable[[], None]) -> None:
        self.header(title)
        fn()
        sys.stdout.flush()


def source_remap(meas: str) -> list[str]:
    """``-R`` for prof, so the database gets a copy of particles.cu for viewers' source panes: the cubin names
    the source where it was compiled; the copy installed with the demo's inputs is found through the remapping."""
    import re

    here = DATA
    structs = os.path.join(meas, "structs")
    for name in sorted(os.listdir(structs)) if os.path.isdir(structs) else []:
        with open(os.path.join(structs, name), encoding="utf-8", errors="replace") as fh:
            m = re.search(r'n="(/[^"]*)/particles\.cu"', fh.read())
        if m and m.group(1) != here:
            return ["-R", f"{m.group(1)}={here}"]
    return []


def sampled_profiles(meas: str) -> list[str]:
    """The measurement's .hpcrun files that hold GPU launch contexts with PC samples."""
    from hpcsa.formats.measurement.hpcrun import read_hpcrun
    from hpcsa.gpucct.launches import launch_contexts

    out = []
    for name in sorted(os.listdir(meas)):
        if name.endswith(".hpcrun"):
            path = os.path.join(meas, name)
            if any(ctx.samples for ctx in launch_contexts(read_hpcrun(path))):
                out.append(path)
    return out


def call_site_splits(db: str, metric: str = "GINS") -> list[str]:
    """Lines describing every function of a GPU binary called from more than one call-site line, with the
    share of its inclusive ``metric`` through each (what the reconstruction apportioned)."""
    from hpcsa.views import open_experiment
    from hpcsa.views import tree as T

    exp = open_experiment(db)
    c = exp.cct
    inc = exp.inclusive(metric)
    par = np.maximum(c.parent, 0)
    called = np.flatnonzero((c.kind == T.FUNCTION) & (c.relation == T.CALL) & (c.kind[par] == T.LINE)
                            & (c.parent >= 0) & (np.nan_to_num(inc) > 0))
    lines = []
    for f in np.unique(c.function[called]).tolist():
        rows = called[c.function[called] == f]
        sites: dict[str, float] = {}
        for r in rows.tolist():
            site = exp.scope_name(int(c.parent[r]))
            sites[site] = sites.get(site, 0.0) + float(inc[r])
        if len(sites) < 2:
            continue
        total = sum(sites.values())
        split = ", ".join(f"{100 * v / total:.1f}% via {s}" for s, v in sorted(sites.items(), key=lambda kv: -kv[1]))
        lines.append(f"  {exp.function_name(f)}: {split}")
    return lines


def cpu_summary(struct_path: str, binary: str) -> str:
    """What structure recovery found in the CPU binary, in one line."""
    from hpcsa.formats.hpcstruct.model import GUARD_NAME, INNER_ALIEN, L, P, S
    from hpcsa.formats.hpcstruct.reader import read_hpcstruct

    module = read_hpcstruct(struct_path).modules[0]
    sc = module.scopes
    kinds = sc["kind"]
    with_source = [module.text(int(n)) for n, line, k in zip(sc["name"].tolist(), sc["line"].tolist(),
                                                             kinds.tolist(), strict=True) if k == P and line > 0]
    inlined = sorted({module.text(int(sc["name"][r])) or "" for r in np.flatnonzero(module.alien_role == INNER_ALIEN)}
                     - {GUARD_NAME, ""})
    depth = np.zeros(len(sc), np.int64)
    for r, (k, p) in enumerate(zip(kinds.tolist(), sc["parent"].tolist(), strict=True)):
        depth[r] = (depth[p] if p >= 0 else 0) + (k == L)
    names = ", ".join(n.split(" [")[0] for n in with_source if n)
    return (f"{os.path.basename(binary)}: {int(np.count_nonzero(kinds == P))} procedures ({len(with_source)} with "
            f"source: {names}), {int(np.count_nonzero(kinds == L))} loops (nests up to {int(depth.max())} deep), "
            f"{int(np.count_nonzero(kinds == S))} statements, inlined: {', '.join(inlined) or 'none'}")


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    check_inputs()
    if args.output == STDOUT:
        raise HpcsaError(STDOUT, "the demo's outputs are a directory, which standard output cannot hold: name it")
    out = shown(os.path.abspath(args.output))
    prepare_output(out)
    meas, db, cpu_struct = (os.path.join(out, n) for n in ("app.m", "app.d", "sample.hpcstruct"))
    print(f"hpcsa demo: the pipeline on the bundled particles application ({shown(os.path.dirname(RECORDS))}: "
          f"particles.cu, its sm_75 cubin, nvprof records of a PC-sampling run); outputs in {out}/", flush=True)
    steps = Steps(7)
    try:
        steps.header("ingest: nvprof records + the application's cubin -> HPCToolkit measurement directory")
        steps.command(["ingest", shown(RECORDS), "--binary", shown(CUBIN), "-o", meas])
        steps.header("struct: structure of every binary in the measurement (GPU functions, loops, call sites)")
        steps.command(["struct", meas])
        steps.header("prof: aggregate into a database; GPU calling contexts reconstructed from PC samples")
        steps.command(["prof", meas, "-o", db, *source_remap(meas)])
        steps.header("view: hot path of GPU instructions (GINS: PC samples x period) and their stalls")
        steps.command(["view", db, "--hot-path", "-m", "GINS", "-m", "GINS:STL_ANY"])
        steps.header("view: hot path of GPU kernel time")
        steps.command(["view", db, "--hot-path", "-m", "GKER (sec)", "-m", "GKER:COUNT"])
        steps.header("gpucct: the reconstructed GPU calling contexts (call-site weights -> split factors)")
        for path in sampled_profiles(meas):
            steps.command(["gpucct", shown(path)])
        splits = call_site_splits(db)
        print("GPU functions reached from several call sites (share of their GINS in the database):")
        print("\n".join(splits) if splits else "  none", flush=True)
        steps.header("struct: a CPU binary (x86-64 ELF with DWARF: loops, inlining, jump tables)")
        steps.command(["struct", shown(CPU_BINARY), "-o", cpu_struct])
        print(cpu_summary(cpu_struct, CPU_BINARY), flush=True)
    except StepFailed as failed:
        print(f"hpcsa demo: step {steps.done}/{steps.total} failed (see above)", file=sys.stderr)
        return failed.status
    print(f"\nhpcsa demo: done in {time.monotonic() - started:.1f} s; outputs in {out}/:\n"
          f"  {shown(meas)}/  measurement directory (.hpcrun/.hpctrace per thread and GPU stream, gpubins/, "
          f"structs/)\n"
          f"  {shown(db)}/  database (meta.db profile.db cct.db trace.db metrics/): hpcviewer opens it\n"
          f"  {shown(cpu_struct)}  structure of {shown(CPU_BINARY)}\n"
          f"next: hpcsa view {shown(db)} --view flat -m GINS    hpcsa view {shown(db)} --view callers -m GINS\n"
          f"browse it (from a laptop: ssh -L 8765:127.0.0.1:8765 THIS-HOST first, then open the URL it prints):\n"
          f"  hpcsa serve {shown(db)}")
    return 0
