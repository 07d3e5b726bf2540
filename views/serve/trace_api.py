"""The trace mode of ``hpcsa serve``'s API (``/api/trace/...``): hpctraceviewer's main, depth and summary views
and the window statistics, answered by :mod:`hpcsa.views.serve.trace` and :mod:`hpcsa.views.serve.tracestats`.

Every request names the rows it shows as positions in the list of shown rows (all, or with ``hide_empty=1``
those with activity), a time window ``t0``/``t1`` in the database's unit (ns since the epoch), and the
colouring: ``color=depth`` with ``depth``, or ``color=leaf``.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from hpcsa.views.serve.params import flag, integer
from hpcsa.views.serve.trace import TraceModel
from hpcsa.views.serve.tracestats import depth_view, window

if TYPE_CHECKING:
    from hpcsa.views.experiment import Experiment


class TraceApi:
    """Answers ``/api/trace/<name>``; the trace model is built on first use."""

    def __init__(self, exp: Experiment) -> None:
        self.exp = exp
        self._model: TraceModel | None = None
        self._error: str | None = None
        self._lock = threading.Lock()

    def model(self) -> TraceModel:
        with self._lock:
            if self._model is None and self._error is None:
                try:
                    self._model = TraceModel(self.exp)
                except LookupError as exc:
                    self._error = str(exc)
            if self._model is None:
                raise LookupError(self._error)
            return self._model

    def answer(self, name: str, q: dict[str, str]) -> Any:
        tm = self.model()
        t0, t1 = integer(q, "t0", tm.t_min), integer(q, "t1", tm.t_max)
        hide = flag(q, "hide_empty")
        color = q.get("color", "depth")
        depth = integer(q, "depth", 1)
        if name == "meta":
            return tm.meta(hide)
        if name == "pixels":
            return tm.pixels(t0, t1, integer(q, "width", 800), depth, integer(q, "first", 0),
                             integer(q, "count", len(tm.order)), integer(q, "height", 400), color, hide)
        if name == "window":
            return window(tm, t0, t1, depth, integer(q, "first", 0), integer(q, "count", len(tm.order)), color, hide)
        if name == "depth":
            return depth_view(tm, integer(q, "row"), t0, t1, integer(q, "width", 800), hide)
        if name == "callpath":
            return tm.call_path(integer(q, "row"), integer(q, "t"), hide)
        raise LookupError(f"no trace API {name!r}")
