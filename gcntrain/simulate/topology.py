"""The network's shared middle: what all-to-all-like traffic pays to cross the bisection of
the nodes a job was given.

A profile may name its topology (``[network.topology]``; without it the nodes hang off one
non-blocking switch and only each node's injection bandwidth is shared):

* ``kind = "torus"``: a 3D torus of nodes as allocated (Fugaku's Tofu-D presents a job of
  more than 384 nodes as a virtual 3D torus), ``link_gbs`` per link and direction,
  ``wraparound`` (default true; a mesh when false).  The N allocated nodes form the most
  nearly cubic a x b x c = N, numbered with the longest side slowest, so that the two
  halves of the node range are the two halves of the longest side.  The cut between them
  is crossed by ``N / L`` links per direction (``2 N / L`` with wraparound on a side longer
  than 2), L the longest side.  A node count with no near-cubic factors (a prime) makes a
  ring: allocate boxes.
* ``kind = "fattree"``: a fat tree whose levels above its racks (leaf groups of
  ``rack_nodes`` nodes, full bisection within) are thinned by ``taper`` (1: full bisection
  everywhere): the cut between the two halves carries ``N / 2 x injection`` per direction,
  divided by ``taper`` once the job spans more than one rack (without ``rack_nodes``,
  always).

`bisection_seconds` prices one exchange: the bytes it moves between the two halves of the
node range (both directions) over what the cut carries.  How much of the cut an exchange
uses depends on its pattern: an MPI Alltoallv of large messages is a pairwise exchange, p - 1
steps each of which sends every rank's block to the rank ``s`` further on; on a torus such a
shift sends everything along a dimension the same way round, so each step uses one direction
of the cut's links (the bytes cross in ``X / c``, c one direction's capacity).  Point-to-point
exchanges posted all at once, and any pattern on a fat tree (whose up and down links are
separate), use both directions (``X / 2c``).  The other collectives (trees, rings, recursive
doubling over groups) talk mostly to near ranks and are not charged here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

#: the topologies a profile may name
KINDS = ("none", "torus", "fattree")


@dataclass(frozen=True)
class Topology:
    """A profile's ``[network.topology]`` (module docstring); rates in bytes per second."""

    kind: str = "none"
    link: float = 0.0
    wraparound: bool = True
    taper: float = 1.0
    rack_nodes: int = 0

    def cut_capacity(self, nodes: int, injection: float) -> float:
        """Bytes per second one direction of the cut between the two halves of `nodes`
        nodes carries (inf: not modelled)."""
        if self.kind == "none" or nodes < 2:
            return float("inf")
        if self.kind == "torus":
            longest = max(torus_shape(nodes))
            links = nodes // longest * (2 if self.wraparound and longest > 2 else 1)
            return links * self.link
        taper = self.taper if nodes > self.rack_nodes else 1.0
        return nodes / 2 * injection / taper

    def describe(self, nodes: int) -> str:
        if self.kind == "torus":
            shape = "x".join(map(str, sorted(torus_shape(nodes), reverse=True)))
            return f"{'torus' if self.wraparound else 'mesh'} {shape}"
        return self.kind if self.kind != "fattree" else f"fat tree, taper {self.taper:g}"


@lru_cache(maxsize=256)
def torus_shape(nodes: int) -> tuple[int, int, int]:
    """The most nearly cubic a <= b <= c with a b c = `nodes`."""
    best = (1, 1, nodes)
    for a in range(1, int(round(nodes ** (1 / 3))) + 2):
        if nodes % a:
            continue
        rest = nodes // a
        for b in range(a, int(rest**0.5) + 1):
            if rest % b == 0 and rest // b >= b:
                cand = (a, b, rest // b)
                if max(cand) - min(cand) < max(best) - min(best):
                    best = cand
    return best


def crossing_bytes(src_node, dst_node, nbytes, nodes: int) -> float:
    """Bytes that cross between the lower and upper half of the node range (both ways)."""
    half = nodes // 2
    s = np.asarray(src_node) < half
    d = np.asarray(dst_node) < half
    return float(np.asarray(nbytes, dtype=np.float64)[s != d].sum())


def bisection_seconds(
    topo: Topology, nodes: int, injection: float, crossing: float, one_way: bool
) -> float:
    """Seconds `crossing` bytes need across the cut (`one_way`: the exchange uses one
    direction of it at a time, as a pairwise Alltoallv on a torus does)."""
    cap = topo.cut_capacity(nodes, injection)
    if not np.isfinite(cap) or crossing <= 0:
        return 0.0
    both = 1.0 if (one_way and topo.kind == "torus") else 2.0
    return crossing / (both * cap)
