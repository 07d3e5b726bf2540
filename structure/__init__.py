"""Program structure: the ``.hpcstruct`` format and its recovery from binaries (``hpcsa struct``).

Entry points:

* :mod:`hpcsa.formats.hpcstruct.stream` — ``read_hpcstruct(path)``, ``iter_modules(path)`` (streaming, one
  load module at a time); :mod:`hpcsa.formats.hpcstruct.writer` — ``write_hpcstruct(path, sf)``.
* :mod:`hpcsa.formats.hpcstruct.model` — ``StructureFile`` / ``Module`` (scopes as numpy columns) with the
  queries the aggregation needs: ``Module.lookup(addresses)`` (innermost statement per address,
  vectorized), ``Module.lexical_path(row)`` (hpcprof's contexts for a statement), ``Module.procedures``
  (by entry), ``Module.call_sites`` (GPU call graph); ``ModuleBuilder`` to produce structure.
* :mod:`hpcsa.structure.binary` — ``analyze_binary(path, lm_name, jobs)``: the structure of one ELF
  binary (x86-64 here; NVIDIA and AMD GPU binaries through their own modules).
* :mod:`hpcsa.structure.measdir` — ``struct_measdir(measdir, load_modules, jobs)``: every binary a measurement recorded.
* :mod:`hpcsa.formats.hpcstruct.compare` — agreement of two structure files of one binary.
"""
