"""The rule ``hpcsa blame`` propagates its new metrics by (:func:`scope_tree`), by hand on a tree with loops."""

from __future__ import annotations

import numpy as np

from hpcsa.formats.db.propagate import propagate_scopes
from hpcsa.views import tree as T
from hpcsa.views.blame.attribute import scope_tree
from tests.views.synthetic import DatabaseBuilder


def test_blame_scopes_by_hand() -> None:
    #   0 root                      = 8   (unattributed idleness goes here)
    #   1   entry                   = 16
    #   2     main         (call)
    #   3       loop L1                   no value of its own
    #   4         line a            = 1
    #   5         loop L2
    #   6           line b          = 2
    #   7       g          (inlined)
    #   8         line c            = 4
    b = DatabaseBuilder()
    src, app = b.file("/src/app.c"), b.module("/app")
    main = b.call(None, b.function("main", app))
    l1 = b.loop(main, src, 10)
    b.line(l1, src, 11)
    l2 = b.loop(l1, src, 12)
    b.line(l2, src, 13)
    g = b.inlined(main, b.function("g", app))
    b.line(g, src, 20)
    cct = T.CCT.from_meta(b.meta(["X"]))
    tree, rule = scope_tree(cct)
    ids = np.array([0, 1, 4, 6, 8])
    rows = cct.row_of(ids)
    p = propagate_scopes(rows, np.zeros(5, np.int64), np.array([8.0, 16.0, 1.0, 2.0, 4.0]), tree, rule=rule)
    got = {sc: dict(zip(cct.ctx_id[p.ctx].tolist(), getattr(p, sc).tolist(), strict=True))
           for sc in ("point", "function", "lex_aware", "execution")}
    assert got["point"] == {0: 8, 1: 16, 2: 0, 3: 0, 4: 1, 5: 0, 6: 2, 7: 0, 8: 4}
    assert got["execution"] == {0: 31, 1: 23, 2: 7, 3: 3, 4: 1, 5: 2, 6: 2, 7: 4, 8: 4}
    # the global root and the entry point keep point and execution only; main leaves the inlined g out
    assert got["function"] == {0: 0, 1: 0, 2: 3, 3: 3, 4: 1, 5: 2, 6: 2, 7: 4, 8: 4}
    # every loop its loop-free sum, L1 without a value of its own too (hpcprof's thread value would be 3)
    assert got["lex_aware"] == {0: 0, 1: 0, 2: 3, 3: 1, 4: 1, 5: 2, 6: 2, 7: 4, 8: 4}
