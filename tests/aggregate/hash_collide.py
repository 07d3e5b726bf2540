"""``hpcsa`` with path-hash collisions forced for some seeds (for tests/aggregate/test_hash_retry.py).

Run as ``[mpiexec -n R] python tests/aggregate/hash_collide.py SEEDS[:MODULE:A:B] prof ...``, SEEDS a
comma-separated list of hash seeds. With those seeds two different paths get the same path hashes, both
lanes, which phase 1 finds while it merges the nodes (:func:`hpcsa.aggregate.rawtree.union`); other seeds
hash as usual. Without MODULE:A:B the local hash of every node leaves its address out (sibling nodes that
differ only in their address, two call sites in one function, collide inside one profile); with it, address
B of load module MODULE is hashed as A (a pair that :func:`apart` found in different profiles only), and
every profile is reported on its own (``HASH_TOGETHER = 1``), so that the collision is found when reports of
different profiles merge (a worker's, this process's, or the ranks' reduction). Forked workers inherit the
patch. Each seed the driver tries is appended to the file named by ``HPCSA_TEST_SEEDS`` (a line per rank).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import numpy as np

from hpcsa.aggregate import rawtree
from hpcsa.aggregate.handoff import GpuStructures, Phase1Env
from hpcsa.aggregate.phase1 import survey
from hpcsa.cli.main import main


def apart(meas: str) -> str:
    """``MODULE:A:B``: two addresses of a load module, children of the same node in different profiles, that
    no profile has both of (so hashing B as A collides only where reports of different profiles merge)."""
    from hpcsa.aggregate.inputs import find_inputs

    inputs = find_inputs([meas])
    env = Phase1Env({}, {}, 0, None)
    nodes = [survey.survey_profile(p, env).raw.nodes for p in inputs.profiles]
    held = [set(zip(n["module"].tolist(), n["ip"].tolist(), strict=True)) for n in nodes]
    children: dict[tuple[int, ...], dict[int, int]] = {}  # (parent, kind, flag, module) -> address -> profile
    for k, n in enumerate(nodes):
        for *key, ip in zip(n["parent"].tolist(), n["kind"].tolist(), n["flag"].tolist(), n["module"].tolist(),
                            n["ip"].tolist(), strict=True):
            children.setdefault(tuple(key), {}).setdefault(ip, k)
    for key, ips in sorted(children.items()):
        module = key[3]
        for a in sorted(ips):
            for b in sorted(ips):
                if a < b and not any((module, a) in h and (module, b) in h for h in held):
                    return f"{module}:{a}:{b}"
    raise AssertionError(f"{meas}: no two addresses of one node's children are in different profiles only")


def colliding_hashes(seeds: set[int], pair: tuple[int, int, int] | None
                     ) -> Callable[..., tuple[np.ndarray, np.ndarray]]:
    """:func:`hpcsa.aggregate.rawtree.local_hashes` with the collisions above for ``seeds``."""
    local_hashes = rawtree.local_hashes

    def colliding(kind: np.ndarray, flag: np.ndarray, module: np.ndarray, ip: np.ndarray,
                  seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
        if seed in seeds:
            if pair is None:
                ip = np.zeros_like(ip)
            else:
                m, a, b = (np.uint64(x) for x in pair)
                ip = np.where((module.astype(np.uint64) == m) & (ip.astype(np.uint64) == b), a, ip)
        return local_hashes(kind, flag, module, ip, seed)

    return colliding


def inject(seeds: set[int], pair: tuple[int, int, int] | None) -> None:
    env = GpuStructures.env

    def logged(self: GpuStructures, seed: int, scratch: str | None) -> Phase1Env:
        with open(os.environ["HPCSA_TEST_SEEDS"], "a") as f:
            f.write(f"{seed}\n")
        return env(self, seed, scratch)

    rawtree.local_hashes = colliding_hashes(seeds, pair)  # type: ignore[assignment]
    GpuStructures.env = logged  # type: ignore[method-assign]
    if pair is not None:
        survey.HASH_TOGETHER = 1


if __name__ == "__main__":
    how, *argv = sys.argv[1:]
    seeds, *rest = how.split(":")
    inject({int(s) for s in seeds.split(",") if s}, (int(rest[0]), int(rest[1]), int(rest[2])) if rest else None)
    sys.exit(main(argv))
