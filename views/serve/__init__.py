"""``hpcsa serve``: a read-only web viewer of one database over the views' Python API.

:mod:`~hpcsa.views.serve.model` answers the page's questions with the views' forests and analyses,
hpcviewer's name filters are :mod:`hpcsa.views.filters` (shared with ``hpcsa view --filter``),
:mod:`~hpcsa.views.serve.trace` the trace view's per-pixel summaries, :mod:`~hpcsa.views.serve.source` the
source copies in ``src/``, :mod:`~hpcsa.views.serve.server` the token-protected HTTP side and ``static/`` the
page (plain HTML, CSS and JavaScript).
"""
