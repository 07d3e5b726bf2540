"""Phase 0 of ``hpcsa prof``: the GPU structure files parsed and their call graphs built, on every rank
(every reader of phase 1 needs them)."""
