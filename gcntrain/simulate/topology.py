"""The network's shared middle: what all-to-all-like traffic pays to cross the bisection of
the nodes a job was given.

A profile may name its topology (``[network.topology]``; without it the nodes hang off one
non-blocking switch and only each node's injection bandwidth is shared):

* ``kind = "torus"``: a 3D torus of nodes as allocated (Fugaku's Tofu-D presents a job of
  more than 384 nodes as a virtual 3D torus), ``link_gbs`` per link and direction,
  ``wraparound`` (default true; a mesh when false).  The job's nodes lie in a box
  a x b x c (`Topology.box`): ``shape = [a, b, c]`` where the profile (or ``simulate
  --node-shape``) gives one, as a user requesting ``#PJM -L node=AxBxC`` knows it; else,
  with ``unit = [u, v, w]`` (the allocation granularity per axis: Fugaku's Tofu unit is
  2 x 3 x 2 nodes, each virtual-torus axis a whole number of them), the box of whole units
  holding the job with the shortest longest side, then the fewest nodes (which box a
  scheduler picks for a 1D node count is not documented: this is the model's choice); without
  either, the most nearly cubic a x b x c = N.  The job's N nodes are the box's first N,
  numbered with the longest side slowest, so that the two halves of the box are the two
  halves of its longest side.  The cut between them is crossed by ``B / L`` links per
  direction (``2 B / L`` with wraparound on a side longer than 2), B the box's nodes and L
  its longest side.  A node count with no near-cubic factors (a prime) and no unit makes a
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

from gcntrain.errors import InputError

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
    #: a torus's allocation granularity per axis (empty: any box)
    unit: tuple[int, ...] = ()
    #: a torus job's box as requested (empty: chosen by `box`)
    shape: tuple[int, ...] = ()

    def box(self, nodes: int) -> tuple[int, int, int]:
        """The torus box (sides, longest first) a job of `nodes` nodes runs in (module
        docstring); `ValueError` where a given `shape` holds fewer nodes."""
        if self.shape:
            if int(np.prod(self.shape)) < nodes:
                raise ValueError(
                    f"the torus shape {'x'.join(map(str, self.shape))} holds "
                    f"{int(np.prod(self.shape))} nodes, the job needs {nodes}"
                )
            return tuple(sorted(self.shape, reverse=True))
        if self.unit:
            return unit_box(nodes, self.unit)
        return tuple(sorted(torus_shape(nodes), reverse=True))

    def half(self, nodes: int) -> int:
        """Nodes (the job's first) on the lower side of the cut: half the box on a torus,
        half the job elsewhere."""
        if self.kind == "torus" and nodes >= 2:
            return int(np.prod(self.box(nodes))) // 2
        return nodes // 2

    def cut_capacity(self, nodes: int, injection: float) -> float:
        """Bytes per second one direction of the cut between the two halves of `nodes`
        nodes carries (inf: not modelled)."""
        if self.kind == "none" or nodes < 2:
            return float("inf")
        if self.kind == "torus":
            box = self.box(nodes)
            longest = box[0]
            links = int(np.prod(box)) // longest * (2 if self.wraparound and longest > 2 else 1)
            return links * self.link
        taper = self.taper if nodes > self.rack_nodes else 1.0
        return nodes / 2 * injection / taper

    def describe(self, nodes: int) -> str:
        if self.kind == "torus":
            box = self.box(nodes)
            held = int(np.prod(box))
            extra = f" ({held} nodes allocated)" if held != nodes else ""
            return f"{'torus' if self.wraparound else 'mesh'} {'x'.join(map(str, box))}{extra}"
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


@lru_cache(maxsize=256)
def unit_box(nodes: int, unit: tuple[int, ...]) -> tuple[int, int, int]:
    """The box of whole `unit` blocks (a multiple of ``unit[i]`` on axis i) holding at least
    `nodes` nodes: the shortest longest side (the compact box a torus scheduler looks for),
    then the fewest nodes, then the most nearly cubic; sides longest first."""
    u = tuple(int(x) for x in unit)
    side = max(2.0, nodes ** (1 / 3))
    best = None
    for a in range(u[0], int(4 * side) + u[0] + 1, u[0]):
        for b in range(u[1], int(4 * side) + u[1] + 1, u[1]):
            c = -(-nodes // (a * b))
            c = -(-c // u[2]) * u[2]
            key = (max(a, b, c), a * b * c, max(a, b, c) - min(a, b, c))
            if best is None or key < best[0]:
                best = (key, (a, b, c))
    return tuple(sorted(best[1], reverse=True))


def crossing_bytes(src_node, dst_node, nbytes, nodes: int, half: int | None = None) -> float:
    """Bytes that cross between the lower and upper half of the node range (both ways);
    `half`: the nodes on the lower side (default ``nodes // 2``; `Topology.half`)."""
    half = nodes // 2 if half is None else half
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


def parse_topology(v, path: str, get) -> Topology:
    """A profile's ``[network.topology]`` table (absent: one non-blocking switch); `get`
    reads one required key (`gcntrain.simulate.machine`'s checks)."""
    if v is None:
        return Topology()
    if not isinstance(v, dict):
        raise InputError("machine profile: network.topology must be a table", path)
    kind = get(v, "kind", "network.topology.", path, str)
    if kind not in KINDS:
        raise InputError(
            f"machine profile: network.topology.kind must be one of {', '.join(KINDS)}, "
            f"got {kind!r}",
            path,
        )
    if kind == "torus":
        wrap = v.get("wraparound", True)
        if not isinstance(wrap, bool):
            raise InputError(
                "machine profile: network.topology.wraparound must be true or false", path
            )
        link = get(v, "link_gbs", "network.topology.", path) * 1e9
        unit, shape = (_sides(v, key, path) for key in ("unit", "shape"))
        return Topology(kind, link=link, wraparound=wrap, unit=unit, shape=shape)
    if kind == "fattree":
        taper = get(v, "taper", "network.topology.", path)
        if taper < 1:
            raise InputError("machine profile: network.topology.taper must be >= 1", path)
        rack = get(v, "rack_nodes", "network.topology.", path, int) if "rack_nodes" in v else 0
        return Topology(kind, taper=taper, rack_nodes=rack)
    return Topology()


def _sides(v: dict, key: str, path: str) -> tuple[int, ...]:
    """A torus's ``unit`` or ``shape``: three positive integers (absent: empty)."""
    if key not in v:
        return ()
    x = v[key]
    if not (
        isinstance(x, list)
        and len(x) == 3
        and all(isinstance(i, int) and not isinstance(i, bool) and i > 0 for i in x)
    ):
        raise InputError(
            f"machine profile: network.topology.{key} must be three positive integers, got {x!r}",
            path,
        )
    return tuple(x)
