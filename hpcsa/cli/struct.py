"""``hpcsa struct``: program structure (.hpcstruct) of a binary, or of every binary of a measurement.

For a measurement directory the measurement's reader lists the load modules (``hpcsa.ingest``) and
structure recovery analyses them (``hpcsa.structure``, which needs no measurement).
"""

from __future__ import annotations

import argparse
import os
import sys

from hpcsa.core import lifetime
from hpcsa.core.errors import HpcsaError
from hpcsa.core.outputs import STDOUT
from hpcsa.core.progress import Progress


def register(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="BINARY|MEASDIR",
                        help="an ELF binary (x86-64; GPU binaries where supported), or a measurement directory")
    parser.add_argument("-o", "--output", metavar="OUT",
                        help="structure file to write for a BINARY (default: ./<binary name>.hpcstruct; - for standard output)")
    parser.add_argument("-j", "--jobs", type=int, default=1, metavar="N",
                        help="worker processes (MEASDIR: binaries in parallel; BINARY: parts of one binary)")
    parser.add_argument("--name", metavar="PATH",
                        help="load-module path to record in the file (default: the binary's real path)")
    parser.add_argument("--cache", metavar="DIR", default=os.environ.get("HPCSA_STRUCT_CACHE"),
                        help="MEASDIR: shared cache of structure files by binary content "
                        "(default: $HPCSA_STRUCT_CACHE)")
    parser.add_argument("--all-modules", action="store_true",
                        help="MEASDIR: also binaries without samples")
    parser.add_argument("--device-code", action="store_true",
                        help="BINARY: also the GPU code a host executable or library embeds (.nv_fatbin, "
                        ".hip_fatbin; compressed or not): one MD5.gpubin-gpucfg-yes.hpcstruct per code object, "
                        "beside OUT, for <LM gpubins/MD5.gpubin>")
    parser.add_argument("--force", action="store_true", help="MEASDIR: redo binaries whose results are cached")
    parser.add_argument("--binaries", metavar="DIR", action="append", default=[],
                        help="MEASDIR: a folder to look in, by file name, for binaries that are not at the path "
                        "the measurement recorded (moved, or measured on another machine); repeatable")


def run(args: argparse.Namespace) -> int:
    if args.jobs < 1:
        raise HpcsaError(None, f"-j must be at least 1 (got {args.jobs})")
    target = args.target
    if os.path.isdir(target):
        if args.output:
            raise HpcsaError(target, "-o applies to a single binary; a measurement directory's structure "
                             "files go to its structs/ directory")
        from hpcsa.formats.measurement.loadmodules import measurement_load_modules
        from hpcsa.structure.measdir import struct_measdir

        for folder in args.binaries:
            if not os.path.isdir(folder):
                raise HpcsaError(folder, "--binaries: not a folder")
        load_modules = measurement_load_modules(os.path.abspath(target), args.all_modules)
        progress = Progress("hpcsa struct: binaries")
        report = struct_measdir(target, load_modules, jobs=args.jobs, cache_dir=args.cache, force=args.force,
                                progress=progress, search=args.binaries)
        for w in report.warnings:
            print(f"hpcsa: warning: {w}", file=sys.stderr)
        for n in report.notes:
            print(f"hpcsa: note: {n}", file=sys.stderr)
        for path, why in report.replaced:
            print(f"hpcsa: note: {path}: replaced ({why})", file=sys.stderr)
        _report_missing(target, report.missing)
        for path, why in report.failed:
            print(f"hpcsa: error: {path}: {why}", file=sys.stderr)
        progress.finish(report.summary(os.path.abspath(target)))
        return 2 if report.failed and not report.written and not report.cached else 0

    from hpcsa.formats.hpcstruct.model import C, L, P, S
    from hpcsa.formats.hpcstruct.writer import write_hpcstruct
    from hpcsa.structure.binary import split_notes, write_structure
    from hpcsa.structure.gpu.device_code import structure_file_name

    progress = Progress(f"hpcsa struct: {target}")
    out = args.output or os.path.basename(target) + ".hpcstruct"
    if out == STDOUT and args.device_code:
        raise HpcsaError(target, "--device-code writes a structure file per GPU code object beside OUT: "
                         "-o - (standard output) holds only one")
    result = write_structure(target, [out], lm_name=args.name, jobs=args.jobs, device_code=args.device_code,
                             keep=lifetime.keeper())
    for md5, sf in sorted(result.device.items()):
        write_hpcstruct(os.path.join(os.path.dirname(os.path.abspath(out)), structure_file_name(md5)), sf)
    warnings, notes = split_notes(result.notes)
    for w in warnings:
        print(f"hpcsa: warning: {target}: {w}", file=sys.stderr)
    for note in notes:
        print(f"hpcsa: note: {target}: {note}", file=sys.stderr)
    counts = dict(result.counts)
    for sf in result.device.values():
        for module in sf.modules:
            for k in (P, L, S, C):
                counts[k] = counts.get(k, 0) + module.count(k)
    mods = result.modules + sum(len(sf.modules) for sf in result.device.values())
    more = f" in {mods} load modules" if mods > 1 else ""
    if result.device:
        more += f" (GPU code: {len(result.device)} more structure file(s) beside it)"
    progress.finish(f"hpcsa struct: {'standard output' if out == STDOUT else out}: {counts.get(P, 0)} procedures, "
                    f"{counts.get(L, 0)} loops, {counts.get(S, 0) + counts.get(C, 0)} statements{more}")
    return 0


def _report_missing(measdir: str, missing: list[str]) -> None:
    """One line per binary not found here: what covers it instead (a structure file the measurement holds),
    or what it costs (the share of the samples that stay raw addresses) and the fix."""
    if not missing:
        return
    from hpcsa.formats.measurement.shares import module_shares
    from hpcsa.structure.measdir import structure_files_by_module

    covered = structure_files_by_module(measdir)
    uncovered = [m for m in missing if m not in covered]
    profiles = sorted(os.path.join(measdir, f) for f in os.listdir(measdir) if f.endswith(".hpcrun"))
    shares = module_shares(profiles) if uncovered else None
    for m in missing:
        if m in covered:
            print(f"hpcsa: note: {m}: not found here; the measurement's {os.path.relpath(covered[m], measdir)} "
                  "covers it (kept)", file=sys.stderr)
        elif shares is None or shares.share(m) == 0:
            print(f"hpcsa: note: {m}: not found here (no samples fall in it)", file=sys.stderr)
        else:
            print(f"hpcsa: warning: {shares.describe(m)} falls in {m}, not found here (its samples stay "
                  "addresses): give the folder that holds it with --binaries DIR, or its structure file to "
                  "hpcsa prof with -S", file=sys.stderr)

