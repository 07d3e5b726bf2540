"""Synthetic and replicated measurement directories at any scale, shaped like what hpcrun writes for a
parallel program (``hpcsa synth``, the benchmarks): the template program (:mod:`.program`), one profile
(:mod:`.profiles`), a whole directory (:mod:`.directory`), and copies of a real one under other identities
(:mod:`.replicate`)."""
