"""Lexical chains of sampled instructions computed while phase 1 still reads profiles.

Class 2 expands every sampled (load module, offset) into its chain of lexical contexts (procedure, inlined
calls, loops, line) from the module's structure file. hpcprof does this as profiles stream in; hpcsa's
class 2 does it once over the union, on rank 0, while every other rank waits for the ids. The warmer moves
the costly part, the chain of each statement (:meth:`.lexical.StructExpander.chain`, memoized per
statement), into phase 1: the reading process computes the chains of the offsets each batch of profiles
brings, as soon as a structure file describes their module, while the workers (or the other MPI ranks)
read on. Class 2 then uses the same expanders and finds most chains done. The chains are the same
whoever computes them, so the database is too; only the serial part of a run gets shorter.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from hpcsa.aggregate import lexical as lx
from hpcsa.aggregate import rawtree
from hpcsa.core.arrays import sorted_unique_rows
from hpcsa.formats.hpcstruct.model import Module


class ChainWarmer:
    """The expanders of one run's structure-file modules, warmed with the offsets profiles sample."""

    def __init__(self) -> None:
        self._expanders: dict[tuple[int, str], lx.StructExpander] = {}   # (id(module), shown path)
        self._modules: list[Module] = []                                  # (keeps the ids valid)
        self._by_key: dict[str, list[Module]] = defaultdict(list)
        self._by_hashed: dict[tuple[str, str], list[Module]] = defaultdict(list)
        self._seen: set[tuple[int, int]] = set()                          # (module hash, offset)
        self._waiting: dict[int, tuple[rawtree.ModuleRef, list[int]]] = {}  # modules without structure yet

    def expander(self, module: Module, shown: str) -> lx.StructExpander:
        """The one expander of ``module`` shown as ``shown`` (made on first use)."""
        got = self._expanders.get((id(module), shown))
        if got is None:
            got = self._expanders[(id(module), shown)] = lx.StructExpander(module, shown)
            self._modules.append(module)
        return got

    def add_structs(self, parsed: list[tuple[str, str | None, Module]]) -> None:
        """Structure files now parsed ((file, measurement directory, module) each); offsets that waited for
        them are expanded."""
        for _, measdir, module in parsed:
            # once per distinct key: a module's two keys are often the same path, and a module listed twice
            # under one key had every batch's offsets looked up and warmed twice
            for key in dict.fromkeys(lx.struct_keys(module, measdir)):
                self._by_key[key].append(module)
            hashed = lx.hashed_name(module.path)
            if hashed is not None:
                self._by_hashed[hashed].append(module)
        for h, (ref, offsets) in list(self._waiting.items()):
            if self._warm(ref, offsets):
                del self._waiting[h]

    def add_points(self, raw: rawtree.RawNodes) -> None:
        """The sampled offsets of a batch's profiles: those not seen before are expanded (or wait for their
        module's structure file)."""
        nodes = raw.nodes
        kind = nodes["kind"]
        points = nodes[((kind == rawtree.CCT) & (nodes["module"] != 0)) | (kind == rawtree.POINT)]
        if not len(points):
            return
        fresh: dict[int, list[int]] = defaultdict(list)
        for h, ip in zip(*(c.tolist() for c in sorted_unique_rows(points["module"], points["ip"])), strict=True):
            if (h, ip) not in self._seen:
                self._seen.add((h, ip))
                fresh[h].append(ip)
        for h, offsets in fresh.items():
            ref = raw.modules.get(h)
            if ref is None:
                continue
            if h in self._waiting:
                self._waiting[h][1].extend(offsets)
            elif not self._warm(ref, offsets):
                self._waiting[h] = (ref, offsets)

    def _warm(self, ref: rawtree.ModuleRef, offsets: list[int]) -> bool:
        """Expand ``offsets`` with every module that may describe ``ref``; False when none is parsed yet."""
        modules = self._by_key.get(ref.key)
        if not modules:
            hashed = lx.hashed_name(ref.key)
            modules = self._by_hashed.get(hashed) if hashed is not None else None
        if not modules:
            return False
        ips = np.array(offsets, np.uint64)
        for module in modules:
            self.expander(module, ref.path).warm(ips)
        return True
