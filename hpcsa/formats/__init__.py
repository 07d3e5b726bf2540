"""Every HPCToolkit file format that crosses a stage of the pipeline, one package per family, each record
declared once and shared by its reader and writer, with the format's rules beside it:

* :mod:`hpcsa.formats.measurement` -- what hpcrun writes: ``.hpcrun`` profiles, ``.hpctrace`` traces,
  placeholders, the load modules a measurement records;
* :mod:`hpcsa.formats.hpcstruct` -- what hpcstruct writes: the ``.hpcstruct`` model, readers, writer and the
  parsed-structure cache;
* :mod:`hpcsa.formats.db` -- what hpcprof writes: ``meta.db``, ``profile.db``, ``cct.db``, ``trace.db``,
  ``metrics/default.yaml``, the summary statistics and the four-scope propagation;
* :mod:`hpcsa.formats.sniff` and :mod:`hpcsa.formats.dump` -- any of them recognised by content and shown as
  YAML (``hpcsa dump``)."""
