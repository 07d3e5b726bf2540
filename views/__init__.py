"""Views, analyses and exports over HPCToolkit databases (``hpcsa view``, the Python API).

    >>> from hpcsa.views import open_experiment
    >>> exp = open_experiment("app.d")
    >>> exp.top_down().hot_path("CPUTIME")
"""

from hpcsa.views.data import ProfileInfo
from hpcsa.views.experiment import Experiment, open_experiment

__all__ = ["Experiment", "ProfileInfo", "open_experiment"]
