"""Vendor GPU-record readers: one module per tool, each registering one :class:`Reader`.

A reader recognises its files by content (never by name) and reads them into the common model,
:class:`~hpcsa.ingest.model.GpuTrace`. :mod:`hpcsa.ingest.sources` dispatches through this registry
only, so adding a tool means adding one module to this package that ends with::

    register(VendorReader(name="mytool", label="MyTool JSON", what="MyTool trace", rank=65,
                          recognise=looks_like, read=read))

The package's modules are imported in sorted name order the first time :func:`readers` is called,
and readers are tried in ``(rank, name)`` order, so recognition never depends on import order.
Readers that test a magic number, a required set of SQLite tables or a CSV header get low ranks;
ones that scan text for a line shape get high ranks, after every stricter test has said no.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from collections.abc import Callable
from functools import cached_property
from typing import Protocol, runtime_checkable

from hpcsa.core.dataclass import dataclass
from hpcsa.core.errors import HpcsaError, corrupt_input
from hpcsa.ingest import model as M
from hpcsa.ingest.sqlsrc import Db

#: How much of a file recognition sees as ``Probe.head`` (a reader may read further itself).
HEAD_BYTES = 4096


class NoRecords(HpcsaError):
    """Files of a reader's kind that hold no per-operation records (summaries only). Fatal only when
    no source read before them gave a trace."""


@dataclass
class Probe:
    """What recognition looks at: the path, its first :data:`HEAD_BYTES` bytes and, for an SQLite
    file, the open database (``db`` is None for every other file)."""

    path: str
    head: bytes
    db: Db | None = None

    @cached_property
    def text(self) -> str:
        """The head as text (undecodable bytes replaced)."""
        return self.head.decode("utf-8", errors="replace")


@runtime_checkable
class Reader(Protocol):
    """One tool's GPU-record files (its attributes are read-only: a frozen dataclass is one)."""

    @property
    def name(self) -> str:
        """The kind :func:`hpcsa.ingest.sources.classify` reports (stable, used in tests and scripts)."""

    @property
    def label(self) -> str:
        """How users know the format, for the list of accepted sources in messages and ``--help``."""

    @property
    def what(self) -> str:
        """The phrase in "<what> is corrupt or malformed (...)" when reading fails on bad data."""

    @property
    def rank(self) -> int:
        """Recognition order: lower ranks are tried first; ties break by name."""

    @property
    def sqlite(self) -> bool:
        """Recognised among SQLite files only (``probe.db`` is set) rather than among all other files."""

    @property
    def multi_file(self) -> bool:
        """All files of this kind given to one ``hpcsa ingest`` form one trace (a tool that splits one
        run over several files); else each file is one trace."""

    def recognise(self, probe: Probe) -> bool: ...

    def read(self, paths: list[str]) -> M.GpuTrace: ...


@dataclass(frozen=True)
class VendorReader:
    """A :class:`Reader` made of a module's recognise and read functions."""

    name: str
    label: str
    what: str
    rank: int
    recognise: Callable[[Probe], bool]
    read: Callable[[list[str]], M.GpuTrace]
    sqlite: bool = False
    multi_file: bool = False


def sqlite_read(read_db: Callable[[Db], M.GpuTrace]) -> Callable[[list[str]], M.GpuTrace]:
    """``read(paths)`` for a reader of one SQLite database: opens it read-only, always closes it."""

    def read(paths: list[str]) -> M.GpuTrace:
        db = Db(paths[0])
        try:
            return read_db(db)
        finally:
            db.close()

    return read


_REGISTRY: dict[str, Reader] = {}
_scanned: tuple[str, ...] = ()


def register(reader: Reader) -> Reader:
    """Add a reader (called by each module of this package when it is imported); returns it."""
    if not isinstance(reader, Reader):
        raise TypeError(f"{reader!r} does not implement the ingest Reader protocol")
    known = _REGISTRY.get(reader.name)
    if known is not None and known != reader:
        raise ValueError(f"two GPU-record readers are named {reader.name!r}")
    _REGISTRY[reader.name] = reader
    return reader


def unregister(name: str) -> None:
    _REGISTRY.pop(name, None)


def readers() -> list[Reader]:
    """Every registered reader in recognition order (importing this package's modules on first use)."""
    global _scanned
    if _scanned != tuple(__path__):
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
            importlib.import_module(f"{__name__}.{info.name}")
        _scanned = tuple(__path__)
    return sorted(_REGISTRY.values(), key=lambda r: (r.rank, r.name))


def accepted(sqlite: bool | None = None) -> str:
    """The accepted formats as a comma-separated list (SQLite ones only, others only, or all)."""
    return ", ".join(r.label if sqlite is not None or not r.sqlite else f"{r.label} SQLite"
                     for r in readers() if sqlite is None or r.sqlite == sqlite)


def read_group(reader: Reader, paths: list[str]) -> M.GpuTrace:
    """Read files of one kind; corrupt data becomes one error line naming the file (or, for a tool's
    several files, the directory holding them)."""
    where = paths[0] if len(paths) == 1 else os.path.dirname(paths[0]) or paths[0]
    with corrupt_input(where, reader.what):
        return reader.read(paths)
