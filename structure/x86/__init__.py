"""Structure of x86-64 ELF binaries as hpcstruct recovers it: linear sweeps with capstone, functions,
control-flow graphs (computed gotos included), loops, the inline tree per function, the structure file written
straight from procedure groups."""
