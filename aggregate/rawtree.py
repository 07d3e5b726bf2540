"""The union of the measured calling-context trees, keyed by path, before lexical expansion.

Every CCT node of every profile is named by its *path*: the chain of
(load module, address, flags) from the root. Equal paths in different
profiles are the same node of the union. Paths are hashed with two
independent 64-bit polynomial lanes, computed for a whole profile with
pointer jumping (O(log depth) vectorized steps, never a loop over nodes);
the union is then a sort and a unique over hashes, and a profile finds its
nodes in the union with one ``searchsorted``. Hashes are verified: nodes with
equal hashes must have equal parents and fields, otherwise
:class:`HashCollision` asks the caller to start over with another seed.

Node kinds: ``CCT`` (a measured node: module, address, unwound flag),
``FRAME`` and ``POINT`` (GPU calling contexts reconstructed below a
``<gpu kernel>`` placeholder: a frame is entered by a step kind and pc, a
point is a sample pc in a GPU binary).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field

import numpy as np

from hpcsa.core.arrays import take_records
from hpcsa.core.dataclass import dataclass
from hpcsa.core.digests import blake2b

CCT, FRAME, POINT = 0, 1, 2

#: One node of the union: its path hash (two lanes), its parent's first lane (0 at the top), its fields.
RAW = np.dtype([("h1", "<u8"), ("h2", "<u8"), ("parent", "<u8"), ("kind", "u1"), ("flag", "u1"),
                ("module", "<u8"), ("ip", "<u8"), ("depth", "<u4")])

_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_P1, _P2 = np.uint64(0x9E3779B97F4A7C15), np.uint64(0xD6E8FEB86659FD93)


class HashCollision(Exception):
    """Two different paths got the same hash; rerun with another seed."""


def _mix(x: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * _M1
        x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


def module_hash(key: str) -> int:
    """A stable 64-bit name for a load module (never 0; 0 means "no module")."""
    h = int.from_bytes(blake2b(key.encode("utf-8", "surrogateescape"), digest_size=8).digest(), "little")
    return h or 1


def local_hashes(kind: np.ndarray, flag: np.ndarray, module: np.ndarray, ip: np.ndarray,
                 seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    s = np.uint64((seed * 0x632BE59BD9B4E019 + 0x8CB92BA72F3D8DD7) & 0xFFFFFFFFFFFFFFFF)
    with np.errstate(over="ignore"):
        x = _mix(ip.astype(np.uint64) + s)
        x = _mix(x ^ module.astype(np.uint64))
        x = _mix(x ^ ((kind.astype(np.uint64) << np.uint64(8)) | flag.astype(np.uint64)))
        y = _mix(x ^ np.uint64(0x5851F42D4C957F2D))
    return x, y


def path_hashes(parent: np.ndarray, l1: np.ndarray, l2: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Path hashes and depths of nodes given their parent index (-1 at the top), by pointer jumping.

    Each node keeps (ancestor, hash of the path segment below it, P^length); joining a
    node's segment to its ancestor's is ``h_anc * P^len + h`` (an associative combine).
    """
    anc = parent.astype(np.int64).copy()
    a1, a2 = l1.copy(), l2.copy()
    p1 = np.full(len(anc), _P1, np.uint64)
    p2 = np.full(len(anc), _P2, np.uint64)
    depth = np.zeros(len(anc), np.int64)
    length = np.ones(len(anc), np.int64)
    with np.errstate(over="ignore"):
        while True:
            live = np.flatnonzero(anc >= 0)
            if not len(live):
                break
            up = anc[live]
            n1 = a1[up] * p1[live] + a1[live]
            n2 = a2[up] * p2[live] + a2[live]
            q1 = p1[up] * p1[live]
            q2 = p2[up] * p2[live]
            nd = depth[live] + length[up]
            nl = length[live] + length[up]
            na = anc[up]
            a1[live], a2[live], p1[live], p2[live] = n1, n2, q1, q2
            depth[live], length[live], anc[live] = nd, nl, na
    a1[a1 == 0] = 1  # 0 is reserved for "no parent"
    return a1, a2, depth


@dataclass
class ModuleRef:
    """A load module: its key (resolved path), the path the database shows, its measurement directory."""

    key: str
    path: str
    measdir: str


@dataclass
class RawNodes:
    """Nodes of one profile (or of a union), one row per node, in any order."""

    nodes: np.ndarray  # RAW
    modules: dict[int, ModuleRef] = field(default_factory=dict)
    is_union: bool = False  # sorted by h1, one row per path (what :func:`union` returns)

    def __len__(self) -> int:
        return len(self.nodes)


def make_nodes(parent: np.ndarray, kind: np.ndarray, flag: np.ndarray, module: np.ndarray, ip: np.ndarray,
               seed: int = 0) -> np.ndarray:
    """RAW rows for nodes given by parent index (-1: top) and fields; hashes and depths computed."""
    l1, l2 = local_hashes(kind, flag, module, ip, seed)
    h1, h2, depth = path_hashes(parent, l1, l2)
    out = np.zeros(len(parent), RAW)
    out["h1"], out["h2"] = h1, h2
    par = parent.astype(np.int64)
    out["parent"] = np.where(par >= 0, h1[np.maximum(par, 0)], 0) if len(par) else 0
    out["kind"], out["flag"], out["module"], out["ip"], out["depth"] = kind, flag, module, ip, depth
    return out


def union(parts: Sequence[RawNodes]) -> RawNodes:
    """The union of node sets: sorted by ``h1``, one row per path (verified).

    When one part is already a union (the running union of a merge), only the other parts' nodes that are
    new to it are sorted and inserted: a merge costs what is new, not the size of the union so far.
    """
    modules: dict[int, ModuleRef] = {}
    for p in parts:
        for h, ref in p.modules.items():
            known = modules.get(h)
            if known is None:
                modules[h] = ref
            elif known.key != ref.key:
                raise HashCollision(f"two load modules hash alike: {known.key} and {ref.key}")
    nonempty = [p for p in parts if len(p.nodes)]
    if not nonempty:
        return RawNodes(np.zeros(0, RAW), modules, True)
    base = max((p for p in nonempty if p.is_union), key=len, default=None)
    rest = [p.nodes for p in nonempty if p is not base]
    if base is None:
        return RawNodes(_sorted_unique(np.concatenate(rest) if len(rest) > 1 else rest[0]), modules, True)
    if not rest:
        return RawNodes(base.nodes, modules, True)
    other = np.concatenate(rest) if len(rest) > 1 else rest[0]
    rows = find(base.nodes["h1"], other["h1"])
    seen = rows >= 0
    _verify(take_records(other, np.flatnonzero(seen)), take_records(base.nodes, rows[seen]))
    new = _sorted_unique(take_records(other, np.flatnonzero(~seen)))
    if not len(new):
        return RawNodes(base.nodes, modules, True)
    at = np.searchsorted(base.nodes["h1"], new["h1"])
    return RawNodes(np.insert(base.nodes, at, new), modules, True)


def _sorted_unique(nodes: np.ndarray) -> np.ndarray:
    # (records moved whole, take_records: field by field they cost some 4 times more)
    nodes = take_records(nodes, np.argsort(nodes["h1"], kind="stable"))
    first = np.r_[True, nodes["h1"][1:] != nodes["h1"][:-1]]
    if not first.all():
        lead = np.flatnonzero(first)
        _verify(nodes, take_records(nodes, lead[np.cumsum(first) - 1]))
        nodes = take_records(nodes, lead)
    return nodes


def _verify(nodes: np.ndarray, lead: np.ndarray) -> None:
    """Nodes with equal first hash lanes (``nodes`` and ``lead`` row by row) must be the same path."""
    for name in ("h2", "parent", "kind", "flag", "module", "ip", "depth"):
        if not np.array_equal(nodes[name], lead[name]):
            raise HashCollision(f"path hash collision (field {name})")


def find(keys_h1: np.ndarray, h1: np.ndarray, keys_h2: np.ndarray | None = None,
         h2: np.ndarray | None = None) -> np.ndarray:
    """Rows of a union (hashes ``keys_h1`` sorted, ``keys_h2`` aligned) holding each hash; -1 where absent."""
    pos = np.searchsorted(keys_h1, h1)
    ok = pos < len(keys_h1)
    pos_c = np.where(ok, pos, 0)
    if len(keys_h1):
        ok &= keys_h1[pos_c] == h1
        if keys_h2 is not None and h2 is not None:
            ok &= keys_h2[pos_c] == h2
    else:
        ok[:] = False
    return np.where(ok, pos_c, -1).astype(np.int64)
