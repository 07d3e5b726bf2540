"""Phase 1 of ``hpcsa prof`` and class 2: every profile read once for what the shared tables need
(:mod:`.survey`), the CPU structure files it needs parsed (:mod:`.structs`), this rank's share of that work
(:mod:`.share`), and the unified tables assembled from the merged reports (:mod:`.class2`)."""
