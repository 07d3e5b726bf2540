"""``hpcsa prof``: measurement directories and structure files aggregated into a database, as hpcprof does.

The work is split into phases that are functions of their inputs, run by a transport (one process with
worker processes, or the ranks of an MPI job):

- :mod:`survey` (phase 1): each profile is read for what the shared tables need;
- :mod:`unified_tables`: the unified context tree, modules, files, functions and metrics, assigned once
  (hpcprof's "class 2" results);
- :mod:`profile_values` (phase 2): each profile's values expanded, propagated and streamed to
  ``profile.db`` and ``trace.db`` (hpcprof's "class 1");
- :mod:`transpose` (phase 3): ``cct.db`` by transposing the profiles, with the summary statistics
  computed on the way (hpcprof's "class 3").
"""
