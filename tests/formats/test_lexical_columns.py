"""formats/hpcstruct/model.lexical_columns and enclosing_procedures: hpcprof's reading of a scope tree (alien roles,
files in effect, call-site files, lexical parents, enclosing procedures), vectorized, against the rule written
out scope by scope."""

from __future__ import annotations

import numpy as np
import pytest

from hpcsa.formats.hpcstruct.model import (
    ALLOWED_CHILDREN,
    INNER_ALIEN,
    NONE,
    NOT_ALIEN,
    OUTER_ALIEN,
    A,
    F,
    L,
    P,
    S,
    enclosing_procedures,
    lexical_columns,
)


def _by_rule(kind: list[int], up: list[int], own: list[int]) -> list[tuple[int, int, int, int, int]]:
    """Top-down, one scope after its parent: what hpcprof gives each scope of a structure file."""
    out: list[tuple[int, int, int, int, int]] = []
    for k, u, f in zip(kind, up, own, strict=True):
        if u >= 0:
            u_role, u_file, _, u_lex, u_proc = out[u]
            u_kind = kind[u]
            lex = u if (u_kind in (P, L) or u_role == INNER_ALIEN) else u_lex
            proc = u if u_kind == P else u_proc
        else:
            u_role, u_file, u_kind, lex, proc = NOT_ALIEN, NONE, None, NONE, NONE
        role, call = NOT_ALIEN, NONE
        if k == F:
            file = f
        elif k == A:
            role = INNER_ALIEN if (u_kind == A and u_role == OUTER_ALIEN) else OUTER_ALIEN
            call = u_file if role == INNER_ALIEN else NONE
            file = f if f >= 0 else u_file
        elif k == L:
            file = f if f >= 0 else u_file
        else:
            file = u_file
        out.append((role, file, call, lex, proc))
    return out


def _random_tree(seed: int, n: int) -> tuple[list[int], list[int], list[int]]:
    """Scopes in document order (a parent before its children) as the DTD nests them, with deep runs of
    aliens; files named by F always, by some A and L."""
    rng = np.random.default_rng(seed)
    kind: list[int] = []
    up: list[int] = []
    own: list[int] = []
    for i in range(n):
        recent = [-1] + [j for j in range(max(0, i - 12), i) if ALLOWED_CHILDREN[kind[j]]]
        u = recent[-1] if rng.random() < 0.7 else int(rng.choice(recent))
        allowed = sorted(ALLOWED_CHILDREN[None if u < 0 else kind[u]])
        k = A if A in allowed and rng.random() < 0.4 else int(rng.choice(allowed))
        kind.append(k)
        up.append(u)
        own.append(int(rng.integers(0, 5)) if k == F or (k in (A, L) and rng.random() < 0.5) else NONE)
    return kind, up, own


def test_nested_aliens_alternate_and_carry_their_files() -> None:
    # F(f0) > P > A(outer, f1) > A(inner, f2) > A(outer) > A(inner, f3) > S ; P > L > S
    kind = [F, P, A, A, A, A, S, L, S]
    up = [-1, 0, 1, 2, 3, 4, 5, 1, 7]
    own = [0, NONE, 1, 2, NONE, 3, NONE, NONE, NONE]
    role, file, call, lex = lexical_columns(np.array(kind), np.array(up), np.array(own))
    proc = enclosing_procedures(np.array(kind), np.array(up))
    assert role.tolist() == [NOT_ALIEN, NOT_ALIEN, OUTER_ALIEN, INNER_ALIEN, OUTER_ALIEN, INNER_ALIEN, NOT_ALIEN,
                             NOT_ALIEN, NOT_ALIEN]
    assert file.tolist() == [0, 0, 1, 2, 2, 3, 3, 0, 0]
    assert call.tolist() == [NONE, NONE, NONE, 1, NONE, 2, NONE, NONE, NONE]  # an inner alien's call site: its outer's file
    assert lex.tolist() == [NONE, NONE, 1, 1, 3, 3, 5, 1, 7]
    assert proc.tolist() == [NONE, NONE, 1, 1, 1, 1, 1, 1, 1]


@pytest.mark.parametrize(("seed", "n"), [(1, 1), (2, 30), (3, 400), (4, 5000)])
def test_lexical_columns_follow_the_rule_scope_by_scope(seed: int, n: int) -> None:
    kind, up, own = _random_tree(seed, n)
    kinds, ups = np.array(kind, np.uint8), np.array(up, np.int64)
    got = (*lexical_columns(kinds, ups, np.array(own, np.int64)), enclosing_procedures(kinds, ups))
    want = _by_rule(kind, up, own)
    assert [tuple(int(col[i]) for col in got) for i in range(n)] == want
    if n >= 400:  # deep enough that pointer jumping takes several rounds, with long runs of nested aliens
        assert max(_depth(up)) > 16 and max(_alien_run(kind, up)) >= 4


def _alien_run(kind: list[int], up: list[int]) -> list[int]:
    run: list[int] = []
    for k, u in zip(kind, up, strict=True):
        run.append(0 if k != A else 1 + (run[u] if u >= 0 else 0))
    return run


def _depth(up: list[int]) -> list[int]:
    d: list[int] = []
    for u in up:
        d.append(0 if u < 0 else d[u] + 1)
    return d
