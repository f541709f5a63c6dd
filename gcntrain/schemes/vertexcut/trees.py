"""One rank's part of the split vertices' trees (`Trees`), the exact tree synchronisation
(`tree_sync`) and the rank's local support with the whole graph's degrees (`local_support`).
"""

from __future__ import annotations

from time import perf_counter

import numpy as np
import scipy.sparse as sp

from gcntrain.kernels.rows import gather_rows, scatter_add_rows, scatter_rows
from gcntrain.model.normalize import DEGREE_OFFSET, degrees, support_rows
from gcntrain.partition.cut_layout import bucket_of, root_of
from gcntrain.schemes.vertexcut.layout import CutLayout

# -- the trees of one rank -----------------------------------------------------------------


class Trees:
    """This rank's part of every split vertex's tree: which local rows it sends to which
    root (`leaf_idx`, grouped by root, ascending ids; `leaf_counts` per rank) and which of its
    root rows every leaf rank sends (`root_idx`, grouped by source; `root_counts`), learnt in
    setup from one Alltoall of counts and one Alltoallv of ids (leaf -> root)."""

    def __init__(self, comm, ids: np.ndarray, offsets: np.ndarray, k: int, delay: int | None):
        me = comm.rank
        lo = int(offsets[me])
        leaves = np.arange(k, ids.size, dtype=np.int64)
        dst = root_of(ids[leaves], offsets)
        got, order, send, recv = comm.route(dst, [ids[leaves]], "setup")
        self.leaf_idx = leaves[order]
        self.leaf_counts = send
        self.root_idx = np.asarray(got[0], dtype=np.int64) - lo
        if self.root_idx.size and (self.root_idx.min() < 0 or self.root_idx.max() >= k):
            raise RuntimeError(f"rank {me} received leaves of vertices it does not root")
        self.root_counts = recv
        self.buckets = []
        if delay:
            lb = bucket_of(ids[self.leaf_idx], offsets, delay)
            rb = bucket_of(self.root_idx + lo, offsets, delay)
            root_rank = np.repeat(np.arange(comm.size), send)
            leaf_rank = np.repeat(np.arange(comm.size), recv)
            for b in range(delay):
                ls, rs = lb == b, rb == b
                self.buckets.append(
                    (
                        self.leaf_idx[ls],
                        np.bincount(root_rank[ls], minlength=comm.size),
                        self.root_idx[rs],
                        np.bincount(leaf_rank[rs], minlength=comm.size),
                    )
                )

    def full(self):
        return self.leaf_idx, self.leaf_counts, self.root_idx, self.root_counts


def _gather(X: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return gather_rows(X, idx, np.empty((idx.size, X.shape[1]), dtype=X.dtype))


def _untimed(name: str, t0: float) -> None:
    return None


def tree_sync(comm, trees: Trees, X: np.ndarray, key: str, clock=_untimed) -> None:
    """Exact tree synchronisation of the rows of X in place: the leaves' rows gathered
    (pre-processing) and sent to their roots (Alltoallv), added there (post-processing), the
    roots' rows gathered and sent back (Alltoallv) and written at the leaves.  ``clock(name,
    t0)`` is told when each part (``t_remote_pre``, ``_comm``, ``_post``) that began at t0
    ends."""
    leaf_idx, leaf_counts, root_idx, root_counts = trees.full()
    t = perf_counter()
    buf = _gather(X, leaf_idx)
    clock("t_remote_pre", t)
    t = perf_counter()
    got = comm.alltoallv(buf, leaf_counts, root_counts, key)
    clock("t_remote_comm", t)
    t = perf_counter()
    scatter_add_rows(got, root_idx, X)
    buf = _gather(X, root_idx)
    clock("t_remote_post", t)
    t = perf_counter()
    got = comm.alltoallv(buf, root_counts, leaf_counts, key)
    clock("t_remote_comm", t)
    t = perf_counter()
    scatter_rows(got, leaf_idx, X)
    clock("t_remote_post", t)


def local_support(world, layout: CutLayout, local, kind: str):
    """(clone ids, root count k, local support S (clones x clones), the trees, row order
    applied): the rank's entries with the whole graph's degrees (partial degrees summed
    through the trees, phase "setup"), the identity on the root's copy only."""
    p = world.rank
    lo, hi = int(layout.offsets[p]), int(layout.offsets[p + 1])
    ids = np.asarray(local.new_ids, dtype=np.int64)
    own = (ids >= lo) & (ids < hi)
    order = np.concatenate(
        [np.flatnonzero(own)[np.argsort(ids[own])], np.flatnonzero(~own)[np.argsort(ids[~own])]]
    )
    ids = ids[order]
    k = int(own.sum())
    if k != hi - lo:
        raise RuntimeError(f"rank {p} holds {k} of the {hi - lo} vertices it roots")
    m = ids.size
    rank_of = np.empty(m, dtype=np.int64)
    rank_of[order] = np.arange(m, dtype=np.int64)
    indptr, indices = np.asarray(local.indptr, np.int64), np.asarray(local.indices, np.int64)
    lrow = rank_of[np.repeat(np.arange(m, dtype=np.int64), np.diff(indptr))]
    sorted_ids = np.sort(ids)
    pos = np.searchsorted(sorted_ids, indices)
    pos[pos >= m] = 0
    if indices.size and not np.array_equal(sorted_ids[pos], indices):
        raise RuntimeError(f"rank {p} holds an edge to a vertex it has no clone of")
    by_sorted = np.argsort(ids, kind="stable")
    lcol = by_sorted[pos]
    vals = None if local.data is None else np.asarray(local.data, np.float64)
    M = sp.csr_matrix((np.ones(lcol.size) if vals is None else vals, (lrow, lcol)), shape=(m, m))
    M.sort_indices()
    # duplicate entries are summed into one (weight 2 on an unweighted graph, as serial counts)
    ip, ix, dv = M.indptr.astype(np.int64), M.indices.astype(np.int64), M.data
    local_rows = np.arange(m, dtype=np.int64)
    deg = degrees(ip, ix, dv, kind, rows=local_rows, partial=True).reshape(m, 1)
    trees = Trees(world, ids, layout.offsets, k, layout.delay)
    tree_sync(world, trees, deg, "setup")
    deg = deg[:, 0] + DEGREE_OFFSET[kind]
    identity = np.zeros(m, dtype=bool)
    identity[:k] = True
    sp_ip, sp_ix, sp_dv = support_rows(ip, ix, dv, local_rows, deg, kind, identity=identity)
    S = sp.csr_matrix((sp_dv, sp_ix, sp_ip), shape=(m, m))
    return ids, k, S, trees, order


def _reorder(local, order: np.ndarray, ids: np.ndarray) -> None:
    """Put the node data of `local` in clone order (roots first)."""
    local.orig_ids = np.ascontiguousarray(local.orig_ids[order])
    X = local.features
    local.features = X[order] if sp.issparse(X) else np.ascontiguousarray(X[order])
    local.labels = np.ascontiguousarray(local.labels[order])
    local.masks = {key: np.ascontiguousarray(v[order]) for key, v in local.masks.items()}
    local.ids = ids
