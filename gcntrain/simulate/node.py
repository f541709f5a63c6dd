"""The node half of the time model: how fast a rank computes, given its threads and what the
other ranks of its node do at the same time.

A node's cores share its memory bandwidth, its caches and (where the cores are hardware
threads of fewer physical cores) its execution units, so a node with T busy cores does less
than T times the work of one.  The profile states this as measured scaling
(`ThreadScaling`), per kind of work (``spmm``, ``gemm``, ``other``), measured by `gcntrain
bench` at 1, half and all cores on kernels large enough to stream from memory:

* ``[compute.threads]``, S_threads(T): one process with T threads over one thread (what a
  rank computing alone gets from its threads, parallel regions included);
* ``[compute.node]``, S_node(T): T one-thread processes at once over one (what ranks
  sharing the node get: bandwidth and caches, no parallel regions).

S(T) is the roofline made concrete: it rises like T while the busy cores' demand fits the
node's bandwidth and flattens where it does not.

A rank with t threads computing alone runs at ``S_threads(t)`` times one core's rate.  When
m ranks of a node compute at once (m t busy cores), each runs at

    sigma(m) = min(1, C(m t) / C(t)),   C(T) = S_node(T) / T

of its solo speed (`sharing`).  Ranks that have finished a call wait in MPI (holding a core,
not memory bandwidth), so the ranks still computing speed up: `fluid_finish` gives each
rank's finish time under this sharing (processor sharing, ranks of a node starting
together).  With more ranks than cores (t < 1) every rank holds a share of the cores all
the time (waiting ranks poll on the same cores), so the speed is that of all ranks busy
throughout.

Profiles without ``[compute.threads]`` (`derive_scaling`; both tables the same), in this
order:

* written by an older `gcntrain bench`, with ``busy_compute_factor`` f (how much slower a
  rank computed with every core busy): ``S(T) = T / (1 + (f - 1)(T - 1) / (cores - 1))`` for
  every kind, the old model's meaning;
* otherwise the roofline: ``S(T) = min(T, B / d)``, B the node's ``memory_bandwidth_gbs``
  and d what one core running the kernel demands from memory at the profile's rate: SpMM at
  width 16 (`SPMM_BYTES_PER_FLOP`: every gathered row from memory) and element-wise work
  (`ELEMENTWISE_BYTES`); GEMM, compute-bound, scales with the cores.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: kinds of work with their own thread scaling (quantization streams like element-wise work)
KINDS = ("spmm", "gemm", "other")


@dataclass(frozen=True)
class ThreadScaling:
    """S(T): throughput with T cores busy over one core's, piecewise linear through (0, 0),
    (1, 1) and the measured points, constant beyond the last."""

    threads: tuple[float, ...]
    speedups: tuple[float, ...]

    def __call__(self, T) -> np.ndarray:
        T = np.asarray(T, dtype=np.float64)
        xs = np.array([0.0, 1.0, *[t for t in self.threads if t > 1]])
        ys = np.array([0.0, 1.0, *[s for t, s in zip(self.threads, self.speedups) if t > 1]])
        return np.interp(T, xs, ys)

    def as_table(self) -> dict[int, float]:
        return {int(t): float(s) for t, s in zip(self.threads, self.speedups)}


def linear(cores: int) -> ThreadScaling:
    """S(T) = T up to the node's cores (no contention)."""
    return ThreadScaling((1.0, float(cores)), (1.0, float(cores)))


def from_busy_factor(cores: int, factor: float) -> ThreadScaling:
    """The scaling an older profile's ``busy_compute_factor`` stood for: a rank computes
    ``1 + (f - 1)(T - 1) / (cores - 1)`` times slower with T of the node's cores busy."""
    if cores <= 1 or factor == 1.0:
        return linear(cores)
    pts = np.unique(np.round(np.linspace(1, cores, min(cores, 9))))
    slow = 1.0 + (factor - 1.0) * (pts - 1.0) / (cores - 1.0)
    return ThreadScaling(tuple(map(float, pts)), tuple(map(float, pts / slow)))


#: bytes from memory per SpMM flop at width 16 in float32 (an upper bound: a stored entry's
#: index and value, 8 bytes, and its gathered row, 64 bytes, for 32 flops)
SPMM_BYTES_PER_FLOP = (8 + 4 * 16) / (2 * 16)
#: bytes from memory per element of element-wise work (two float32 operands read, one
#: written)
ELEMENTWISE_BYTES = 12.0


def roofline(cores: int, streams: float) -> ThreadScaling:
    """S(T) = min(T, streams): T cores streaming until `streams` cores' worth of demand fills
    the node's bandwidth."""
    knee = min(float(cores), max(1.0, streams))
    pts = sorted({1.0, knee, float(cores)})
    return ThreadScaling(tuple(pts), tuple(min(p, knee) for p in pts))


def derive_scaling(
    cores: int, busy_factor: float | None, node_bw: float, demand: dict[str, float]
) -> tuple[dict, str]:
    """({kind: ThreadScaling}, how it was obtained) for a profile without
    ``[compute.threads]`` (see the module docstring; `demand`: bytes per second one core
    running each streaming kind draws)."""
    if busy_factor is not None:
        s = from_busy_factor(cores, busy_factor)
        how = f"derived from busy_compute_factor = {busy_factor:g} (older gcntrain bench)"
        return {k: s for k in KINDS}, how
    out = {k: roofline(cores, node_bw / d) if d > 0 else linear(cores) for k, d in demand.items()}
    out.setdefault("gemm", linear(cores))
    knees = ", ".join(f"{k} at {min(cores, node_bw / d):.0f}" for k, d in demand.items() if d > 0)
    return out, f"derived as a roofline of the node's bandwidth (cores' worth: {knees})"


def threads_per_rank(cores: int, ranks_per_node: int) -> float:
    """Threads of one rank: ``cores // k`` (the runtime's default), ``cores / k`` when the
    node runs more ranks than cores (they time-share)."""
    k = max(int(ranks_per_node), 1)
    return float(cores // k) if k <= cores else cores / k


def efficiency(node: ThreadScaling, T) -> np.ndarray:
    """C(T) = S(T) / T of the node's scaling with T busy cores (1 at one core)."""
    T = np.maximum(np.asarray(T, dtype=np.float64), 1.0)
    return node(T) / T


def sharing(node: ThreadScaling, t: float, m, cores: int) -> np.ndarray:
    """sigma(m): speed of each of m ranks of t threads computing at once, relative to one
    of them computing alone (module docstring): ``C(m t) / C(t)``; m may be an array."""
    m = np.maximum(np.asarray(m, dtype=np.float64), 1.0)
    busy = np.minimum(m * max(t, 1.0), cores)
    return np.minimum(1.0, efficiency(node, busy) / efficiency(node, max(t, 1.0)))


def fluid_finish(
    solo: np.ndarray, node: np.ndarray, scaling: ThreadScaling, t: float, cores: int, k: int
) -> np.ndarray:
    """(P,) when each rank finishes work that takes it `solo` seconds alone on its node,
    while the other ranks of its node (`node`: each rank's node) do theirs: the ranks of a
    node start together and share the node's throughput among those still computing (with
    more ranks than cores, all `k` ranks share it throughout)."""
    solo = np.asarray(solo, dtype=np.float64)
    P = solo.shape[0]
    if P == 0 or not np.any(solo > 0):
        return solo.copy()
    order = np.lexsort((solo, node))
    w = solo[order]
    nd = np.asarray(node)[order]
    start = np.r_[True, nd[1:] != nd[:-1]]
    first = np.maximum.accumulate(np.where(start, np.arange(P), 0))
    size = np.bincount(nd)[nd]
    active = (size - (np.arange(P) - first)).astype(np.float64)
    if t < 1.0:
        active = np.full(P, float(k))
    prev = np.where(start, 0.0, np.r_[0.0, w[:-1]])
    inc = (w - prev) / sharing(scaling, t, active, cores)
    cum = np.cumsum(inc)
    done = cum - np.r_[0.0, cum][first]
    out = np.empty(P)
    out[order] = done
    return np.where(solo > 0, out, 0.0)
