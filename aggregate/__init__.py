"""``hpcsa prof``: measurement directories and structure files aggregated into a database, as hpcprof does.

The work is split into phases that are functions of their inputs, run by a transport (one process with
worker processes, or the ranks of an MPI job); :mod:`.driver` runs them, in this order, as one straight
sequence of steps, and :mod:`.driver`'s docstring is the specification. Modules are named by the phase they
serve:

0. :mod:`.phase0.gpu_graphs`: the GPU structure files and their call graphs, on every rank.
1. Phase 1, class 2 (hpcprof's name for what every process needs before values can be attributed):
   :mod:`.phase1.survey` reads each profile once (its nodes: :mod:`.profile_nodes`; what phase 2 will need of
   it kept: :mod:`.kept`); :mod:`.phase1.structs` parses the CPU structure files those profiles need
   (:mod:`.phase1.cache_lookups` looks their parsed-structure cache up on a spare CPU,
   :mod:`.phase1.chain_warmer` expands their sampled offsets meanwhile); :mod:`.phase1.share` hands this
   rank's share of that work out. Rank 0 then assembles the class-2 tables (:mod:`.phase1.class2`: the
   unified tree, :mod:`.phase1.unify`; the profiles' order, :mod:`.phase1.id_tuples`).
2. Phase 2, class 1: each profile's values located (:mod:`.phase2.points`), propagated and streamed to
   scratch files (:mod:`.phase2.values`), its trace line to trace.db (:mod:`.phase2.traces`), in batches
   handed out by :mod:`.phase2.share`.
3. Phase 3, class 3: cct.db by transposing the profiles (:mod:`.phase3.transpose`), the summary statistics
   computed on the way (:mod:`.phase3.summary`), by groups of context ranges handed out by
   :mod:`.phase3.share`.

Between the phases: :mod:`.handoff` declares everything one step hands to the next; :mod:`.sinks` owns the
database's files, one sink each (meta.db's tables: :mod:`.metadb_tables`; ``src/``: :mod:`.copy_sources`).
Where the phases run: :mod:`.transport` (one process) and :mod:`.mpi` (MPI ranks), beside the local worker
pool of :mod:`hpcsa.core.workers`. What every phase uses: :mod:`~hpcsa.aggregate.inputs` (what is read), :mod:`.profile_table`
(per-profile columns), :mod:`.rawtree` (the union of the measured trees), :mod:`.lexical` (classification of
instructions), :mod:`.metrictable` (the metrics and their ids), :mod:`.gpu_contexts` (GPU calling contexts
reconstructed).
"""
