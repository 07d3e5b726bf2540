"""Structure of GPU code stored in containers: NVIDIA fatbins, clang offload bundles (plain or ``CCOB``
compressed), and the ``.nv_fatbin`` / ``.hip_fatbin`` sections of host executables and libraries.

A container file (``hpcsa struct app.fatbin``, or a ``gpubins/`` file that holds one) is analysed through
the GPU ELF images inside it, decompressed (:func:`hpcsa.structure.gpu.gpubin.device_images`): one image keeps
the load-module name the file would have had; several get one ``<LM>`` each. Images embedded in a host
binary are analysed on request (``hpcsa struct --device-code``), each into a structure file of its own
beside the host's, as hpcstruct names a GPU binary's (``<md5>.gpubin-gpucfg-yes.hpcstruct``). Every image
that does not keep the caller's name is named ``gpubins/<md5>.gpubin`` by the MD5 of its (decompressed)
bytes, the name hpcrun gives a GPU binary it saw loaded, so ``hpcsa prof`` matches it to a measurement's
``gpubins/`` file with the same content (``-S`` takes these files; so does a measurement's ``structs/``).

The GPU builders run external disassemblers on a file, so each image is written to a private temporary
directory first; errors name the container and the image.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable

from hpcsa.core.digests import md5
from hpcsa.core.errors import FormatError, HpcsaError
from hpcsa.core.fileio import read_input
from hpcsa.formats.hpcstruct.model import Module
from hpcsa.structure.gpu import fatbin, offload_bundle
from hpcsa.structure.gpu.gpubin import CONTAINER_SECTIONS, DeviceImage, device_images, ptx_entries

CONTAINER_MAGICS = (fatbin.MAGIC_BYTES, offload_bundle.MAGIC, offload_bundle.CCOB_MAGIC)
Analyze = Callable[[str, str, int], tuple[Module, list[str]]]


def is_container(path: str) -> bool:
    """Whether the file starts like a fatbin or an offload bundle (not an ELF)."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(24)
    except OSError:
        return False
    return head.startswith(CONTAINER_MAGICS)


def gpubin_name(data: bytes) -> str:
    """Where a GPU binary is kept in a measurement directory: named by its MD5, as hpcrun names it."""
    return f"gpubins/{md5(data).hexdigest()}.gpubin"


def gpubin_md5(name: str) -> str:
    """The MD5 in a name made by :func:`~hpcsa.structure.gpu.device_code.gpubin_name`."""
    return os.path.basename(name).removesuffix(".gpubin")


def structure_file_name(md5: str) -> str:
    """hpcstruct's name for the structure file of a GPU binary (what ``hpcsa struct MEASDIR`` writes too)."""
    return f"{md5}.gpubin-gpucfg-yes.hpcstruct"


def read_images(path: str) -> list[DeviceImage]:
    return device_images(read_input(path), path)


def container_modules(path: str, lm_name: str, jobs: int, analyze: Analyze) -> tuple[list[Module], list[str]]:
    """The modules of the GPU images in a fatbin or offload-bundle file."""
    images = read_images(path)
    if not images:
        with open(path, "rb") as fh:
            ptx = ptx_entries(fh.read(), path)
        raise FormatError(path, "a fatbin with only PTX, no cubin (the CUDA driver compiles it when the program "
                          "runs; its structure comes from the cubin, e.g. hpcrun's gpubins/)" if ptx else
                          "a fatbin or offload bundle with no NVIDIA or AMD GPU code object inside")
    single = len(images) == 1
    return image_modules(path, images, [lm_name] if single else [gpubin_name(i.data) for i in images], jobs,
                         analyze)


def embedded_modules(path: str, jobs: int, analyze: Analyze) -> tuple[list[Module], list[str]]:
    """The modules of the GPU images a host binary embeds (none: no modules, no notes)."""
    images = read_images(path)
    return image_modules(path, images, [gpubin_name(i.data) for i in images], jobs, analyze)


def image_modules(path: str, images: list[DeviceImage], names: list[str], jobs: int, analyze: Analyze
                  ) -> tuple[list[Module], list[str]]:
    modules: list[Module] = []
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="hpcsa-device-code-") as tmp:
        for img, name in zip(images, names, strict=True):
            # Named as the load module, as if that file had been given: code without line information goes
            # to the file "[<basename>]", as hpcstruct writes it.
            local = os.path.join(tmp, os.path.basename(name) or "image.gpubin")
            with open(local, "wb") as fh:
                fh.write(img.data)
            try:
                module, got = analyze(local, name, jobs)
            except HpcsaError as exc:
                raise type(exc)(path, f"{img.origin}: {exc.problem}") from None
            modules.append(module)
            notes.append(f"GPU code: {img.origin}, {len(img.data)} bytes, as <LM> {name}")
            notes += [n.replace(local, f"{path} ({img.origin})") for n in got]
    return modules, notes


def embedded_sections(section_names: list[str]) -> list[str]:
    """The GPU code container sections among a host binary's sections."""
    return [n for n in section_names if n in CONTAINER_SECTIONS]
