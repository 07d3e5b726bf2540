"""``hpcsa ingest --binary FILE``: the user's GPU code matched to the records.

A binary may be a cubin or AMD code object, a fatbin, a clang offload bundle,
or a host executable or library with GPU code embedded; every GPU ELF image
inside it is a candidate, compressed fatbin entries and ``CCOB`` bundles
decompressed (:func:`~hpcsa.structure.gpu.gpubin.device_images`). An image
is matched to a record's kernel symbols when it defines them (by name, the one
identity every source records), and to a code object id when the source names a
module the image is the only candidate for. Matched images are carried as the
code object's bytes, so the writer puts them in ``gpubins/`` and places kernels
and PC samples at their real offsets. CUPTI's cubin CRC is recorded but cannot be
recomputed offline (its algorithm is not published), so it is not the key.
"""

from __future__ import annotations

from hpcsa.core.errors import HpcsaError
from hpcsa.core.fileio import read_input
from hpcsa.ingest import model as M
from hpcsa.structure.gpu.gpubin import device_images, entry_offsets, ptx_entries


def load_images(paths: list[str]) -> list[tuple[str, bytes, dict[str, int]]]:
    images = []
    for path in paths:
        data = read_input(path)
        found = device_images(data, path)
        if not found and ptx_entries(data, path):
            raise HpcsaError(path, "holds only PTX, no cubin: the CUDA driver compiled it when the program ran; "
                             "give the cubin instead (hpcrun's gpubins/, or a build with -arch=sm_XX)")
        if not found:
            raise HpcsaError(path, "holds no NVIDIA or AMD GPU code (no cubin or code object ELF inside, "
                             "compressed or not)")
        images += [(path, e.data, entry_offsets(e.data)) for e in found]
    return images


def attach_binaries(traces: list[M.GpuTrace], paths: list[str]) -> int:
    """Give every code object of the traces whose kernels an image defines that image's bytes;
    kernels without a code object get one. Returns the number of matched code objects."""
    images = load_images(paths)
    matched = 0
    for tr in traces:
        names = {s.name for s in tr.symbols} | {tr.strings[int(n)] for n in tr.ops["name"][tr.ops["kind"] == M.KERNEL]}
        for _path, data, entries in images:
            if not names & set(entries):
                continue
            code_ids = {s.code_object for s in tr.symbols if s.name in entries and s.code_object != M.NONE}
            if not code_ids:
                code_ids = {max(list(tr.code_objects) + [0]) + 1}
            for cid in code_ids:
                co = tr.code_objects.setdefault(cid, M.CodeObject(cid, "cubin"))
                if co.data is None:
                    co.data = data
                    matched += 1
            cid = min(code_ids)
            for s in tr.symbols:
                if s.name in entries and s.code_object == M.NONE:
                    s.code_object = cid
            # Kernel launches that name a function of this image but no symbol get one.
            k = tr.ops["kind"] == M.KERNEL
            for i in range(len(tr.ops)):
                if k[i] and tr.ops["code"][i] < 0:
                    name = tr.strings[int(tr.ops["name"][i])]
                    if name in entries:
                        tr.ops["code"][i] = tr.symbol(M.KernelSymbol(name, cid))
    if not matched:
        raise HpcsaError(paths[0], "none of the GPU functions in the given binaries appears in the records")
    return matched
