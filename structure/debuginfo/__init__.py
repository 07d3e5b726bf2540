"""The debug information structure recovery reads: DWARF units and forms, line tables (with a vectorized
line-program decoder) and inlined call chains, gathered into a binary's line map and inline table
(:mod:`.source_info`)."""
