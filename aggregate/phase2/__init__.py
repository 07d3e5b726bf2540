"""Phase 2 of ``hpcsa prof``, class 1: each profile's values located (:mod:`.points`), propagated into the four
scopes and streamed to scratch files (:mod:`.values`), its trace line written (:mod:`.traces`), by batches
(:mod:`.share`)."""
