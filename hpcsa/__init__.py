"""hpcsa: postmortem performance analysis of GPU-accelerated HPC programs.

The pipeline's stages live in sibling packages that share this namespace:
``hpcsa.ingest`` (measurements and vendor records), ``hpcsa.structure`` (binary
structure), ``hpcsa.gpucct`` (GPU calling-context reconstruction),
``hpcsa.aggregate`` (databases) and ``hpcsa.views`` (analyses and exports).
Every hand-off between them is a real HPCToolkit file format.
"""

__version__ = "0.1.0"
