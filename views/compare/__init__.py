"""N databases on one aligned tree (``hpcsa compare``, ``hpcsa.compare``): statistics across runs, the run
catalog, scaling series with growth models, a regression gate for CI, runs of one program on several GPU
vendors side by side.

    >>> import hpcsa
    >>> cmp = hpcsa.compare(["before.d", "after.d"])         # also hpcsa.views.compare.compare
    >>> cmp.stats("CPUTIME").mean                            # per aligned context
    >>> cmp.to_pandas()                                      # tidy: run, path, metric, scope, value

Modules, one job each: :mod:`.paths` (what names a context across runs), :mod:`.align` (the union tree),
:mod:`.runview` (one run's view as nodes), :mod:`.frames` and :mod:`.vendors` (vendor-neutral names),
:mod:`.comparison` (reading the runs; the API object), :mod:`.stats`, :mod:`.catalog`, :mod:`.series` and
:mod:`.models` (scaling and Extra-P-style growth models), :mod:`.gate` (``--fail-if``), :mod:`.table` (the
views as text), :mod:`.tidy` (CSV, Parquet, JSON records), :mod:`.plot` (PNG), :mod:`.serve` (the page of
``hpcsa serve DB1 DB2 ...``).
"""

from hpcsa.views.compare.comparison import Comparison, compare

__all__ = ["Comparison", "compare"]
