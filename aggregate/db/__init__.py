"""The database formats hpcprof writes and viewers read: ``meta.db``, ``profile.db``, ``cct.db``, ``trace.db``
and ``metrics/default.yaml``, each declared once and shared by its reader and its writer.

This is the part of :mod:`hpcsa.aggregate` that views, exports and other tools import.
"""
