"""The database formats hpcprof writes and viewers read: ``meta.db``, ``profile.db``, ``cct.db``, ``trace.db``
and ``metrics/default.yaml``, each declared once and shared by its reader and its writer, with the rules that
define their values: the summary statistics (:mod:`.summary`) and the four propagation scopes
(:mod:`.propagate`). Whole database directories are opened and written by :mod:`.database`.
"""
