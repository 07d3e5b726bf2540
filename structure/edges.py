"""Control-flow edge kinds (Dyninst ParseAPI's names), shared by the CPU (capstone) and GPU (nvdisasm, AMDGPU)
control-flow graphs and the code that walks them."""

E_TAKEN, E_NOT_TAKEN, E_DIRECT, E_FALLTHROUGH, E_CALL_FT, E_INDIRECT, E_CATCH = range(7)
#: E_CATCH: from a call inside a try region to its exception landing pad (:mod:`hpcsa.structure.x86.exceptions`);
#: it makes the landing pad code of the function, and the loop search ignores it, as ParseAPI's does.
