"""Recognise GPU-record sources by content (SQLite table names, CSV headers, text line shapes, magic)
and read them into :class:`~hpcsa.ingest.model.GpuTrace` objects.

One source file is one trace, except for tools that split one run over several
files: rocprofv3 CSVs given together form one trace (they share correlation
ids), and unitrace's timeline/summary texts given together form one trace.
A directory stands for the files in it.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable

from hpcsa.errors import FormatError, HpcsaError, corrupt_input
from hpcsa.ingest import model as M
from hpcsa.ingest.sqlsrc import SQLITE_MAGIC, Db

CUPTI_UTIL = "cupti-pcsampling-util"
#: Sources read one file at a time: kind -> (module, what the file is).
FILE_READERS = {"kineto": ("kineto", "PyTorch profiler (Kineto) trace"), "rocprofv2": ("rocprofv2", "rocprofv2 trace")}


def _head(path: str, n: int = 4096) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(n)
    except FileNotFoundError:
        raise HpcsaError(path, "no such file or directory") from None
    except IsADirectoryError:
        raise HpcsaError(path, "is a directory") from None
    except OSError as exc:
        raise HpcsaError(path, f"cannot read: {exc.strerror or exc}") from None


def classify(path: str) -> str:
    """The kind of source a file is: nsys, nvprof, rocpd, rocprof-v1, rocprofv3-csv, unitrace, cupti-util."""
    head = _head(path)
    if not head:
        raise FormatError(path, "empty file")
    if head.startswith(SQLITE_MAGIC):
        db = Db(path)
        try:
            return _classify_db(db)
        finally:
            db.close()
    from hpcsa.ingest import cuptiutil, kineto, rocprofv2, rocprofv3, unitrace

    if cuptiutil.looks_like(head):
        return CUPTI_UTIL
    if kineto.looks_like(path, head):
        return "kineto"
    text = head.decode("utf-8", errors="replace")
    if rocprofv3.looks_like(text):
        return "rocprofv3-csv"
    if unitrace.looks_like(text):
        return "unitrace"
    if rocprofv2.looks_like(path, head):
        return "rocprofv2"
    raise FormatError(path, "not a GPU-record source hpcsa recognises (Nsight Systems or nvprof SQLite, "
                      "rocpd SQLite, rocprof v1 results.db, rocprofv3 CSV, rocprofv2 text, unitrace text, "
                      "PyTorch profiler/Kineto JSON, CUPTI PC-sampling file)")


def _classify_db(db: Db) -> str:
    from hpcsa.ingest import nsys, nvprof, rocpd, rocprofv1

    if nsys.is_nsys(db):
        return "nsys"
    if nvprof.is_nvprof(db):
        return "nvprof"
    if rocpd.is_rocpd(db):
        return "rocpd"
    if rocprofv1.is_rocprofv1(db):
        return "rocprof-v1"
    raise FormatError(db.path, "an SQLite database without the tables of any GPU-record export hpcsa reads "
                      "(Nsight Systems, nvprof, rocpd, rocprof v1)")


def expand(paths: list[str]) -> list[str]:
    out = []
    for p in paths:
        if os.path.isdir(p):
            found = sorted(os.path.join(p, n) for n in os.listdir(p) if os.path.isfile(os.path.join(p, n)))
            if not found:
                raise HpcsaError(p, "directory has no files")
            out += found
        else:
            out.append(p)
    return out


def read_sources(paths: list[str], skip_unknown_in_dirs: bool = True) -> list[M.GpuTrace]:
    """Read every source; files of one multi-file tool run are merged into one trace."""
    from hpcsa.ingest import cuptiutil, nsys, nvprof, rocpd, rocprofv1, rocprofv3, unitrace

    dir_files = {f for p in paths if os.path.isdir(p) for f in expand([p])}
    kinds: list[tuple[str, str]] = []
    for f in expand(paths):
        try:
            kinds.append((f, classify(f)))
        except FormatError:
            if f in dir_files and skip_unknown_in_dirs:
                continue  # other files of a tool's output directory (stats, sysinfo...)
            raise
    readers: dict[str, Callable[[Db], M.GpuTrace]] = {"nsys": nsys.read, "nvprof": nvprof.read,
                                                      "rocpd": rocpd.read, "rocprof-v1": rocprofv1.read}
    traces = []
    csvs = [f for f, k in kinds if k == "rocprofv3-csv"]
    texts = [f for f, k in kinds if k == "unitrace"]
    for f, kind in kinds:
        if kind in readers:
            db = Db(f)
            try:
                with corrupt_input(f, f"{kind} database"):
                    traces.append(readers[kind](db))
            finally:
                db.close()
        elif kind == CUPTI_UTIL:
            with corrupt_input(f, "CUPTI PC-sampling file"):
                traces.append(cuptiutil.read(f))
        elif kind in FILE_READERS:
            module, what = FILE_READERS[kind]
            with corrupt_input(f, what):
                traces.append(importlib.import_module(f"hpcsa.ingest.{module}").read(f))
    if csvs:
        with corrupt_input(csvs[0] if len(csvs) == 1 else os.path.dirname(csvs[0]) or csvs[0],
                           "rocprofv3 CSV output"):
            csv_trace = rocprofv3.read(csvs)
        if csv_trace is not None:
            traces.append(csv_trace)
        elif not traces:
            raise HpcsaError(csvs[0], "rocprofv3 summary CSVs only (stats, agent info...): no per-operation records")
    if texts:
        with corrupt_input(texts[0] if len(texts) == 1 else os.path.dirname(texts[0]) or texts[0],
                           "unitrace output"):
            traces.append(unitrace.read(texts))
    if not traces:
        raise HpcsaError(paths[0] if paths else None, "no GPU-record source found")
    return traces
