"""hpcsa: postmortem performance analysis of GPU-accelerated HPC programs.

One stack of floors, each importing only those below it: :mod:`hpcsa.cli` (one module per subcommand),
:mod:`hpcsa.views` (analyses and exports), :mod:`hpcsa.aggregate` (``hpcsa prof``), :mod:`hpcsa.gpucct` (GPU
calling-context reconstruction), :mod:`hpcsa.ingest` (vendor records) and :mod:`hpcsa.structure` (binary
structure), :mod:`hpcsa.formats` (every HPCToolkit file format between them) and :mod:`hpcsa.core` (what
everything shares). The stages meet at the formats: every hand-off between them is a real HPCToolkit file.
"""

__version__ = "0.1.0"
