"""The structure file of an x86-64 binary written straight from its procedure groups, in one or several processes.

:func:`hpcsa.structure.x86.build.build_module` assembles one :class:`~hpcsa.formats.hpcstruct.model.Module` of the whole
binary, which :func:`~hpcsa.formats.hpcstruct.writer.render` then writes; the command line and ``hpcsa struct
MEASDIR`` need only the text, so here each procedure group's part is rendered on its own (its ids follow from
the sizes of the parts before it in print order) and nothing is assembled. With ``jobs > 1`` the work is
split twice:

1. the debug information is read in a child process while this one decodes and parses the code (as
   ``build_module`` does);
2. the groups, cut into chunks of consecutive groups of about equal work (basic blocks), are taken one
   chunk at a time, biggest first, by this process and ``jobs - 1`` forked ones from a shared counter, so
   that a process slowed by other work on the machine takes fewer; every process keeps its parts, reports
   their sizes, gets the ids of their first scopes and renders them. Only text and sizes cross processes.

The output is byte-identical to ``render`` of ``build_module``'s module, whatever ``jobs``.
"""

from __future__ import annotations

import collections
import contextlib
import gc
import os
from collections.abc import Callable, Iterator
from dataclasses import field

from hpcsa.core.dataclass import dataclass
from hpcsa.core.forking import Channel
from hpcsa.core.outputs import TEXT_BUFFER, atomic_file
from hpcsa.core.workers import ForkedWorker, Tickets, can_fork
from hpcsa.formats.hpcstruct.model import ModuleBuilder
from hpcsa.formats.hpcstruct.writer import (
    document_head,
    document_tail,
    file_close_tag,
    file_open_tag,
    lm_close_tag,
    lm_open_tag,
    render_scopes,
)
from hpcsa.structure.debuginfo.source_info import read_source_info
from hpcsa.structure.elf import ElfImage
from hpcsa.structure.x86.build import Group, StructureBuilder, print_order, skeleton_in_two
from hpcsa.structure.x86.functions import Functions, discover_functions

LM_ID = 2                 # ids as hpcsa.formats.hpcstruct.model.renumber gives them to a file of one module
CHUNKS_PER_JOB = 8        # chunks per process: small enough to even out, big enough to batch numpy work
MIN_CHUNK_BLOCKS = 2000
SMALL_CODE = 256 << 10    # bytes of code below which starting processes costs more than it saves

Key = tuple[str, int]     # (file, group start): a procedure group


@dataclass
class StructureText:
    """The structure file of one binary as text: the content of its ``<LM>`` and the number of scopes by
    kind (hpcsa.formats.hpcstruct.model's kind codes)."""

    path: str
    body: list[str]
    counts: collections.Counter[int] = field(default_factory=collections.Counter)

    def chunks(self) -> Iterator[str]:
        yield from document_head("")
        yield lm_open_tag(LM_ID, self.path, has_calls=False, has_v=True)
        yield from self.body
        yield lm_close_tag()
        yield document_tail()

    def write(self, path: str | os.PathLike[str]) -> None:
        """Write the file; it appears under ``path`` only when complete."""
        with atomic_file(path, "wb", TEXT_BUFFER) as fh:
            for chunk in self.chunks():
                fh.write(chunk.encode("utf-8"))


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while the structure is built: it allocates millions of small objects
    that live until the end, and the collector's passes over them cost about a tenth of the run (the few
    cycles it makes, loop nests, are freed by a later full collection).

    When it resumes, what the pause made leaves the youngest generation at once: left there, all of it was
    walked by the first collection after the pause, 90 ms for python3.11d's structure, before the file was
    written. Where nothing was frozen before, it moves to the oldest generation (``gc.freeze()`` then
    ``gc.unfreeze()``: two list splices), to be collected in time; where something was (the ``hpcsa``
    command freezes its imports, and ends soon), it is frozen with it, and its cycles (about 1 MiB for
    python3.11d) stay until the process ends: a caller's frozen objects are never thawed."""
    was = gc.isenabled()
    frozen_before = gc.get_freeze_count()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if not frozen_before:
            gc.unfreeze()
        if was:
            gc.enable()


def build_text(image: ElfImage, demangle: Callable[[str], str], lm_name: str | None = None,
               jobs: int = 1, keep: list[object] | None = None) -> tuple[StructureText, list[str]]:
    """The structure file of an x86-64 binary as text, and notes on missing or unreadable debug information.
    ``keep`` (see :func:`hpcsa.core.lifetime.keeper`) takes what the text was built from, instead of its being
    freed on return (50-60 ms for python3.11d)."""
    small = sum(sec.size for sec in image.code_sections) < SMALL_CODE
    forked = jobs > 1 and not small and can_fork()
    held = [] if keep is None else keep
    with gc_paused():
        if not forked:
            source = read_source_info(image, demangle)
            sb = StructureBuilder(image, source, demangle, lm_name)
            sb.code, funcs, names = discover_functions(image)
            files = sb.skeleton(funcs, names)
            order = print_order(files)
            parts = sb.fragments(files, order)
            held.append((sb, funcs, files, parts))
            bases, layout = _layout(files, order, {k: len(p) for k, p in parts.items()})
            texts, counts = _render_parts(parts, bases)
            return StructureText(sb.lm_name, _weave(layout, texts), counts), source.notes
        sb, funcs, files = skeleton_in_two(image, demangle, lm_name)
        held.append((sb, funcs, files))
        text = _parallel_parts(sb, files, funcs, jobs, held)
        return StructureText(sb.lm_name, text[0], text[1]), sb.src.notes


def _layout(files: dict[str, dict[int, Group]], order: list[Key], sizes: dict[Key, int]
            ) -> tuple[dict[Key, int], list[tuple[str, int, list[Key]]]]:
    """Id of the first scope of each part, and the files written: (file, id of its F, its groups). As
    build's ``assemble``: a file none of whose groups has a scope is left out; ids run in document order."""
    bases: dict[Key, int] = {}
    layout = []
    next_id = LM_ID + 1
    by_file: dict[str, list[Key]] = {}
    for key in order:
        by_file.setdefault(key[0], []).append(key)
    for filenm in sorted(files):
        keys = by_file.get(filenm, [])
        if not any(sizes.get(k, 0) for k in keys):
            continue
        fid = next_id
        next_id += 1
        for k in keys:
            bases[k] = next_id
            next_id += sizes.get(k, 0)
        layout.append((filenm, fid, keys))
    return bases, layout


def _render_parts(parts: dict[Key, ModuleBuilder], bases: dict[Key, int]
                  ) -> tuple[dict[Key, str], collections.Counter[int]]:
    texts: dict[Key, str] = {}
    counts: collections.Counter[int] = collections.Counter()
    for key, part in parts.items():
        if not len(part) or key not in bases:
            continue
        cols, strings, lo, hi, rscope = part.columns()
        texts[key] = "".join(render_scopes(cols, strings, lo, hi, rscope, first_id=bases[key]))
        counts.update(cols["kind"])
    return texts, counts


def _weave(layout: list[tuple[str, int, list[Key]]], texts: dict[Key, str]) -> list[str]:
    out = []
    for filenm, fid, keys in layout:
        out.append(file_open_tag(fid, filenm))
        out.extend(texts[k] for k in keys if k in texts)
        out.append(file_close_tag())
    return out


# ---------------------------------------------------------------------------------------------------
# Several processes


def _chunks(files: dict[str, dict[int, Group]], order: list[Key], funcs: Functions, jobs: int) -> list[list[Key]]:
    """Consecutive groups (``order``: print order) in chunks of about equal numbers of basic blocks, biggest
    first."""
    cost = [1 + sum(len(funcs.get(e, ())) for e in files[k[0]][k[1]].procs) for k in order]
    target = max(MIN_CHUNK_BLOCKS, sum(cost) // (jobs * CHUNKS_PER_JOB))
    chunks: list[tuple[int, list[Key]]] = []
    cur: list[Key] = []
    acc = 0
    for key, c in zip(order, cost, strict=True):
        cur.append(key)
        acc += c
        if acc >= target:
            chunks.append((acc, cur))
            cur, acc = [], 0
    if cur:
        chunks.append((acc, cur))
    chunks.sort(key=lambda c: -c[0])
    return [keys for _c, keys in chunks]


def _take_chunks(sb: StructureBuilder, files: dict[str, dict[int, Group]], chunks: list[list[Key]],
                 tickets: Tickets) -> dict[Key, ModuleBuilder]:
    """Build chunks taken from the shared tickets until none is left."""
    parts: dict[Key, ModuleBuilder] = {}
    while True:
        i = tickets.take()
        if i >= len(chunks):
            return parts
        parts.update(sb.fragments(files, chunks[i]))


def _chunk_worker(conn: Channel, sb: StructureBuilder,
                  files: dict[str, dict[int, Group]], chunks: list[list[Key]], tickets: Tickets
                  ) -> dict[Key, ModuleBuilder]:
    """A forked process: build chunks, send the sizes of its parts, receive the ids, send the texts. Returns
    its parts, so that its process ends without freeing them (:class:`hpcsa.core.workers.ForkedWorker`)."""
    parts = _take_chunks(sb, files, chunks, tickets)
    conn.send(("sizes", {k: len(p) for k, p in parts.items()}))
    bases = conn.recv()
    conn.send(("texts", _render_parts(parts, bases)))
    return parts


def _parallel_parts(sb: StructureBuilder, files: dict[str, dict[int, Group]], funcs: Functions, jobs: int,
                    held: list[object]) -> tuple[list[str], collections.Counter[int]]:
    order = print_order(files)
    chunks = _chunks(files, order, funcs, jobs)
    tickets = Tickets()
    with contextlib.ExitStack() as stack:
        workers = [stack.enter_context(ForkedWorker(_chunk_worker, sb, files, chunks, tickets,
                                                    what="hpcsa struct")) for _ in range(jobs - 1)]
        parts = _take_chunks(sb, files, chunks, tickets)
        held.append(parts)
        sizes = {k: len(p) for k, p in parts.items()}
        for worker in workers:
            sizes.update(worker.receive("sizes"))
        bases, layout = _layout(files, order, sizes)
        for worker in workers:
            worker.send(bases)
        texts, counts = _render_parts(parts, bases)
        for worker in workers:
            their_texts, their_counts = worker.receive("texts")
            texts.update(their_texts)
            counts.update(their_counts)
        return _weave(layout, texts), counts
