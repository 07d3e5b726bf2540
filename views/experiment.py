"""The Python API over a database: open it lazily, get the tree, metric columns and per-profile values.

    >>> from hpcsa.views import open_experiment
    >>> exp = open_experiment("app.d")            # meta.db parsed; no profile value read yet
    >>> exp.catalog.find("CPUTIME").name          # metric columns ($n numbering)
    >>> exp.inclusive("CPUTIME")                  # numpy column over exp.cct rows (summary Sum)
    >>> exp.top_down().hot_path("CPUTIME")        # the hot path (Adhianto et al. 2010, eq. 3)
    >>> exp.to_dataframe(); exp.to_hatchet()

:class:`Experiment` is the database as the views read it (:class:`~hpcsa.views.data.ExperimentData`: values
from the summary profile when first asked for, one thread profile or one context across all profiles only on
request) with the views and exports as methods.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from hpcsa.views.data import ExperimentData

if TYPE_CHECKING:
    import pandas as pd

    from hpcsa.views.bottomup import CallersForest
    from hpcsa.views.flat import FlatForest
    from hpcsa.views.topdown import TopDownForest


class Experiment(ExperimentData):
    """A database opened for analysis: its data, and its views and exports."""

    # -- views --------------------------------------------------------------------------------------------

    def top_down(self) -> TopDownForest:
        from hpcsa.views.topdown import TopDownForest
        return TopDownForest(self)

    def bottom_up(self, depth: int = 2) -> CallersForest:
        from hpcsa.views.bottomup import CallersForest
        return CallersForest(self, depth)

    def flat(self) -> FlatForest:
        from hpcsa.views.flat import FlatForest
        return FlatForest(self)

    # -- exports -----------------------------------------------------------------------------------------

    def to_dataframe(self, metrics: list[str] | None = None, profiles: bool = False) -> pd.DataFrame:
        """The top-down tree as a pandas DataFrame (see :mod:`hpcsa.views.export`)."""
        from hpcsa.views.export import to_dataframe
        return to_dataframe(self, metrics, profiles)

    def to_hatchet(self, metrics: list[str] | None = None, **kwargs: Any) -> Any:
        """An LLNL hatchet GraphFrame (``pip install hpcsa[hatchet]``); see :mod:`hpcsa.views.export`."""
        from hpcsa.views.export import to_hatchet
        return to_hatchet(self, metrics, **kwargs)


def open_experiment(path: str | os.PathLike[str]) -> Experiment:
    """Open a database directory for the views (meta.db read now, values on request)."""
    return Experiment.open(path)


__all__ = ["Experiment", "open_experiment"]
