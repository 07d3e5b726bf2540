"""Structure of one binary: dispatch by ELF machine type to the analysis that handles it.

x86-64 CPU binaries are analysed here (:mod:`hpcsa.structure.x86.build`). GPU
binaries go to the GPU modules of this package, looked up by name so that
they can arrive separately: a function ``build_module(image, lm_name, jobs)
-> (Module, notes)`` in ``hpcsa.structure.gpu.cubin`` (NVIDIA, EM_CUDA = 190) and in
``hpcsa.structure.gpu.amdgpu`` (AMD, EM_AMDGPU = 224), the same contract as the x86-64 builder's. A note
that starts with ``warning:`` says the result is degraded (e.g. no disassembler: no loops or calls).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import field

import capstone
from elftools.common.exceptions import DWARFError, ELFError

from hpcsa.core.dataclass import dataclass
from hpcsa.core.demangle import demangle
from hpcsa.core.errors import FormatError, UnsupportedError
from hpcsa.formats.hpcstruct.model import C, L, Module, P, S, StructureFile, renumber
from hpcsa.formats.hpcstruct.writer import write_hpcstruct
from hpcsa.structure.elf import (
    EM_AMDGPU,
    EM_CUDA,
    ElfImage,
    machine_name,
    open_elf,
    require_x86_64,
)
from hpcsa.structure.gpu import device_code as device_code_mod
from hpcsa.structure.x86.build import build_module

# ELF machine -> "module:function" building a Module for GPU binaries.
GPU_BUILDERS: dict[int, str] = {
    EM_CUDA: "hpcsa.structure.gpu.cubin:build_module",
    EM_AMDGPU: "hpcsa.structure.gpu.amdgpu:build_module",
}


@dataclass
class BinaryStructure:
    """The result for one binary: its structure file and notes on what could not be recovered."""

    structure: StructureFile
    notes: list[str] = field(default_factory=list)
    #: With ``device_code``: the structure of each GPU code object a host binary embeds, one file each
    #: (hpcstruct's ``<md5>.gpubin-gpucfg-yes.hpcstruct``, one ``<LM gpubins/<md5>.gpubin>``), keyed by md5.
    device: dict[str, StructureFile] = field(default_factory=dict)

    @property
    def module(self) -> Module:
        return self.structure.modules[0]


def split_notes(notes: list[str]) -> tuple[list[str], list[str]]:
    """(warnings, plain notes): a builder marks a degraded result with a ``warning:`` prefix."""
    warnings = [n.removeprefix("warning: ") for n in notes if n.startswith("warning: ")]
    return warnings, [n for n in notes if not n.startswith("warning: ")]


def gpu_builder(machine: int, path: str) -> Callable[[ElfImage, str, int], tuple[Module, list[str]]]:
    target = GPU_BUILDERS[machine]
    module_name, func = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError:
        raise UnsupportedError(path, f"{machine_name(machine)} binaries: GPU structure recovery is not "
                               "available in this build") from None
    builder = getattr(module, func, None)
    if builder is None:
        raise UnsupportedError(path, f"{machine_name(machine)} binaries: GPU structure recovery is not "
                               f"available in this build ({target} is missing)")
    return builder


def analyze_binary(path: str | os.PathLike[str], lm_name: str | None = None, jobs: int = 1,
                   device_code: bool = False) -> BinaryStructure:
    """Recover the structure of the ELF binary at ``path``; ``lm_name`` is the path written in ``<LM n>``
    (default: the binary's real path). A fatbin or offload bundle (compressed or not) is analysed through
    the GPU code objects inside it; with ``device_code``, those a host binary embeds are analysed too, each
    into a structure file of its own (``BinaryStructure.device``; :mod:`hpcsa.structure.gpu.device_code`)."""
    path = os.fspath(path)
    name = lm_name if lm_name is not None else os.path.realpath(path)
    if device_code_mod.is_container(path):
        modules, notes = device_code_mod.container_modules(path, name, jobs, _analyze_gpu_file)
        return _result(modules, notes)
    image = open_elf(path)
    machine = image.machine
    if machine in GPU_BUILDERS:
        module, notes = gpu_builder(machine, path)(image, name, jobs)
        return _result([module], notes)
    _require_cpu_binary(image, path)
    with _one_line_errors(path):
        module, notes = build_module(image, demangle, name, jobs=jobs)
    device, notes = _device_code(image, path, jobs, device_code, notes)
    result = _result([module], notes)
    result.device = device
    return result


def _device_code(image: ElfImage, path: str, jobs: int, wanted: bool, notes: list[str]
                 ) -> tuple[dict[str, StructureFile], list[str]]:
    """The structure files of the GPU code a host binary embeds (with ``wanted``), else a note that it has some."""
    containers = device_code_mod.embedded_sections([s.name for s in image.sections])
    device: dict[str, StructureFile] = {}
    if wanted:
        extra, more = device_code_mod.embedded_modules(path, jobs, _analyze_gpu_file)
        for m in extra:
            device[device_code_mod.gpubin_md5(m.path)] = _result([m], []).structure
        notes = notes + more
    elif containers:
        notes = notes + [f"holds GPU code in {', '.join(containers)}; its structure comes from a measurement's "
                         "gpubins/, or from hpcsa struct --device-code on this binary"]
    return device, notes


def _result(modules: list[Module], notes: list[str]) -> BinaryStructure:
    sf = StructureFile(modules=modules)
    renumber(sf)
    return BinaryStructure(sf, notes)


def _analyze_gpu_file(path: str, lm_name: str, jobs: int) -> tuple[Module, list[str]]:
    """One GPU code object taken out of a container (a cubin or AMD code object file)."""
    image = open_elf(path)
    if image.machine not in GPU_BUILDERS:
        raise FormatError(path, f"a {machine_name(image.machine)} ELF where a GPU code object was expected")
    return gpu_builder(image.machine, path)(image, lm_name, jobs)


@dataclass
class WrittenStructure:
    """What :func:`write_structure` wrote: scopes by kind (hpcsa.formats.hpcstruct.model's codes), notes, and the
    structure files of the GPU code a host binary embeds (with ``device_code``), keyed by md5."""

    counts: dict[int, int]
    notes: list[str] = field(default_factory=list)
    modules: int = 1
    device: dict[str, StructureFile] = field(default_factory=dict)


def write_structure(path: str | os.PathLike[str], outputs: list[str], lm_name: str | None = None,
                    jobs: int = 1, device_code: bool = False, keep: list[object] | None = None
                    ) -> WrittenStructure:
    """Write the structure file of the binary at ``path`` to each of ``outputs`` (the same bytes as
    ``write_hpcstruct`` of :func:`analyze_binary`'s result). x86-64 binaries are rendered straight from their
    procedure groups, in ``jobs`` processes (:mod:`hpcsa.structure.x86.textbuild`), never assembled as a Module;
    ``keep`` takes what they were built from (see :func:`hpcsa.core.lifetime.keeper`)."""
    path = os.fspath(path)
    image = None if device_code_mod.is_container(path) else open_elf(path)
    if image is None or image.machine in GPU_BUILDERS:
        result = analyze_binary(path, lm_name, jobs)
        for out in outputs:
            write_hpcstruct(out, result.structure)
        mods = result.structure.modules
        return WrittenStructure({k: sum(m.count(k) for m in mods) for k in (P, L, S, C)}, result.notes,
                                modules=len(mods))
    from hpcsa.structure.x86.textbuild import build_text

    name = lm_name if lm_name is not None else os.path.realpath(path)
    _require_cpu_binary(image, path)
    with _one_line_errors(path):
        text, notes = build_text(image, demangle, name, jobs=jobs, keep=keep)
    for out in outputs:
        text.write(out)
    if keep is not None:
        keep.append(text)
    device, notes = _device_code(image, path, jobs, device_code, notes)
    return WrittenStructure(dict(text.counts), notes, device=device)


def _require_cpu_binary(image: ElfImage, path: str) -> None:
    require_x86_64(image)  # anything else is refused, naming its architecture
    if image.elf.header["e_type"] == "ET_REL":
        raise UnsupportedError(path, "a relocatable object file (.o): its code has no addresses yet; "
                               "analyse the executable or shared library it is linked into")


@contextlib.contextmanager
def _one_line_errors(path: str) -> Iterator[None]:
    try:
        yield
    except (IndexError, KeyError, ValueError, OverflowError, struct.error, capstone.CsError, ELFError,
            DWARFError, AssertionError) as exc:  # pyelftools asserts on some malformed sections
        # Inputs that pass the header checks but are inconsistent deeper down (a fuzzed or damaged
        # file) must still end in one line; the exception type helps a bug report.
        raise FormatError(path, f"could not be analysed: inconsistent contents ({type(exc).__name__}: "
                          f"{exc})") from None
