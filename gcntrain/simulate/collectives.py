"""α-β costs of the standard algorithms of each collective (Thakur, Rabenseifner and Gropp,
"Optimization of collective communication operations in MPICH", IJHPCA 2005), vectorised
over groups: `p` members, per-member byte counts, a `Link` (α seconds per message, β seconds
per byte).  With ``rules="min"`` (the default, a profile's ``[network] mpi_rules``) each
function returns the time of the cheapest algorithm MPICH may choose (the minimum over the
algorithms listed), so a prediction is a lower bound of a well-tuned library; with a
library's rules (``"mpich"``, ``"openmpi"``) it prices the algorithm that library selects
(`gcntrain.simulate.mpi_rules`) by `plan`: the messages on the algorithm's critical path
(each with its latency at its size) and the bytes serialised along it.

A message of more than the link's ``eager`` bytes costs ``rendezvous`` more than α (the
handshake MPI makes before a large message; `Link.latency`).

Conventions: `n` is the bytes each member contributes (Allreduce: its whole vector;
Allgather: its own block, the result is p * n; Reduce-scatter: its whole input vector;
Broadcast: the root's message).  A group of one member sends nothing; the runtime's
Allreduce, Allgather and Reduce-scatter over one member copy its buffer into the result
(`local_copy`), a broadcast leaves it in place.  The arithmetic of a reduction is
`reduction` (memory-bound: a member combines (p - 1) / p of the vector).
"""

from __future__ import annotations

import numpy as np

from gcntrain.simulate import mpi_rules as R
from gcntrain.simulate.machine import Link


def _arrays(p, n):
    p = np.asarray(p, dtype=np.float64)
    n = np.asarray(n, dtype=np.float64)
    return p, n, np.ceil(np.log2(np.maximum(p, 1.0)))


def _solo(p, t):
    return np.where(p <= 1, 0.0, t)


def _msgs(count, size, link: Link) -> np.ndarray:
    """Latency of `count` messages of `size` bytes each (`Link.latency`)."""
    return np.asarray(count, np.float64) * link.latency(size)


def allreduce(p, n, link: Link, rules: str = "min") -> np.ndarray:
    """min(recursive doubling ``log p (α + n β)``, Rabenseifner / ring reduce-scatter +
    allgather ``2 log p α + 2 (p - 1) / p n β``, its messages n / 2 to n / p); with a
    library's `rules`, the algorithm it selects."""
    if rules != "min":
        return priced("allreduce", rules, p, n, link)
    p, n, lg = _arrays(p, n)
    rd = _msgs(lg, n, link) + lg * n * link.beta
    part = n / np.maximum(p, 1)
    rab = _msgs(2 * lg, part, link) + 2 * (p - 1) / np.maximum(p, 1) * n * link.beta
    return _solo(p, np.minimum(rd, rab))


def allgather(p, n, link: Link, rules: str = "min", vector: bool = True) -> np.ndarray:
    """Each member's `n` bytes to all: min(recursive doubling / Bruck ``log p α + (p - 1) n
    β``, ring ``(p - 1)(α + n β)``): the same bytes, fewer messages, so the first.  With a
    library's `rules`, the algorithm it selects for Allgatherv (`vector`: what the runtime
    calls; `n` the mean block) or Allgather."""
    if rules != "min":
        return priced("allgatherv" if vector else "allgather", rules, p, n, link)
    p, n, lg = _arrays(p, n)
    bruck = _msgs(lg, n, link) + (p - 1) * n * link.beta
    ring = _msgs(p - 1, n, link) + (p - 1) * n * link.beta
    return _solo(p, np.minimum(bruck, ring))


def reduce_scatter(p, n, link: Link, rules: str = "min") -> np.ndarray:
    """A vector of `n` bytes per member, each keeps its 1/p of the sum: min(recursive halving
    ``log p α + (p - 1) / p n β``, pairwise ``(p - 1) α + (p - 1) / p n β``); with a
    library's `rules`, the algorithm it selects."""
    if rules != "min":
        return priced("reduce_scatter", rules, p, n, link)
    p, n, lg = _arrays(p, n)
    frac = (p - 1) / np.maximum(p, 1) * n * link.beta
    part = n / np.maximum(p, 1)
    return _solo(p, np.minimum(_msgs(lg, part, link), _msgs(p - 1, part, link)) + frac)


def bcast(p, n, link: Link, rules: str = "min") -> np.ndarray:
    """min(binomial tree ``log p (α + n β)``, scatter + ring allgather (van de Geijn)
    ``(log p + p - 1) α + 2 (p - 1) / p n β``); with a library's `rules`, the algorithm it
    selects."""
    if rules != "min":
        return priced("bcast", rules, p, n, link)
    p, n, lg = _arrays(p, n)
    tree = _msgs(lg, n, link) + lg * n * link.beta
    part = n / np.maximum(p, 1)
    vdg = _msgs(lg + p - 1, part, link) + 2 * (p - 1) / np.maximum(p, 1) * n * link.beta
    return _solo(p, np.minimum(tree, vdg))


def alltoallv(
    peers,
    sent,
    received,
    link: Link,
    rules: str = "min",
    p=None,
    nonblocking: bool = False,
    idle=0,
) -> np.ndarray:
    """Pairwise exchange of one member: a step per peer it exchanges with, its bytes
    serialised in its larger direction: ``peers α + max(sent, received) β``.

    With a library's `rules` the same, plus, where the library runs the pairwise algorithm
    for an Alltoallv (or, `nonblocking`, an Ialltoallv) over `p` ranks, `idle` zero-byte
    steps (its loop exchanges with every rank, bytes or not: the caller says how many of
    the p - 1 steps carry nothing and are charged here).  The linear, scattered and blocked
    algorithms post only non-empty messages.  Which way they drive a torus is
    `mpi_rules.one_way`.
    """
    peers = np.asarray(peers, dtype=np.float64)
    vol = np.maximum(np.asarray(sent, dtype=np.float64), np.asarray(received, dtype=np.float64))
    size = vol / np.maximum(peers, 1.0)
    if rules == "min":
        return np.where(peers <= 0, 0.0, _msgs(peers, size, link) + vol * link.beta)
    comm = np.full(peers.shape, np.nan) if p is None else np.asarray(p, np.float64)
    comm = np.where(np.isnan(comm), peers + 1.0, comm)
    alg = R.select(rules, "ialltoallv" if nonblocking else "alltoallv", comm, 0.0)
    empty = np.where(alg == "pairwise", np.maximum(np.asarray(idle, np.float64), 0.0), 0.0)
    live = np.where(peers <= 0, 0.0, _msgs(peers, size, link) + vol * link.beta)
    return live + _msgs(empty, 0.0, link)


def alltoall(p, n, link: Link, rules: str = "min") -> np.ndarray:
    """Every member sends `n` bytes to every other member (MPI_Alltoall): with ``"min"``
    the pairwise exchange ``(p - 1)(α + n β)`` (`alltoallv`), else the algorithm `rules`
    select (`plan`)."""
    if rules != "min":
        return priced("alltoall", rules, p, n, link)
    p = np.asarray(p, np.float64)
    b = (p - 1) * np.asarray(n, np.float64)
    return alltoallv(p - 1, b, b, link)


def point_to_point(messages, nbytes, link: Link) -> np.ndarray:
    """`messages` messages of `nbytes` bytes in all from one member: ``messages α + nbytes β``."""
    m = np.asarray(messages, dtype=np.float64)
    b = np.asarray(nbytes, dtype=np.float64)
    return _msgs(m, b / np.maximum(m, 1.0), link) + b * link.beta


def reduction(p, n, bandwidth: float) -> np.ndarray:
    """Local arithmetic of an Allreduce or Reduce-scatter of `n` bytes per member: each
    member combines (p - 1) / p of the vector, reading two operands and writing one, at
    `bandwidth` bytes per second: ``3 (p - 1) / p n / bandwidth``."""
    p, n, _ = _arrays(p, n)
    return _solo(p, 3.0 * (p - 1) / np.maximum(p, 1) * n / bandwidth)


def local_copy(p, n, bandwidth: float) -> np.ndarray:
    """The copy a collective over one member makes of its `n` bytes into the result
    (reading and writing each byte at `bandwidth` bytes per second): ``2 n / bandwidth``
    where ``p == 1``, else nothing (the algorithms above move the bytes)."""
    p, n, _ = _arrays(p, n)
    return np.where(p == 1, 2.0 * n / bandwidth, 0.0)


# -- the algorithms a library selects -----------------------------------------------------
def _halving(n, lg) -> list:
    """(count, size) of steps sending n / 2, n / 4, ... (`lg` of them per entry)."""
    top = int(np.max(lg, initial=0.0))
    return [((lg >= k).astype(np.float64), n / 2.0**k) for k in range(1, top + 1)]


def _doubling(n, lg) -> list:
    """(count, size) of steps sending n, 2 n, 4 n, ... (`lg` of them per entry)."""
    top = int(np.max(lg, initial=0.0))
    return [((lg >= k).astype(np.float64), n * 2.0 ** (k - 1)) for k in range(1, top + 1)]


def _bruck_blocks(p, k: int) -> np.ndarray:
    """Blocks Bruck's Alltoall sends in its step k (0-based): the indices below p with bit
    k set."""
    q = p.astype(np.int64)
    period = 1 << (k + 1)
    return ((q // period) * (1 << k) + np.maximum(q % period - (1 << k), 0)).astype(np.float64)


def plan(collective: str, alg: str, p, n) -> tuple[list, np.ndarray]:
    """([(count, size), ...] of the messages on `alg`'s critical path, bytes serialised
    along it) for `collective` over `p` members, `n` bytes per member as the functions
    above take them (Allgather(v): each block; Alltoall: per destination).

    Latency rounds are ceil(log2 p) for the logarithmic algorithms (a non-power of two's
    fold-in step counted as the extra round); trees send whole messages (no segmentation,
    as the fixed rules ask); Open MPI's k-nomial bcast has radix 4 and its chain fan-out 4.
    """
    p, n = np.broadcast_arrays(np.asarray(p, np.float64), np.asarray(n, np.float64))
    lg = np.ceil(np.log2(np.maximum(p, 1.0)))
    frac = (p - 1) / np.maximum(p, 1.0)
    part = n / np.maximum(p, 1.0)
    key = (collective, alg)
    if key == ("allreduce", "recursive_doubling"):
        return [(lg, n)], lg * n
    if key == ("allreduce", "rabenseifner"):
        return 2 * _halving(n, lg), 2 * frac * n
    if key in (("allreduce", "ring"), ("allreduce", "segmented_ring")):
        return [(2 * (p - 1), part)], 2 * frac * n
    if key == ("allreduce", "nonoverlapping"):  # binomial reduce, then binomial bcast
        return [(2 * lg, n)], 2 * lg * n
    if collective == "bcast":
        return _bcast_plan(alg, p, n, lg, frac, part)
    if collective in ("allgather", "allgatherv"):
        if alg in ("recursive_doubling", "bruck"):
            return _doubling(n, lg), (p - 1) * n
        if alg == "ring":
            return [(p - 1, n)], (p - 1) * n
        if alg == "neighbor":
            return [(p / 2, 2 * n)], (p - 1) * n
        if alg == "two_proc":
            return [(np.minimum(p - 1, 1.0), n)], np.minimum(p - 1, 1.0) * n
        if alg == "default":  # gather to one rank, broadcast the whole (binomial)
            return [(p - 1, n), (lg, p * n)], (p - 1) * n + lg * p * n
    if collective == "reduce_scatter":
        if alg in ("recursive_halving", "butterfly"):
            return _halving(n, lg), frac * n
        if alg in ("pairwise", "ring"):
            return [(p - 1, part)], frac * n
        if alg == "nonoverlapping":  # binomial reduce, then linear scatter
            return [(lg, n), (p - 1, part)], lg * n + frac * n
    if collective == "alltoall":
        if alg == "bruck":
            top = int(np.max(lg, initial=0.0))
            steps = [((lg > k).astype(np.float64), _bruck_blocks(p, k) * n) for k in range(top)]
            return steps, sum((s for _, s in steps), np.zeros_like(n))
        if alg in ("linear", "linear_sync", "scattered", "pairwise"):
            return [(p - 1, n)], (p - 1) * n
        if alg == "two_proc":
            return [(np.minimum(p - 1, 1.0), n)], np.minimum(p - 1, 1.0) * n
    raise ValueError(f"no cost for {collective} algorithm {alg!r}")


def _bcast_plan(alg: str, p, n, lg, frac, part) -> tuple[list, np.ndarray]:
    """`plan` of a broadcast's algorithm: the root's message to the last rank reached."""
    if alg == "binomial":
        return [(lg, n)], lg * n
    if alg == "scatter_allgather":  # binomial scatter, recursive-doubling allgather
        return 2 * _halving(n, lg), 2 * frac * n
    if alg == "scatter_ring_allgather":
        return [*_halving(n, lg), (p - 1, part)], 2 * frac * n
    if alg in ("linear", "pipeline"):  # the root sends p - 1 times / a chain of p - 1 hops
        return [(p - 1, n)], (p - 1) * n
    if alg == "chain":  # four chains: the root feeds each head, then hops along the longest
        f = np.clip(p - 1, 1.0, 4.0)
        hops = np.where(p > 1, f - 1 + np.ceil((p - 1) / f), 0.0)
        return [(hops, n)], hops * n
    h = np.floor(np.log2(np.maximum(p, 1.0)))
    if alg == "binary_tree":  # each parent sends to its two children in turn
        m = np.minimum(2 * h, p - 1)
        return [(m, n)], m * n
    if alg == "split_binary_tree":  # halves down two subtrees, then swapped
        m = np.where(p > 2, h + 1, p - 1)
        return [(m, n / 2)], m * n / 2
    if alg == "knomial":  # radix 4: up to three children per level
        levels = np.ceil(np.log(np.maximum(p, 1.0)) / np.log(4.0) - 1e-12)
        m = np.minimum(3 * levels, p - 1)
        return [(m, n)], m * n
    raise ValueError(f"no cost for bcast algorithm {alg!r}")


def plan_seconds(steps: list, nbytes, link: Link) -> np.ndarray:
    """Seconds of a `plan`: each message's latency at its size, the bytes at β."""
    out = np.asarray(nbytes, np.float64) * link.beta
    for count, size in steps:
        out = out + _msgs(count, size, link)
    return out


def priced(collective: str, rules: str, p, n, link: Link) -> np.ndarray:
    """Seconds of `collective` over `p` members (`n` bytes each, as the functions above
    take them) by the algorithm `rules` select for each entry (`mpi_rules.select`)."""
    p, n = np.broadcast_arrays(np.asarray(p, np.float64), np.asarray(n, np.float64))
    algs = R.select(rules, collective, p, n)
    out = np.zeros(p.shape)
    for alg in set(algs.ravel().tolist()):
        m = algs == alg
        steps, nbytes = plan(collective, alg, p[m], n[m])
        out[m] = plan_seconds(steps, nbytes, link)
    return _solo(p, out)
