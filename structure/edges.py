"""Control-flow edge kinds (Dyninst ParseAPI's names), shared by the CPU (capstone) and GPU (nvdisasm, AMDGPU)
control-flow graphs and the code that walks them."""

E_TAKEN, E_NOT_TAKEN, E_DIRECT, E_FALLTHROUGH, E_CALL_FT, E_INDIRECT = range(6)
