"""Vertex-cut (edge) partitioning: Libra greedy edge streaming (DistGNN) and a random baseline.

Every stored nonzero (i, j) of the matrix is an edge and goes to exactly one part; a vertex is
replicated on every part holding one of its edges.  DistGNN (section 5.1) partitions with
Libra (Xie et al., NIPS 2014), which "assigns each edge to the least-loaded relevant (based on
edge vertices) partition".  The rules implemented here follow the Libra partitioner DistGNN
ships (DGL ``distgnn/partition``), with A(v) the parts already holding a replica of v and
load = edges per part:

1. A(u) and A(v) both empty: the least-loaded part overall;
2. exactly one of them non-empty: the least-loaded part of that replica set;
3. A(u) and A(v) intersect: the least-loaded part of the intersection;
4. both non-empty and disjoint (``rule="libra"``, default): the least-loaded part of the
   replica set of the endpoint with the *lower degree* (degree = row + column nonzeros,
   counted once before streaming), so the higher-degree vertex gets the new replica
   (Libra's principle: cutting high-degree vertices of power-law graphs is cheap);
   ``rule="remaining"`` instead picks the replica set of the endpoint with *more unassigned
   edges left* (the PowerGraph greedy heuristic), replicating the other endpoint.

Ties between equally loaded parts are broken uniformly at random (seeded), as in Libra.

Stream order: DistGNN notes that Libra "balances partitions by randomly distributing edges";
the balance comes from the order edges arrive in.  Streamed in CSR (row-major) order, every
edge of a connected graph after the first shares a vertex with part 0 and rules 2-3 keep it
there (one part gets everything), so the default streams the edges in a seeded random order
(``order="natural"`` keeps CSR order).
A self-loop (u, u) follows rules 1 and 3.  Each split vertex gets a root (master) part: the
part holding most of its edges (ties: the smallest part id).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from gcntrain.partition.basic import check_parts
from gcntrain.partition.csr import check_csr, row_ids
from gcntrain.partition.unique import unique_ints

#: names of the disjoint-replica-set rule (4)
RULES = ("libra", "remaining")


@njit(nogil=True, cache=True)
def _pick_least_loaded(cands, m, load):
    """Least-loaded part among cands[:m]; ties uniformly at random (reservoir sampling)."""
    best = cands[0]
    ties = 1
    for t in range(1, m):
        c = cands[t]
        if load[c] < load[best]:
            best = c
            ties = 1
        elif load[c] == load[best]:
            ties += 1
            if np.random.randint(0, ties) == 0:
                best = c
    return best


@njit(nogil=True, cache=True)
def _collect(rptr, rcnt, rlist, v, cands):
    """cands[:m] = the parts of v's replicas, newest first; returns m."""
    m = 0
    base = rptr[v]
    for i in range(rcnt[v] - 1, -1, -1):
        cands[m] = rlist[base + i]
        m += 1
    return m


@njit(nogil=True, cache=True)
def libra_stream_coo(
    src, dst, order, P, degree, remaining, rule, seed, edge_part, load, rptr, rcnt, rlist
):  # pragma: no cover - jitted
    """Libra greedy vertex-cut over edges ``(src[e], dst[e])`` visited in `order`.

    Parameters
    ----------
    src, dst : int64 (m,) the endpoints of the edges in visiting order: the t-th edge
        visited, edge ``order[t]``, is ``(src[t], dst[t])`` (read in sequence, not
        gathered edge by edge: each gather was a cache miss)
    order : int64 (m,) visiting order of the edges
    P : number of parts
    degree : int64 (n,) static degrees (rule 0 = "libra")
    remaining : int64 (n,) unassigned edges per vertex, decremented in place (rule 1)
    rule : 0 = lower static degree's replica set, 1 = more remaining edges' replica set
    seed : seed of Numba's generator for tie breaking
    edge_part : int64 (m,) output part per edge
    load : int64 (P,) output edges per part (zeroed by the caller)
    rptr : int64 (n + 1,) the replica slots of each vertex: ``min(P, incident edges)`` (a
        vertex gets at most one replica per part and per edge)
    rcnt : int64 (n,) replicas so far per vertex (zeroed by the caller)
    rlist : int64 (rptr[n],) replica parts of each vertex, in the order they were added

    Every replica set is contiguous and read newest first (the order candidates are drawn
    in, which tie breaking depends on).

    Returns
    -------
    number of replicas.
    """
    np.random.seed(seed)
    cands = np.empty(P, dtype=np.int64)
    mark = np.full(P, -1, dtype=np.int64)
    allparts = np.arange(P)
    used = 0
    for t in range(order.shape[0]):
        e = order[t]
        u = src[t]
        v = dst[t]
        hu = rcnt[u] > 0
        hv = rcnt[v] > 0
        add_u = False
        add_v = False
        if not hu and not hv:
            c = _pick_least_loaded(allparts, P, load)
            add_u = True
            add_v = u != v
        elif hu and not hv:
            m = _collect(rptr, rcnt, rlist, u, cands)
            c = _pick_least_loaded(cands, m, load)
            add_v = True
        elif hv and not hu:
            m = _collect(rptr, rcnt, rlist, v, cands)
            c = _pick_least_loaded(cands, m, load)
            add_u = True
        else:
            bu = rptr[u]
            for i in range(rcnt[u]):
                mark[rlist[bu + i]] = t
            m = 0
            bv = rptr[v]
            for i in range(rcnt[v] - 1, -1, -1):
                x = rlist[bv + i]
                if mark[x] == t:
                    cands[m] = x
                    m += 1
            if m > 0:
                c = _pick_least_loaded(cands, m, load)
            else:
                if rule == 0:
                    use_u = degree[u] < degree[v]
                else:
                    use_u = remaining[u] > remaining[v]
                if use_u:
                    m = _collect(rptr, rcnt, rlist, u, cands)
                    add_v = True
                else:
                    m = _collect(rptr, rcnt, rlist, v, cands)
                    add_u = True
                c = _pick_least_loaded(cands, m, load)
        edge_part[e] = c
        load[c] += 1
        remaining[u] -= 1
        if u != v:
            remaining[v] -= 1
        if add_u:
            rlist[rptr[u] + rcnt[u]] = c
            rcnt[u] += 1
            used += 1
        if add_v:
            rlist[rptr[v] + rcnt[v]] = c
            rcnt[v] += 1
            used += 1
    return used


@dataclass
class VertexCut:
    """An edge partition with its vertex replicas.

    Attributes
    ----------
    parts : number of parts P
    edge_part : int64 (nnz,) part of each stored nonzero, in the matrix's CSR order
    replica_ptr : int64 (n + 1,) CSR over vertices
    replica_parts : int64 parts holding a replica of each vertex (sorted per vertex)
    root : int64 (n,) master part per vertex (-1 for vertices without edges)
    """

    parts: int
    edge_part: np.ndarray
    replica_ptr: np.ndarray
    replica_parts: np.ndarray
    root: np.ndarray

    @property
    def edges_per_part(self) -> np.ndarray:
        return np.bincount(self.edge_part, minlength=self.parts).astype(np.int64)

    @property
    def replication_factor(self) -> float:
        """Mean number of replicas over vertices with at least one edge."""
        counts = np.diff(self.replica_ptr)
        has = counts > 0
        return float(counts[has].mean()) if has.any() else 1.0

    @property
    def edge_balance(self) -> float:
        """max / mean edges per part."""
        e = self.edges_per_part
        return float(e.max() / e.mean()) if e.sum() else 1.0

    @property
    def split_vertices(self) -> int:
        return int(np.count_nonzero(np.diff(self.replica_ptr) > 1))


def _endpoints(indptr: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return row_ids(indptr), np.asarray(indices, dtype=np.int64)


def vertex_edge_parts(
    indptr: np.ndarray, indices: np.ndarray, edge_part: np.ndarray, P: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(vertex, part, count) triples: how many edges of each vertex every part holds.

    A self-loop counts once for its vertex.  Sorted by (vertex, part).
    """
    u, v = _endpoints(indptr, indices)
    e = np.asarray(edge_part, dtype=np.int64)
    loop = u == v
    verts = np.concatenate([u, v[~loop]])
    parts = np.concatenate([e, e[~loop]])
    key, counts = unique_ints(verts * P + parts, return_counts=True, overwrite=True)
    return key // P, key % P, counts.astype(np.int64)


def roots_from_counts(
    n: int, verts: np.ndarray, parts: np.ndarray, counts: np.ndarray
) -> np.ndarray:
    """Master part per vertex: the part with most of its edges (ties: smallest id); -1 if none."""
    root = np.full(n, -1, dtype=np.int64)
    # sort by vertex, then count descending, then part ascending; first per vertex wins
    order = np.lexsort((parts, -counts, verts))
    vs = verts[order]
    first = np.r_[True, vs[1:] != vs[:-1]] if vs.size else np.empty(0, dtype=bool)
    root[vs[first]] = parts[order][first]
    return root


def vertex_cut_from_edges(
    indptr: np.ndarray, indices: np.ndarray, edge_part: np.ndarray, P: int
) -> VertexCut:
    """Replicas and roots implied by an edge assignment."""
    n = len(indptr) - 1
    verts, parts, counts = vertex_edge_parts(indptr, indices, edge_part, P)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(verts, minlength=n), out=ptr[1:])
    root = roots_from_counts(n, verts, parts, counts)
    return VertexCut(int(P), np.asarray(edge_part, dtype=np.int64), ptr, parts, root)


def libra_partition(
    indptr: np.ndarray,
    indices: np.ndarray,
    P: int,
    *,
    seed: int = 0,
    rule: str = "libra",
    order: str = "random",
) -> VertexCut:
    """Libra greedy vertex-cut of the stored nonzeros (see the module docstring for the rules).

    Parameters
    ----------
    indptr, indices : CSR pattern; every stored nonzero is one edge
    P : number of parts, ``1 <= P <= n``
    seed : seed for tie breaking (and the stream order when ``order="random"``)
    rule : "libra" (lower static degree) or "remaining" (more unassigned edges) for rule 4
    order : "random" (default: a seeded random stream) or "natural" (CSR order)

    Returns
    -------
    `VertexCut` whose replica lists come from the streaming itself.
    """
    n = check_csr(indptr, indices)
    check_parts(n, P)
    if rule not in RULES:
        raise ValueError(f"unknown Libra rule {rule!r} (choose from {RULES})")
    if order not in ("natural", "random"):
        raise ValueError(f"unknown stream order {order!r} (natural or random)")
    u, v = _endpoints(indptr, indices)
    m = u.size
    deg = np.bincount(u, minlength=n).astype(np.int64)
    deg += np.bincount(v[u != v], minlength=n).astype(np.int64)
    if order == "random":
        visit = np.random.default_rng(seed).permutation(m).astype(np.int64)
        u = u[visit]  # the endpoints in visiting order (`libra_stream_coo`), one at a time
        v = v[visit]
    else:
        visit = np.arange(m, dtype=np.int64)
    edge_part = np.empty(m, dtype=np.int64)
    load = np.zeros(P, dtype=np.int64)
    # contiguous replica slots per vertex (the old linked pool had 2 m entries scattered
    # over memory: each replica-set walk was a chain of cache misses)
    rptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.minimum(deg, P), out=rptr[1:])
    rcnt = np.zeros(n, dtype=np.int64)
    rlist = np.empty(int(rptr[-1]), dtype=np.int64)
    remaining = deg.copy()
    libra_stream_coo(
        u,
        v,
        visit,
        int(P),
        deg,
        remaining,
        RULES.index(rule),
        int(seed) % (2**32),
        edge_part,
        load,
        rptr,
        rcnt,
        rlist,
    )
    # replica lists from the stream's own sets, sorted by part per vertex
    owner = np.repeat(np.arange(n, dtype=np.int64), rcnt)
    first = np.repeat(np.cumsum(rcnt) - rcnt, rcnt)  # each replica's owner's first, packed
    parts = rlist[np.repeat(rptr[:-1], rcnt) + np.arange(owner.size) - first]
    order_r = np.lexsort((parts, owner))
    owner, parts = owner[order_r], parts[order_r]
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(rcnt, out=ptr[1:])
    verts, vparts, counts = vertex_edge_parts(indptr, indices, edge_part, P)
    root = roots_from_counts(n, verts, vparts, counts)
    return VertexCut(int(P), edge_part, ptr, parts.copy(), root)


def random_edge_partition(
    indptr: np.ndarray, indices: np.ndarray, P: int, *, seed: int = 0
) -> VertexCut:
    """Baseline: edges dealt to parts at random (a random permutation cut into P blocks)."""
    n = check_csr(indptr, indices)
    check_parts(n, P)
    m = len(indices)
    rng = np.random.default_rng(seed)
    edge_part = np.empty(m, dtype=np.int64)
    base, extra = divmod(m, P)
    sizes = np.full(P, base, dtype=np.int64)
    sizes[:extra] += 1
    edge_part[rng.permutation(m)] = np.repeat(np.arange(P, dtype=np.int64), sizes)
    return vertex_cut_from_edges(indptr, indices, edge_part, P)
