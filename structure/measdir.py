"""``hpcsa struct MEASDIR``: structure files for the binaries a measurement used, as hpcstruct makes them.

The caller lists the load modules the measurement records (the measurement's
reader does: :func:`hpcsa.formats.measurement.loadmodules.measurement_load_modules`).
Paths recorded under the measurement's original location (``original-path``)
or relative to it (``vdso/...``) are found in the directory itself. With
``-j N`` each binary is analysed in a process of its own (one killed fails that
binary alone); results go to ``MEASDIR/structs/`` as ``<basename>.hpcstruct``
with the recorded path in ``<LM n>`` (what hpcprof matches on). A binary whose content hash matches what produced an existing
structure file is skipped (``structs/.hpcsa-cache.json``); a shared cache
directory (``--cache`` or ``HPCSA_STRUCT_CACHE``) holds results by content
hash across measurements.

Identity: ``gpubins/`` and ``vdso/`` files are named by the MD5 of their
content, which is checked; for other binaries the measurement records no
identity, so a binary modified after the measurement is reported as such and
the others are reported once as unverifiable.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import field
from typing import Any

from hpcsa import __version__
from hpcsa.core import digests
from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError
from hpcsa.core.fileio import find_by_name
from hpcsa.core.forking import wait
from hpcsa.core.outputs import directory_problem, write_file
from hpcsa.core.progress import Progress
from hpcsa.core.workers import ForkedWorker, can_fork
from hpcsa.formats.hpcstruct.peek import first_module_path
from hpcsa.formats.hpcstruct.reader import read_hpcstruct
from hpcsa.formats.hpcstruct.writer import write_hpcstruct

CACHE_INDEX = ".hpcsa-cache.json"
_HASHED_NAME = re.compile(r"^([0-9a-f]{32})\.(gpubin|vdso)$")


@dataclass
class Target:
    recorded: str          # path as the measurement records it (goes into <LM n>)
    path: str              # where the binary is on this machine
    output: str            # structs/<name>.hpcstruct
    expected_md5: str | None = None
    by_name: bool = False  # found by its file name in a --binaries folder, not at the recorded path


@dataclass
class MeasdirReport:
    written: list[str] = field(default_factory=list)
    cached: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    #: structure files the measurement had that were replaced, with why they were not kept
    replaced: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)   # identity problems
    notes: list[str] = field(default_factory=list)      # what a binary lacks (debug information...)

    def summary(self, measdir: str) -> str:
        return (f"hpcsa struct: {measdir}: {len(self.written)} structure files written, {len(self.cached)} up to "
                f"date, {len(self.missing)} binaries not found, {len(self.failed)} failed")


def file_md5(path: str) -> str:
    with open(path, "rb") as fh:
        return digests.file_digest(fh, digests.md5()).hexdigest()


def _original_path(measdir: str) -> str | None:
    try:
        with open(os.path.join(measdir, "original-path"), encoding="utf-8", errors="replace") as fh:
            text = fh.read().strip()
        return text or None
    except OSError:
        return None


def find_targets(measdir: str, load_modules: Iterable[str], search: Sequence[str] = ()
                 ) -> tuple[list[Target], list[str]]:
    """The binaries of a measurement directory's recorded load-module paths (found ones, and the recorded
    paths that are missing on this machine). A binary not at its recorded path is looked for by its file
    name in the folders of ``search`` (``--binaries``), in order."""
    measdir = os.path.abspath(measdir)
    original = _original_path(measdir)
    targets: list[Target] = []
    missing: list[str] = []
    used_names: set[str] = set()
    for rec in sorted(set(load_modules)):
        local = locate(measdir, original, rec)
        moved = local is None and search
        if moved:
            local = find_by_name(rec, search)
        if local is None:
            missing.append(rec)
            continue
        base = os.path.basename(rec)
        name = base
        k = 2
        while name in used_names:  # two libraries with one basename: keep both
            name = f"{base}.{k}"
            k += 1
        used_names.add(name)
        m = _HASHED_NAME.match(base)
        # hpcstruct's names: <binary>.hpcstruct, and <md5>.gpubin-gpucfg-yes.hpcstruct for GPU binaries
        suffix = "-gpucfg-yes.hpcstruct" if name.endswith(".gpubin") else ".hpcstruct"
        targets.append(Target(rec, local, os.path.join(measdir, "structs", name + suffix),
                              m.group(1) if m else None, by_name=bool(moved)))
    return targets, missing


def structure_files_by_module(measdir: str) -> dict[str, str]:
    """The structure files a measurement directory holds (``structs/*.hpcstruct``) by the load-module path
    each names: those that cover a binary not found here."""
    structs = os.path.join(os.path.abspath(measdir), "structs")
    found: dict[str, str] = {}
    for name in sorted(os.listdir(structs)) if os.path.isdir(structs) else []:
        if name.endswith(".hpcstruct"):
            path = os.path.join(structs, name)
            with _suppress_os_errors():
                module = first_module_path(path)
                if module:
                    found.setdefault(module, path)
    return found


def locate(measdir: str, original: str | None, recorded: str) -> str | None:
    """The file a recorded load-module path names on this machine."""
    candidates = []
    if not os.path.isabs(recorded):
        candidates.append(os.path.join(measdir, recorded))
    else:
        if original and recorded.startswith(original.rstrip("/") + "/"):
            candidates.append(os.path.join(measdir, recorded[len(original.rstrip("/")) + 1:]))
        for sub in ("gpubins", "vdso"):
            marker = f"/{os.path.basename(measdir)}/{sub}/"
            if marker in recorded:
                candidates.append(os.path.join(measdir, sub, os.path.basename(recorded)))
        candidates.append(recorded)
    return next((c for c in candidates if os.path.isfile(c)), None)


_CODE_FINGERPRINT: str | None = None


def _code_fingerprint() -> str:
    """A hash of the code that makes structure files (this package and the demangler): a cached result made
    by other code (an upgrade that changes names, loops or lines) is never reused, whatever the version says."""
    global _CODE_FINGERPRINT
    if _CODE_FINGERPRINT is None:
        from hpcsa.core import demangle
        from hpcsa.formats import hpcstruct

        h = digests.content_digest(__version__.encode())
        sources = [(name, path) for package in (os.path.dirname(os.path.abspath(__file__)), hpcstruct.__path__[0])
                   for name, path in _python_files(package)]
        for name, path in [*sources, ("demangle.py", os.path.abspath(demangle.__file__))]:
            with open(path, "rb") as fh:
                h.update(name.encode() + b"\0" + fh.read())
        _CODE_FINGERPRINT = h.hexdigest()
    return _CODE_FINGERPRINT


def _python_files(package: str) -> list[tuple[str, str]]:
    """(name relative to the package's parent, path) of every module of a package and its subpackages."""
    found = []
    for base, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        found += [(os.path.relpath(os.path.join(base, f), os.path.dirname(package)), os.path.join(base, f))
                  for f in sorted(files) if f.endswith(".py")]
    return found


def analysis_key(path: str, md5: str) -> str:
    """What a structure file depends on: the binary's content, its separate debug file's (a libc6-dbg
    installed or updated later changes the result) and the code that analysed them."""
    h = digests.content_digest(f"{md5}\0{_code_fingerprint()}".encode())
    try:
        from hpcsa.structure.elf import open_elf

        debug = open_elf(path).debug_link
    except (HpcsaError, OSError, ValueError):
        debug = None
    if debug:
        h.update(b"\0debug\0" + file_md5(debug).encode())
    return h.hexdigest()[:40]


def _analyze(path: str, recorded: str, output: str, cache_dir: str | None, key: str,
             keep: list[object] | None = None) -> tuple[str, list[str]]:
    """Worker: analyse one binary and write its structure file (also into the shared cache)."""
    from hpcsa.structure.binary import write_structure

    result = write_structure(path, [output], lm_name=recorded, keep=keep)
    if cache_dir:
        with _suppress_os_errors():
            with open(output, "rb") as fh:
                write_file(os.path.join(cache_dir, f"{key}.hpcstruct"), fh.read())
    return output, result.notes


class _suppress_os_errors:
    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: object, exc: object, tb: object) -> bool:
        return isinstance(exc, (OSError, HpcsaError))


def _from_cache(cached: str, recorded: str, output: str) -> bool:
    try:
        sf = read_hpcstruct(cached)
    except HpcsaError:
        return False
    if len(sf.modules) != 1:
        return False
    sf.modules[0].path = recorded
    write_hpcstruct(output, sf)
    return True


def struct_measdir(measdir: str, load_modules: Iterable[str], jobs: int = 1, cache_dir: str | None = None,
                   force: bool = False, progress: Progress | None = None, search: Sequence[str] = ()
                   ) -> MeasdirReport:
    """Write structs/ for the recorded load-module paths of a measurement directory (the measurement's
    reader lists them: ``hpcsa.formats.measurement.loadmodules``); binaries moved from their recorded paths
    are looked for by name in ``search`` (``--binaries``). The caller prints the report (warnings, then
    ``report.summary``)."""
    measdir = os.path.abspath(measdir)
    targets, missing = find_targets(measdir, load_modules, search)
    report = MeasdirReport(missing=missing)
    structs = os.path.join(measdir, "structs")
    try:
        os.makedirs(structs, exist_ok=True)
    except OSError as exc:
        raise HpcsaError(structs, f"cannot create the structs directory: {exc.strerror or exc}") from None
    if cache_dir:
        try:
            os.makedirs(cache_dir, exist_ok=True)
        except OSError as exc:
            raise HpcsaError(cache_dir, f"cannot use as the cache of structure files (--cache, "
                             f"$HPCSA_STRUCT_CACHE): {directory_problem(exc)}") from None
    index_path = os.path.join(structs, CACHE_INDEX)
    index: dict[str, dict[str, str]] = {}
    if os.path.isfile(index_path):
        try:
            with open(index_path, encoding="utf-8") as fh:
                index = json.load(fh)
        except (OSError, ValueError):
            index = {}
    measured_at = min(os.path.getmtime(os.path.join(measdir, f)) for f in os.listdir(measdir)
                      if f.endswith(".hpcrun"))
    unverified = 0
    work = []
    for t in targets:
        md5 = file_md5(t.path)
        if t.expected_md5 is not None:
            if md5 != t.expected_md5:
                report.warnings.append(f"{t.path}: its content (MD5 {md5}) is not the binary the measurement "
                                       f"recorded (MD5 {t.expected_md5}); analysed anyway")
        elif t.by_name:  # a copy's time says nothing: name what stands for what, and that nothing vouches for it
            report.warnings.append(f"{t.path} stands for {t.recorded} (found by its file name in --binaries): "
                                   "the measurement records no identity to check that it is the measured build")
        elif os.path.getmtime(t.path) > measured_at:
            report.warnings.append(f"{t.path}: modified after the measurement was taken; its structure may "
                                   "not match the measured binary")
        else:
            unverified += 1
        key = analysis_key(t.path, md5)
        entry = index.get(os.path.basename(t.output))
        if not force and entry and entry.get("md5") == md5 and entry.get("key") == key \
                and os.path.isfile(t.output):
            report.cached.append(t.output)
            continue
        cached = os.path.join(cache_dir, f"{key}.hpcstruct") if cache_dir else None
        if not force and cached and os.path.isfile(cached) and _from_cache(cached, t.recorded, t.output):
            report.cached.append(t.output)
            index[os.path.basename(t.output)] = {"md5": md5, "key": key, "binary": t.recorded}
            continue
        if os.path.isfile(t.output):
            why = ("--force" if force and entry and entry.get("md5") == md5 and entry.get("key") == key
                   else "not made by hpcsa struct from this binary" if not entry
                   else "the binary changed since" if entry.get("md5") != md5
                   else "made by another version of hpcsa")
            report.replaced.append((t.output, why))
        work.append((t, md5, key))
    if unverified:
        report.warnings.append(f"{unverified} binar{'y' if unverified == 1 else 'ies'} read from the paths the "
                               "measurement recorded: the measurement records no identity for them, so the "
                               "files analysed may differ from the ones measured")
    if progress is None:
        progress = Progress("hpcsa struct: binaries", len(work), enabled=False)
    progress.total = len(work)
    # Biggest binaries first so that the pool does not end waiting on one of them.
    work.sort(key=lambda tm: -os.path.getsize(tm[0].path))
    results: dict[str, tuple[Target, str, str, list[str] | str]] = {}
    for i, outcome in _analyses([(t, key) for t, _md5, key in work], jobs, cache_dir):
        t, md5, key = work[i]
        results[t.output] = (t, md5, key, outcome)
        progress.advance()
    for out in sorted(results):
        t, md5, key, outcome = results[out]
        if isinstance(outcome, str):
            report.failed.append((t.path, outcome))
            continue
        report.written.append(out)
        index[os.path.basename(out)] = {"md5": md5, "key": key, "binary": t.recorded}
        from hpcsa.structure.binary import split_notes

        warnings, notes = split_notes(outcome)
        report.warnings.extend(f"{t.path}: {w}" for w in warnings)
        report.notes.extend(f"{t.path}: {note}" for note in notes)
    write_file(index_path, json.dumps(index, indent=1, sort_keys=True) + "\n")
    return report


KILLED = "the process analysing it ended without a result (killed: out of memory, or a signal)"


def _analyses(work: list[tuple[Target, str]], jobs: int, cache_dir: str | None
              ) -> Iterator[tuple[int, list[str] | str]]:
    """(index, :func:`_run_one`'s outcome) of each binary of ``work`` as it is done. With ``jobs`` > 1 each
    binary is analysed in a forked process of its own, ``jobs`` at a time in the order given (biggest first):
    a process killed (out of memory, a signal) fails its binary alone, and what one binary's analysis held
    is given back when its process ends."""
    if jobs <= 1 or len(work) <= 1 or not can_fork():
        for i, (t, key) in enumerate(work):
            yield i, _run_one(t, key, cache_dir)
        return
    waiting = list(range(len(work)))[::-1]
    running: dict[Any, tuple[int, ForkedWorker]] = {}
    try:
        while waiting or running:
            while waiting and len(running) < jobs:
                i = waiting.pop()
                worker = ForkedWorker(_analysis_process, *work[i], cache_dir, what="hpcsa struct")
                running[worker.conn] = (i, worker)
            for conn in wait(list(running)):
                i, worker = running.pop(conn)
                try:
                    outcome: list[str] | str = worker.receive("analysis")
                except HpcsaError:  # ended without sending
                    outcome = KILLED
                finally:
                    worker.close()
                yield i, outcome
    finally:
        for _, worker in running.values():
            worker.close()


def _analysis_process(conn: Any, t: Target, key: str, cache_dir: str | None) -> list[object]:
    """A forked process for one binary. Returns what the structure was built from, so that the process ends
    without freeing it (:class:`hpcsa.core.workers.ForkedWorker`)."""
    kept: list[object] = []
    conn.send(("analysis", _run_one(t, key, cache_dir, kept)))
    return kept


def _run_one(t: Target, key: str, cache_dir: str | None, keep: list[object] | None = None) -> list[str] | str:
    """A binary's notes, or the one-line reason it failed (never raises: one bad binary does not stop
    the others)."""
    try:
        return _analyze(t.path, t.recorded, t.output, cache_dir, key, keep)[1]
    except HpcsaError as exc:
        return exc.problem
    except Exception as exc:  # a defect in hpcsa: report it for this binary, keep going
        print(f"hpcsa: internal error on {t.path}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return f"internal error ({type(exc).__name__})"


__all__ = ["struct_measdir", "find_targets", "locate", "MeasdirReport"]
