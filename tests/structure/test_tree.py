"""hpcstruct's inline-tree rules (structure/tree.py), shared by the x86-64 and GPU builders, on hand-made
trees whose output is worked out by hand from the rules, and on random ranges against brute force."""

from __future__ import annotations

import random

from hpcsa.formats.hpcstruct.model import GUARD_NAME, KIND_TAGS, Module, ModuleBuilder
from hpcsa.structure.loops import find_loops
from hpcsa.structure.tree import (
    FLP,
    LoopInfo,
    Stmt,
    StrTab,
    TreeNode,
    compute_gaps,
    emit_procedure,
    function_tree,
    merge_irred_loops,
    merge_ranges,
)


def _rows(m: Module) -> list[tuple]:
    """(depth, tag, line, file, name, ranges, target, device) per scope, in document order."""
    depth: dict[int, int] = {}
    out = []
    for row, sc in enumerate(m.scopes):
        parent = int(sc["parent"])
        depth[row] = depth[parent] + 1 if parent >= 0 else 0
        target = int(sc["target"])
        out.append((depth[row], KIND_TAGS[sc["kind"]], int(sc["line"]), m.text(int(sc["file"])),
                    m.text(int(sc["name"])), m.ranges_of(row), None if target < 0 else target,
                    m.text(int(sc["device"]))))
    return out


def test_emitter_places_statements_calls_guard_and_double_aliens() -> None:
    s = StrTab()
    a, abase, b, bbase, fname, f, fbase = (s(x) for x in ("/src/a.c", "a.c", "/src/b.h", "b.h", "f",
                                                          "/src/f.h", "f.h"))
    root = TreeNode()
    root.stmts += [Stmt(0x100, 4, a, abase, 12), Stmt(0x104, 4, a, abase, 12),  # one S, ranges joined
                   Stmt(0x10c, 4, a, abase, 11),                               # after the proc's line: local
                   Stmt(0x110, 4, a, abase, 5),                                # before it: guard alien
                   Stmt(0x114, 4, b, bbase, 3),                                # other file: guard alien
                   Stmt(0x118, 4, a, abase, 0),                                # no line: local
                   Stmt(0x11c, 4, a, abase, 12, True, 0x400)]                  # a call: C after the S
    body = TreeNode()
    body.stmts.append(Stmt(0x130, 4, a, abase, 11))
    root.loops.append(LoopInfo(body, [], 0x130, a, abase, 11, False))
    root.descend([FLP(a, 14, fname, abase)]).stmts.append(Stmt(0x120, 8, f, fbase, 2))

    out = ModuleBuilder("lm")
    emit_procedure(out, -1, s, root, filenm="/src/a.c", name="g()", link="_Z1gv", line=10, entry=0x100,
                   device="NVIDIA sm_75")
    assert _rows(out.finish()) == [
        (0, "P", 10, None, "g()", [(0x100, 0x101)], None, None),
        (1, "S", 0, None, None, [(0x118, 0x11c)], None, None),
        (1, "S", 11, None, None, [(0x10c, 0x110)], None, None),
        (1, "S", 12, None, None, [(0x100, 0x108)], None, None),
        (1, "C", 12, None, None, [(0x11c, 0x120)], 0x400, "NVIDIA sm_75"),
        (1, "A", 5, "/src/a.c", GUARD_NAME, [], None, None),   # aliens in string-table order: a.c, b.h
        (2, "S", 5, None, None, [(0x110, 0x114)], None, None),
        (1, "A", 3, "/src/b.h", GUARD_NAME, [], None, None),
        (2, "S", 3, None, None, [(0x114, 0x118)], None, None),
        (1, "L", 11, "/src/a.c", None, [(0x130, 0x131)], None, None),
        (2, "S", 11, None, None, [(0x130, 0x134)], None, None),
        (1, "A", 14, "/src/a.c", "", [], None, None),          # call site of the inlined f ...
        (2, "A", 2, "/src/f.h", "f", [], None, None),          # ... and its body
        (3, "S", 2, None, None, [(0x120, 0x128)], None, None),
    ]


class _FakeCode:
    """Four blocks: entry (a.c:19), a loop of two blocks inlined from f at a.c:20 (f.h:6, f.h:7; the second
    one exits the loop), and the exit (a.c:21)."""

    def __init__(self) -> None:
        self.strtab = s = StrTab()
        self.flp = FLP(s("/src/a.c"), 20, s("f"), s("a.c"))
        self.starts = [0x0, 0x10, 0x20, 0x30]
        self.succs = [[1], [2], [1, 3], []]
        self.src = [("/src/a.c", 19, []), ("/src/f.h", 6, [self.flp]), ("/src/f.h", 7, [self.flp]),
                    ("/src/a.c", 21, [])]

    def add_block(self, root: TreeNode, bi: int) -> None:
        file, line, path = self.src[bi]
        s = self.strtab
        root.descend(path).stmts.append(Stmt(self.starts[bi], 16, s(file), s(file.rsplit("/", 1)[1]), line))

    def loop_successors(self, bi: int) -> list[int]:
        return self.succs[bi]

    def exit_condition(self, bi: int) -> tuple[int, str, int, list[FLP]]:
        file, line, path = self.src[bi]
        return self.starts[bi] + 12, file, line, path


def test_loop_goes_inside_the_inlined_call_that_holds_its_exit_condition() -> None:
    code = _FakeCode()
    top, _ = find_loops(code.succs, 0)
    root = function_tree(code, top, "/src/a.c")
    s = code.strtab
    assert [st.line for st in root.stmts] == [19, 21] and not root.loops
    assert list(root.nodes) == [code.flp]
    inlined = root.nodes[code.flp]
    assert not inlined.stmts and len(inlined.loops) == 1
    loop = inlined.loops[0]
    # findLoopHeader: no exit condition at depth 0, so it descends into f; the header is the exit
    # condition's file and line there; the loop's address is its entry block.
    assert (s.strings[loop.file], loop.line, loop.entry_vma, loop.path) == ("/src/f.h", 7, 0x10, [code.flp])
    assert [st.line for st in loop.node.stmts] == [6, 7]


class _InterpreterCode:
    """An interpreter's frame loop in the shape of CPython 3.11's ceval.c (lines made up, all in one file):
    entry E branches to the throw path R (fall-through) or to start_frame S (taken); S's recursion check
    exits to exit_unwind X (taken) or falls into the dispatch D; D's assert A never returns; a handler H
    jumps to S (taken, a call) or back to D; X returns (RET) or pops the frame into R; R leads to the
    exception unwinder U, which dispatches D (taken) or unwinds further (X)."""

    names = ["E", "S", "D", "H", "X", "R", "U", "A", "RET"]
    lines = [10, 16, 22, 30, 50, 58, 60, 23, 51]
    # (fall-through, taken) of the conditional branches; D -> H is D's fall-through, X -> RET X's.
    edges = {"E": ("R", "S"), "S": ("D", "X"), "D": ("H", "A"), "H": ("D", "S"), "X": ("RET", "R"),
             "R": ("U",), "U": ("X", "D"), "A": (), "RET": ()}

    def __init__(self, fall_through_first: bool) -> None:
        self.strtab = StrTab()
        self.starts = [16 * k for k in range(len(self.names))]
        at = {n: k for k, n in enumerate(self.names)}
        self.succs = [[at[t] for t in (self.edges[n] if fall_through_first else self.edges[n][::-1])]
                      for n in self.names]

    def add_block(self, root: TreeNode, bi: int) -> None:
        s = self.strtab
        root.stmts.append(Stmt(self.starts[bi], 16, s("/src/ceval.c"), s("ceval.c"), self.lines[bi]))

    def loop_successors(self, bi: int) -> list[int]:
        return self.succs[bi]

    def exit_condition(self, bi: int) -> tuple[int, str, int, list[FLP]]:
        return self.starts[bi] + 12, "/src/ceval.c", self.lines[bi], []


def _loop_lines(info: LoopInfo) -> list:
    return [info.line, [_loop_lines(sub) for sub in info.node.loops]]


def test_irreducible_nesting_follows_the_visit_order_and_a_subloop_line_can_become_the_loops() -> None:
    """All blocks but E, A and RET form one cycle (entered at R and at S). Worked out by hand from WMZC and
    findLoopHeader. Visiting fall-throughs first (ParseAPI's edge order): R heads the outer loop, D an inner
    one {D, H, S} (entries D and S) that X is outside of, so S (line 16) exits it; the inner loop's line 16
    is the smallest of the outer loop's (exits D 22, X 50; subloop 16), and the inner loop, irreducible with
    its irreducible parent's line, is merged into it: one loop at line 16, at S (its lower entry). Visiting
    taken targets first: S heads the outer loop {S, D, H, X, R, U} whose exits are D (22) and X (50), with a
    loop {X, R, U} (entries X, R; exits X 50, U 60) and a reducible loop {D, H} (exits D 22, H 30)."""
    code = _InterpreterCode(fall_through_first=True)
    top, _ = find_loops(code.succs, 0)
    root = function_tree(code, top, "/src/ceval.c")
    assert [_loop_lines(lp) for lp in root.loops] == [[16, []]]
    assert root.loops[0].entry_vma == min(code.starts[code.names.index(n)] for n in "RS")
    code = _InterpreterCode(fall_through_first=False)
    top, _ = find_loops(code.succs, 0)
    root = function_tree(code, top, "/src/ceval.c")
    assert [_loop_lines(lp) for lp in root.loops] == [[22, [[22, []], [50, []]]]]


def test_irreducible_subloop_with_the_same_line_is_merged() -> None:
    def loop(entry: int, line: int, irred: bool, *subs: LoopInfo) -> LoopInfo:
        node = TreeNode()
        node.stmts.append(Stmt(entry, 4, 1, 2, line))
        node.loops.extend(subs)
        return LoopInfo(node, [], entry, 1, 2, line, irred)

    inner = loop(0x50, 9, False)
    other = loop(0x40, 8, True)
    same = loop(0x20, 5, True, inner)
    outer = loop(0x10, 5, True, same, other)
    merge_irred_loops(outer)
    assert outer.node.loops == [other, inner]  # `same` dissolved; its subloop hoisted; by entry address
    assert sorted(st.vma for st in outer.node.stmts) == [0x10, 0x20]


def test_gaps_and_range_union_against_brute_force() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        # blocks: never empty (an empty range splits a gap in two, as in both builders before the merge)
        covered = [(lo, lo + rng.randint(1, 10)) for lo in (rng.randint(0, 50) for _ in range(rng.randint(0, 6)))]
        start, end = rng.randint(0, 50), rng.randint(0, 60)
        free = [x for x in range(start, end) if not any(lo <= x < hi for lo, hi in covered)]
        assert compute_gaps(covered, start, end) == _runs(free)

        ranges = [(lo, lo + rng.randint(1, 6)) for lo in (rng.randint(0, 40) for _ in range(rng.randint(1, 6)))]
        used = sorted({x for lo, hi in ranges for x in range(lo, hi)})
        assert merge_ranges(list(ranges)) == _runs(used)


def _runs(points: list[int]) -> list[tuple[int, int]]:
    """Maximal [lo, hi) runs of consecutive integers."""
    out: list[tuple[int, int]] = []
    for x in points:
        if out and out[-1][1] == x:
            out[-1] = (out[-1][0], x + 1)
        else:
            out.append((x, x + 1))
    return out
