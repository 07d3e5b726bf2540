"""Structure of GPU code: NVIDIA cubins (control flow from ``nvdisasm``), AMD code objects, and the containers
they ship in (fatbins, clang offload bundles, sections of host binaries), assembled the way ``hpcstruct
--gpucfg yes`` does."""
