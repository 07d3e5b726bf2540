"""Phase 3 of ``hpcsa prof``, class 3: cct.db by transposing the profiles' values (:mod:`.transpose`), the
summary statistics reduced on the way (:mod:`.summary`), by groups of context ranges (:mod:`.share`)."""
