"""Pre-, post- and hybrid (minimum vertex cover) aggregation of cut edges (SuperGCN, sec. 5.2-5.3).

For a vertex partition of the rows of A, a cut edge is a nonzero A[i, j] with
``part[i] = p != q = part[j]``: destination i (local to p, aggregates) needs source j (whose
feature row lives on q).  Per ordered pair (q -> p) the cut edges form a bipartite graph
(sources on q, destinations on p):

* post-aggregation sends every distinct source row once: volume = #sources (= the 1D volume);
* pre-aggregation lets q sum, per destination, the contributions of its sources and send one
  partial row per destination: volume = #destinations;
* hybrid (SuperGCN Algorithm 1): a minimum vertex cover C of the bipartite graph; edge (j, i)
  is "post" if its source j is in C (j's row is sent, aggregated at p), else "pre" (then i is in
  C and q sends i's partial sum).  Volume = |C| = maximum matching size (König), which is at
  most min(#sources, #destinations).

All pairs are handled at once: the union of the pair graphs is one bipartite graph whose left
vertices are (source j, receiving part p) and right vertices (destination i, sending part q);
its maximum matching (scipy's Hopcroft-Karp) restricted to a pair is a maximum matching of the
pair.  The König cover is built from an alternating BFS (Numba) from the unmatched left
vertices Z: cover = (left not reached) + (right reached).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from numba import njit
from scipy.sparse.csgraph import maximum_bipartite_matching

from gcntrain.partition.csr import check_csr, check_part, row_ids
from gcntrain.partition.unique import unique_ints

#: codes of `MvcSplit.edge_mode`
LOCAL, PRE, POST = -1, 0, 1
#: aggregation strategies: all cut edges pre-aggregated, all post-aggregated, or by cover
AGGR = ("pre", "post", "hybrid")


@njit(nogil=True, cache=True)
def konig_reach_csr(indptr, indices, match_left, match_right, seen_left, seen_right, queue):
    """Alternating BFS from the unmatched left vertices of a bipartite graph.

    Parameters
    ----------
    indptr, indices : biadjacency in CSR (left -> right)
    match_left : int (n_left,) matched right vertex or -1
    match_right : int (n_right,) matched left vertex or -1
    seen_left, seen_right : bool outputs (zeroed by the caller): vertices reached
    queue : int64 (n_left,) scratch

    Returns
    -------
    number of left vertices reached.
    """
    head = 0
    tail = 0
    for u in range(match_left.shape[0]):
        if match_left[u] < 0:
            seen_left[u] = True
            queue[tail] = u
            tail += 1
    while head < tail:
        u = queue[head]
        head += 1
        for k in range(indptr[u], indptr[u + 1]):
            v = indices[k]
            if not seen_right[v]:
                seen_right[v] = True
                w = match_right[v]
                if w >= 0 and not seen_left[w]:
                    seen_left[w] = True
                    queue[tail] = w
                    tail += 1
    return tail


def bipartite_min_vertex_cover(biadj: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray, int]:
    """Minimum vertex cover of a bipartite graph by maximum matching and König's theorem.

    Parameters
    ----------
    biadj : (n_left x n_right) sparse matrix; a stored entry (u, v) is an edge

    Returns
    -------
    (cover_left bool (n_left,), cover_right bool (n_right,), matching size); the cover size
    equals the matching size.
    """
    B = sp.csr_matrix(biadj, copy=True)
    B.sum_duplicates()
    B.data = np.ones(B.nnz, dtype=np.int8)
    B.sort_indices()
    n_left, n_right = B.shape
    if B.nnz == 0:
        return np.zeros(n_left, bool), np.zeros(n_right, bool), 0
    match_left = np.asarray(maximum_bipartite_matching(B, perm_type="column"), dtype=np.int64)
    match_right = np.full(n_right, -1, dtype=np.int64)
    matched = np.flatnonzero(match_left >= 0)
    match_right[match_left[matched]] = matched
    seen_left = np.zeros(n_left, dtype=np.bool_)
    seen_right = np.zeros(n_right, dtype=np.bool_)
    queue = np.empty(n_left, dtype=np.int64)
    konig_reach_csr(
        B.indptr.astype(np.int64),
        B.indices.astype(np.int64),
        match_left,
        match_right,
        seen_left,
        seen_right,
        queue,
    )
    return ~seen_left, seen_right, int(matched.size)


@dataclass
class MvcSplit:
    """Per-pair volumes of the three strategies and the hybrid per-edge assignment.

    Attributes
    ----------
    parts : P
    pair_src, pair_dst : int64 (m,) ordered pairs q -> p with cut edges, sorted
    post_volume, pre_volume, hybrid_volume : int64 (m,) rows sent per pair
    hybrid_post, hybrid_pre : int64 (m,) of the hybrid volume: source rows sent / partial sums
    edge_mode : int8 (nnz,) per stored nonzero of A: LOCAL (-1), PRE (0) or POST (1)
    """

    parts: int
    pair_src: np.ndarray
    pair_dst: np.ndarray
    post_volume: np.ndarray
    pre_volume: np.ndarray
    hybrid_volume: np.ndarray
    hybrid_post: np.ndarray
    hybrid_pre: np.ndarray
    edge_mode: np.ndarray

    def per_rank_send(self, which: str) -> np.ndarray:
        """Rows sent per rank (P,) under "post", "pre" or "hybrid"."""
        vol = {"post": self.post_volume, "pre": self.pre_volume, "hybrid": self.hybrid_volume}
        return np.bincount(self.pair_src, weights=vol[which], minlength=self.parts).astype(np.int64)

    def per_rank_recv(self, which: str) -> np.ndarray:
        """Rows received per rank (P,) under "post", "pre" or "hybrid"."""
        vol = {"post": self.post_volume, "pre": self.pre_volume, "hybrid": self.hybrid_volume}
        return np.bincount(self.pair_dst, weights=vol[which], minlength=self.parts).astype(np.int64)

    def summary(self) -> dict:
        """Totals and per-rank maxima (send and receive) of the three strategies."""
        out: dict = {}
        for which in ("pre", "post", "hybrid"):
            vol = {"post": self.post_volume, "pre": self.pre_volume, "hybrid": self.hybrid_volume}[
                which
            ]
            send, recv = self.per_rank_send(which), self.per_rank_recv(which)
            out[f"{which}_total"] = int(vol.sum())
            out[f"{which}_max_send"] = int(send.max()) if send.size else 0
            out[f"{which}_max_recv"] = int(recv.max()) if recv.size else 0
        return out


def mvc_split(
    indptr: np.ndarray, indices: np.ndarray, part: np.ndarray, P: int | None = None
) -> MvcSplit:
    """SuperGCN's hybrid pre/post aggregation split of all cut edges of a vertex partition.

    Parameters
    ----------
    indptr, indices : CSR pattern of A (row i aggregates over its columns j)
    part : (n,) part per row
    P : number of parts (default ``max(part) + 1``)

    Returns
    -------
    `MvcSplit`.
    """
    n = check_csr(indptr, indices)
    part, P = check_part(part, n, P)
    rows = row_ids(indptr)
    cols = np.asarray(indices, dtype=np.int64)
    dst_part = part[rows]
    src_part = part[cols]
    cut = np.flatnonzero(dst_part != src_part)
    i, j = rows[cut], cols[cut]
    p, q = dst_part[cut], src_part[cut]
    edge_mode = np.full(len(cols), LOCAL, dtype=np.int8)
    # left vertex = (source j, receiving part p); right vertex = (destination i, sending q)
    lkey, left = unique_ints(j * P + p, return_inverse=True)
    rkey, right = unique_ints(i * P + q, return_inverse=True)
    B = sp.csr_matrix(
        (np.ones(cut.size, dtype=np.int8), (left, right)), shape=(lkey.size, rkey.size)
    )
    cover_left, cover_right, _ = bipartite_min_vertex_cover(B)
    post = cover_left[left]
    edge_mode[cut] = np.where(post, POST, PRE).astype(np.int8)
    # pair of every left / right vertex
    l_pair = part[lkey // P] * P + lkey % P  # q * P + p
    r_pair = (rkey % P) * P + part[rkey // P]  # q * P + p
    pkey = unique_ints(l_pair)
    m = pkey.size
    li = np.searchsorted(pkey, l_pair)
    ri = np.searchsorted(pkey, r_pair)
    post_volume = np.bincount(li, minlength=m).astype(np.int64)
    pre_volume = np.bincount(ri, minlength=m).astype(np.int64)
    # realised hybrid volume: sources with a post edge + destinations with a pre edge
    post_src = np.zeros(lkey.size, dtype=bool)
    post_src[left[post]] = True
    pre_dst = np.zeros(rkey.size, dtype=bool)
    pre_dst[right[~post]] = True
    hybrid_post = np.bincount(li, weights=post_src, minlength=m).astype(np.int64)
    hybrid_pre = np.bincount(ri, weights=pre_dst, minlength=m).astype(np.int64)
    return MvcSplit(
        parts=P,
        pair_src=pkey // P,
        pair_dst=pkey % P,
        post_volume=post_volume,
        pre_volume=pre_volume,
        hybrid_volume=hybrid_post + hybrid_pre,
        hybrid_post=hybrid_post,
        hybrid_pre=hybrid_pre,
        edge_mode=edge_mode,
    )


def cover_modes(
    dst: np.ndarray, src: np.ndarray, src_part: np.ndarray, P: int, aggr: str = "hybrid"
) -> np.ndarray:
    """PRE / POST mode of each cut edge ``src -> dst`` of ONE receiving part under `aggr`.

    The edges come from any sending parts (``src_part``); with "hybrid" the left vertices are
    the sources ``src`` (each in one part, and all sent to this one receiver) and the right
    vertices the (destination, sending part) pairs, so every sending part's pair is its own
    component and the König cover of the union is a minimum cover of every pair.  (Edges of
    several receivers would share a source's left vertex across pairs: `mvc_split` keys the
    left vertices by (source, receiving part) for that.)  Deterministic: the
    result depends only on the set of edges, not on their order, so both ends of a pair
    that hold the same edges find the same split.

    Returns
    -------
    int8 (len(dst),) PRE (0) or POST (1).
    """
    dst = np.asarray(dst, dtype=np.int64)
    src = np.asarray(src, dtype=np.int64)
    if aggr not in AGGR:
        raise ValueError(f"aggr must be one of {AGGR}, got {aggr!r}")
    if aggr != "hybrid" or dst.size == 0:
        return np.full(dst.size, PRE if aggr == "pre" else POST, dtype=np.int8)
    _, left = unique_ints(src, return_inverse=True)
    _, right = unique_ints(dst * int(P) + np.asarray(src_part, dtype=np.int64), return_inverse=True)
    B = sp.csr_matrix(
        (np.ones(dst.size, dtype=np.int8), (left, right)),
        shape=(int(left.max()) + 1, int(right.max()) + 1),
    )
    cover_left, _, _ = bipartite_min_vertex_cover(B)
    return np.where(cover_left[left], POST, PRE).astype(np.int8)
