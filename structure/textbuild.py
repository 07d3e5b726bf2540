"""The structure file of an x86-64 binary written straight from its procedure groups, in one or several processes.

:func:`hpcsa.structure.build.build_module` assembles one :class:`~hpcsa.structure.model.Module` of the whole
binary, which :func:`~hpcsa.structure.hpcstruct_text.render` then writes; the command line and ``hpcsa struct
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
import multiprocessing.connection
import multiprocessing.process
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from hpcsa.errors import HpcsaError
from hpcsa.fileio import atomic_file
from hpcsa.structure import build as _build
from hpcsa.structure.build import (
    Functions,
    Group,
    StructureBuilder,
    discover_functions,
    print_order,
    read_source_info,
)
from hpcsa.structure.elf import ElfImage
from hpcsa.structure.hpcstruct_text import (
    document_head,
    document_tail,
    file_close_tag,
    file_open_tag,
    lm_close_tag,
    lm_open_tag,
    render_scopes,
)
from hpcsa.structure.model import ModuleBuilder

LM_ID = 2                 # ids as hpcsa.structure.model.renumber gives them to a file of one module
CHUNKS_PER_JOB = 8        # chunks per process: small enough to even out, big enough to batch numpy work
MIN_CHUNK_BLOCKS = 2000
SMALL_CODE = 256 << 10    # bytes of code below which starting processes costs more than it saves

Key = tuple[str, int]     # (file, group start): a procedure group


@dataclass
class StructureText:
    """The structure file of one binary as text: the content of its ``<LM>`` and the number of scopes by
    kind (hpcsa.structure.model's kind codes)."""

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
        with atomic_file(path, "wb") as fh:
            for chunk in self.chunks():
                fh.write(chunk.encode("utf-8"))


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while the structure is built: it allocates millions of small objects
    that live until the end, and the collector's passes over them cost about a tenth of the run (the few
    cycles it makes, loop nests, are freed when collection resumes)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def build_text(image: ElfImage, demangle: Callable[[str], str], lm_name: str | None = None,
               jobs: int = 1) -> tuple[StructureText, list[str]]:
    """The structure file of an x86-64 binary as text, and notes on missing or unreadable debug information."""
    small = sum(sec.size for sec in image.code_sections) < SMALL_CODE
    ctx = _build._fork_context() if jobs > 1 and not small else None
    with gc_paused():
        if ctx is None:
            source = read_source_info(image, demangle)
            sb = StructureBuilder(image, source, demangle, lm_name)
            sb.code, funcs, names = discover_functions(image)
            files = sb.skeleton(funcs, names)
            order = print_order(files)
            parts = sb.fragments(files, order)
            bases, layout = _layout(files, order, {k: len(p) for k, p in parts.items()})
            texts, counts = _render_parts(parts, bases)
            return StructureText(sb.lm_name, _weave(layout, texts), counts), source.notes
        _build._FORK_STATE.update(image=image, demangle=demangle)
        try:
            reader = _start(ctx, _source_worker)
            try:
                code, funcs, names = discover_functions(image)
                source = _receive(reader[1], "source")
            finally:
                _stop(*reader)
            sb = StructureBuilder(image, source, demangle, lm_name)
            sb.code = code
            files = sb.skeleton(funcs, names)
            text = _parallel_parts(sb, files, funcs, jobs, ctx)
            return StructureText(sb.lm_name, text[0], text[1]), source.notes
        finally:
            _build._FORK_STATE.clear()


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


def _chunks(files: dict[str, dict[int, Group]], funcs: Functions, jobs: int) -> list[list[Key]]:
    """Consecutive groups (print order) in chunks of about equal numbers of basic blocks, biggest first."""
    order = print_order(files)
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
                 counter: object) -> dict[Key, ModuleBuilder]:
    """Build chunks taken from the shared counter until none is left."""
    parts: dict[Key, ModuleBuilder] = {}
    while True:
        with counter.get_lock():  # type: ignore[attr-defined]
            i = counter.value  # type: ignore[attr-defined]
            counter.value = i + 1  # type: ignore[attr-defined]
        if i >= len(chunks):
            return parts
        parts.update(sb.fragments(files, chunks[i]))


def _chunk_worker(conn: multiprocessing.connection.Connection) -> None:
    """A forked process: build chunks, send the sizes of its parts, receive the ids, send the texts."""
    try:
        st = _build._FORK_STATE
        parts = _take_chunks(st["builder"], st["files"], st["chunks"], st["counter"])  # type: ignore[arg-type]
        conn.send(("sizes", {k: len(p) for k, p in parts.items()}))
        bases = conn.recv()
        conn.send(("texts", _render_parts(parts, bases)))
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
        conn.send(("error", exc))
    finally:
        conn.close()


def _source_worker(conn: multiprocessing.connection.Connection) -> None:
    """A forked process: read the debug information and send it."""
    try:
        conn.send(("source", _build._source_worker()))
    except BaseException as exc:  # noqa: BLE001 - handed to the parent, which raises it
        conn.send(("error", exc))
    finally:
        conn.close()


def _start(ctx: object, target: Callable[[multiprocessing.connection.Connection], None]
           ) -> tuple[multiprocessing.process.BaseProcess, multiprocessing.connection.Connection]:
    """A forked process running ``target`` with its end of a pipe; returns the process and this end."""
    mine, theirs = ctx.Pipe()  # type: ignore[attr-defined]
    proc = ctx.Process(target=target, args=(theirs,), daemon=True)  # type: ignore[attr-defined]
    proc.start()
    theirs.close()
    return proc, mine


def _stop(proc: multiprocessing.process.BaseProcess, conn: multiprocessing.connection.Connection) -> None:
    conn.close()
    proc.join(timeout=5)
    if proc.is_alive():
        proc.terminate()


def _receive(conn: multiprocessing.connection.Connection, what: str) -> object:
    try:
        tag, payload = conn.recv()
    except EOFError:  # killed (out of memory, a signal): say so in one line
        raise HpcsaError(None, "a worker process of hpcsa struct ended without its result") from None
    if tag == "error":
        raise payload  # type: ignore[misc]
    assert tag == what
    return payload


def _parallel_parts(sb: StructureBuilder, files: dict[str, dict[int, Group]], funcs: Functions, jobs: int,
                    ctx: object) -> tuple[list[str], collections.Counter[int]]:
    chunks = _chunks(files, funcs, jobs)
    counter = ctx.Value("q", 0)  # type: ignore[attr-defined]
    _build._FORK_STATE.update(builder=sb, files=files, chunks=chunks, counter=counter)
    workers = []
    try:
        for _ in range(jobs - 1):
            workers.append(_start(ctx, _chunk_worker))
        parts = _take_chunks(sb, files, chunks, counter)
        sizes = {k: len(p) for k, p in parts.items()}
        for _proc, conn in workers:
            sizes.update(_receive(conn, "sizes"))  # type: ignore[arg-type]
        bases, layout = _layout(files, print_order(files), sizes)
        for _proc, conn in workers:
            conn.send(bases)
        texts, counts = _render_parts(parts, bases)
        for _proc, conn in workers:
            their_texts, their_counts = _receive(conn, "texts")  # type: ignore[misc]
            texts.update(their_texts)
            counts.update(their_counts)
        return _weave(layout, texts), counts
    finally:
        for proc, conn in workers:
            _stop(proc, conn)
