"""Recognise GPU-record sources by content and read them into :class:`~hpcsa.ingest.model.GpuTrace` objects,
through the readers registered in :mod:`hpcsa.ingest.vendors` (nothing here names a vendor).

One source file is one trace, except for tools that split one run over several
files (readers with ``multi_file``: rocprofv3 CSVs given together share
correlation ids, unitrace's timeline/summary texts describe one run): their files
form one trace. A directory stands for the files in it; files in it that no
reader recognises (a tool's stats, system info...) are skipped.
"""

from __future__ import annotations

from hpcsa.core.errors import FormatError, HpcsaError
from hpcsa.core.fileio import read_input
from hpcsa.ingest import model as M
from hpcsa.ingest.inputs import Inputs
from hpcsa.ingest.sqlsrc import SQLITE_MAGIC, Db
from hpcsa.ingest.vendors import HEAD_BYTES, NoRecords, Probe, Reader, accepted, read_group, readers


def recognise(path: str) -> Reader:
    """The registered reader whose format the file's content is (first in recognition order)."""
    head = read_input(path, HEAD_BYTES)
    if not head:
        raise FormatError(path, "empty file")
    sqlite = head.startswith(SQLITE_MAGIC)
    probe = Probe(path, head, Db(path) if sqlite else None)
    try:
        for reader in readers():
            if reader.sqlite == sqlite and reader.recognise(probe):
                return reader
    finally:
        if probe.db is not None:
            probe.db.close()
    if sqlite:
        raise FormatError(path, "an SQLite database without the tables of any GPU-record export hpcsa reads "
                          f"({accepted(sqlite=True)})")
    raise FormatError(path, f"not a GPU-record source hpcsa recognises ({accepted()})")


def classify(path: str) -> str:
    """The kind of source a file is: the name of the reader that recognises it."""
    return recognise(path).name


def read_sources(paths: list[str], skip_unknown_in_dirs: bool = True) -> list[M.GpuTrace]:
    """Read every source: single-file sources in the order given (a directory's or an archive's files in
    name order), then each multi-file tool's files together as one trace, tools in recognition order. Each
    trace's ``path`` is the file as the user knows it (``ARCHIVE:MEMBER`` for a member of an archive)."""
    with Inputs(paths) as inputs:
        traces: list[M.GpuTrace] = []
        groups: dict[str, tuple[Reader, list[str]]] = {}
        for f in inputs.files:
            try:
                reader = recognise(f.path)
            except FormatError as exc:
                if f.listed and skip_unknown_in_dirs:
                    continue  # other files of a tool's output directory (stats, sysinfo...)
                raise _shown(exc, inputs) from None
            if reader.multi_file:
                groups.setdefault(reader.name, (reader, []))[1].append(f.path)
            else:
                traces.append(_read(reader, [f.path], inputs))
        for reader, files in sorted(groups.values(), key=lambda g: (g[0].rank, g[0].name)):
            try:
                traces.append(_read(reader, files, inputs))
            except NoRecords:
                if not traces:
                    raise
    if not traces:
        raise HpcsaError(paths[0] if paths else None, "no GPU-record source found")
    return traces


def _shown(exc: HpcsaError, inputs: Inputs) -> HpcsaError:
    if exc.path is not None:
        exc.path = inputs.shown(exc.path)
    return exc


def _read(reader: Reader, files: list[str], inputs: Inputs) -> M.GpuTrace:
    try:
        trace = read_group(reader, files)
    except HpcsaError as exc:
        raise _shown(exc, inputs) from None
    trace.path = inputs.shown(trace.path)
    return trace
