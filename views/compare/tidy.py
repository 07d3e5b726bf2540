"""A comparison as files: the tidy table, as CSV or Parquet (its rows: :func:`.comparison.run_rows`).

The tidy table has one row per run, context the run has, metric and scope, in the columns ``run``, ``path``,
``metric``, ``scope`` (``inclusive`` or ``exclusive``) and ``value`` -- the long form pandas, DuckDB and Dask
load directly, where one aligned context carries one ``path`` string in every run. A context a run does not
have has no row for that run (its absence is the "missing"); a run's value of 0 is a row with 0. It is
written run by run, so the file never needs more memory than one run's rows. Parquet needs ``pyarrow``
(``pip install 'hpcsa[parquet]'``).
"""

from __future__ import annotations

import csv
import os

import numpy as np

from hpcsa.core.errors import HpcsaError
from hpcsa.core.outputs import atomic_file
from hpcsa.views.compare.comparison import Comparison, run_rows

TIDY_COLUMNS = ("run", "path", "metric", "scope", "value")
FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".json": "json", ".txt": "text"}


def write_tidy(cmp: Comparison, path: str | os.PathLike[str]) -> int:
    """Write the tidy table as CSV or Parquet (by the file's suffix); returns the rows written."""
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    kind = FORMATS.get(suffix)
    if kind == "csv":
        return write_csv(cmp, path)
    if kind == "parquet":
        return write_parquet(cmp, path)
    raise HpcsaError(os.fspath(path), "the tidy table is written as .csv or .parquet")


def write_csv(cmp: Comparison, path: str | os.PathLike[str]) -> int:
    labels, paths, metrics = [r.label for r in cmp.runs], cmp.paths, [m.name for m in cmp.metrics]
    scopes = ("inclusive", "exclusive")
    rows = 0
    with atomic_file(path, "w") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(TIDY_COLUMNS)
        for run, n, m, s, v in run_rows(cmp):
            w.writerows(zip([labels[run]] * len(n), [paths[i] for i in n.tolist()],
                            [metrics[i] for i in m.tolist()], [scopes[i] for i in s.tolist()],
                            map(repr, v.tolist()), strict=True))
            rows += len(n)
    return rows


def write_parquet(cmp: Comparison, path: str | os.PathLike[str]) -> int:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise HpcsaError(os.fspath(path), "Parquet needs pyarrow: pip install 'hpcsa[parquet]' (or pyarrow)") from None
    dictionaries = {"run": pa.array([r.label for r in cmp.runs]), "path": pa.array(cmp.paths),
                    "metric": pa.array([m.name for m in cmp.metrics]), "scope": pa.array(["inclusive", "exclusive"])}
    schema = pa.schema([(k, pa.dictionary(pa.int32(), pa.string())) for k in TIDY_COLUMNS[:4]]
                       + [("value", pa.float64())])
    rows = 0
    with atomic_file(path, "wb") as fh:
        with pq.ParquetWriter(fh, schema) as writer:
            for run, n, m, s, v in run_rows(cmp):
                codes = {"run": np.full(len(n), run, np.int32), "path": n.astype(np.int32),
                         "metric": m.astype(np.int32), "scope": s.astype(np.int32)}
                arrays = [pa.DictionaryArray.from_arrays(pa.array(codes[k]), dictionaries[k]) for k in TIDY_COLUMNS[:4]]
                writer.write_batch(pa.record_batch(arrays + [pa.array(v, pa.float64())], schema=schema))
                rows += len(n)
    return rows
