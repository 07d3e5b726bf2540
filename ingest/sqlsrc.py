"""Read-only SQLite access shared by the SQLite-based readers (nsys, nvprof, rocpd, rocprof v1).

Exports are opened read-only (never modified, never journaled); every SQLite
failure becomes one :class:`~hpcsa.core.errors.FormatError` naming the file, and
query results come back as numpy columns so readers work on whole columns.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Sequence

import numpy as np

from hpcsa.core.errors import FormatError, HpcsaError
from hpcsa.ingest import model as M

SQLITE_MAGIC = b"SQLite format 3\0"


class Db:
    """A vendor's SQLite export opened read-only, with one clear error for a file that is not one."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        if not os.path.isfile(self.path):
            raise HpcsaError(self.path, "no such file")
        with open(self.path, "rb") as fh:
            if fh.read(16) != SQLITE_MAGIC:
                raise FormatError(self.path, "not an SQLite database")
        try:
            self.con = sqlite3.connect(f"file:{os.path.abspath(self.path)}?mode=ro&immutable=1", uri=True)
            self.con.execute("PRAGMA query_only = 1")
            # Exports hold text in other encodings too (e.g. captured environments): never fail on it.
            self.con.text_factory = lambda raw: raw.decode("utf-8", errors="replace")
            self._tables = {r[0] for r in self.con.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        except (sqlite3.Error, UnicodeError) as exc:
            raise FormatError(self.path, f"corrupt SQLite database ({exc})") from None
        self._columns: dict[str, list[str]] = {}

    def close(self) -> None:
        self.con.close()

    @property
    def tables(self) -> set[str]:
        return self._tables

    def has(self, table: str) -> bool:
        return table in self._tables

    def columns(self, table: str) -> list[str]:
        if table not in self._columns:
            self._columns[table] = [r[1] for r in self.execute(f'PRAGMA table_info("{table}")')]
        return self._columns[table]

    def execute(self, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        try:
            return self.con.execute(sql, params).fetchall()
        except (sqlite3.Error, UnicodeError) as exc:
            raise FormatError(self.path, f"corrupt or unexpected SQLite content ({exc})") from None

    def columns_of(self, sql: str, names: Sequence[str], params: Sequence[object] = ()) -> dict[str, np.ndarray]:
        """Run ``sql`` and return its result as one numpy array per named column (NULL -> 0 or '')."""
        rows = self.execute(sql, params)
        out: dict[str, np.ndarray] = {}
        columns = list(zip(*rows, strict=True)) if rows else [() for _ in names]
        for name, col in zip(names, columns, strict=True):
            first = next((v for v in col if v is not None), None)
            if isinstance(first, str | bytes):
                out[name] = np.array(["" if v is None else str(v) for v in col], dtype=object)
            elif None in col:
                out[name] = np.array([0 if v is None else v for v in col], dtype=np.int64)
            else:
                out[name] = np.array(col, dtype=np.int64) if col else np.zeros(0, np.int64)
        return out

    def col(self, table: str, name: str, default: str = "0") -> str:
        """``name`` if the table has that column, else a SQL literal (schemas add columns over time)."""
        return f'"{name}"' if name in self.columns(table) else default


# -- CUPTI activity tables, as Nsight Systems and nvprof export them ------------------------------------------

#: The columns of every CUPTI activity record of one GPU operation (``CUPTI_ACTIVITY_KIND_*``), under the
#: names the readers use.
OPERATION_COLUMNS = {"start": "start", "end": '"end"', "dev": "deviceId", "ctx": "contextId", "stream": "streamId",
                     "corr": "correlationId"}


#: CUPTI's CUpti_ActivitySynchronizationType (1 event, 2 stream wait event, 3 stream, 4 context) -> the
#: model's sync kinds, for the synchronization records of nsys and nvprof exports.
CUPTI_SYNC_TYPE = {1: M.SY_EVT, 2: M.SY_STRE, 3: M.SY_STR, 4: M.SY_CTX}


def cupti_sync_kinds(types: np.ndarray) -> np.ndarray:
    """The model's sync kind of each CUPTI synchronization type (0 for an unknown type)."""
    by_type = np.zeros(8, np.uint8)
    for t, k in CUPTI_SYNC_TYPE.items():
        by_type[t] = k
    return by_type[np.clip(types, 0, 7)]


def kernel_columns(db: Db, table: str) -> dict[str, str]:
    """A kernel record's launch configuration (grid and block sizes, registers, shared and local memory)."""
    return {"blocks": "gridX * gridY * gridZ", "threads": "blockX * blockY * blockZ", "regs": "registersPerThread",
            "sst": "staticSharedMemory", "sdy": "dynamicSharedMemory", "lmem": db.col(table, "localMemoryTotal")}


def activity(db: Db, table: str, columns: dict[str, str]) -> dict[str, np.ndarray] | None:
    """The named SQL ``columns`` of a CUPTI activity table (name -> expression), as numpy arrays; None where
    the export has no such table (no records of that kind)."""
    if not db.has(table):
        return None
    return db.columns_of(f"SELECT {', '.join(columns.values())} FROM {table}", list(columns))
