"""Exact communication metrics of a vertex partition for 1D row-parallel SpMM.

Model (hypergraph-partitioning GCN paper, section 4.1): rank p owns the rows ``part == p`` of
the matrix A and of the dense operand H.  To compute its rows of ``A @ H`` it needs row j of H
for every column j that has a nonzero in one of its rows; when ``part[j] = q != p``, rank q
sends row j to p, once, however many of p's rows reference it.  So

* volume(q -> p) = #{ j : part[j] = q, exists i with part[i] = p and A[i, j] != 0 },
* total volume = sum over columns j of (connectivity of column-net j, with j itself a pin) - 1,
  i.e. the KM1 metric of the column-net hypergraph (`gcntrain.partition.hypergraph`).

Everything comes from `needed_pairs`, which lists each needed (column, receiving part) pair
once; pair data stay sparse, so P may be in the thousands.  The p2p scheme's runtime and plan
use the same function.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gcntrain.partition.csr import (
    check_csr,
    check_part,
    is_symmetric_pattern,
    row_ids,
)
from gcntrain.partition.unique import unique_ints


def needed_pairs(
    dst: np.ndarray | int, cols: np.ndarray, src: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Which rows of H each part receives from each other part for 1D row-parallel SpMM.

    The one definition of who sends what, used by partition reports (`comm_volume`,
    `send_lists`), by the p2p scheme at run time (on a rank's own rows, ``dst`` a constant)
    and by its plan (on all rows).

    Parameters
    ----------
    dst : part that owns each stored entry's row (an int for one part's rows)
    cols : column of each stored entry (< n)
    src : part that owns each entry's column (= the owner of row ``cols`` of H)
    n : number of columns

    Returns
    -------
    (src, dst, ptr, ids)
        The ordered part pairs src -> dst (src != dst) with at least one needed row, sorted by
        (dst, src); pair k's rows are ``ids[ptr[k]:ptr[k + 1]]``, sorted, each once.
    """
    cols = np.asarray(cols, dtype=np.int64)
    dst = np.broadcast_to(np.asarray(dst, dtype=np.int64), cols.shape)
    src = np.broadcast_to(np.asarray(src, dtype=np.int64), cols.shape)
    remote = src != dst
    m = max(int(n), 1)
    # key (dst, src, col) with col < n: unique keys are the needed rows, already grouped
    P = int(max(dst.max(initial=0), src.max(initial=0))) + 1
    key = unique_ints((dst[remote] * P + src[remote]) * m + cols[remote], overwrite=True)
    ids = key % m
    pk = key // m
    starts = np.flatnonzero(np.r_[True, pk[1:] != pk[:-1]]) if pk.size else pk[:0]
    ptr = np.append(starts, pk.size).astype(np.int64)
    return pk[starts] % P, pk[starts] // P, ptr, ids


def _max_over_mean(x: np.ndarray) -> float:
    mean = float(np.mean(x)) if x.size else 0.0
    return float(np.max(x)) / mean if mean > 0 else 1.0


def imbalance(values: np.ndarray) -> float:
    """max / mean of per-part values (1.0 = perfect balance; 1.0 for all-zero values)."""
    return _max_over_mean(np.asarray(values, dtype=np.float64))


def edge_cut(
    indptr: np.ndarray,
    indices: np.ndarray,
    part: np.ndarray,
    symmetric: bool | None = None,
) -> int:
    """Cut size of a vertex partition.

    For a structurally symmetric pattern: the number of distinct undirected edges {i, j},
    i != j, with ``part[i] != part[j]``; otherwise the number of distinct nonzeros (i, j) with
    endpoints in different parts.  `symmetric=None` detects the case from the pattern.
    """
    n = len(indptr) - 1
    part = np.asarray(part, dtype=np.int64)
    if symmetric is None:
        symmetric = is_symmetric_pattern(indptr, indices, n)
    rows = row_ids(indptr)
    cols = np.asarray(indices, dtype=np.int64)
    cut = part[rows] != part[cols]
    r, c = rows[cut], cols[cut]
    if symmetric:
        r, c = np.minimum(r, c), np.maximum(r, c)
    return int(unique_ints(r * n + c, overwrite=True).size)


def comm_volume(
    indptr: np.ndarray,
    indices: np.ndarray,
    part: np.ndarray,
    P: int | None = None,
    symmetric: bool | None = None,
) -> dict:
    """Communication of 1D row-parallel SpMM ``A @ H`` under a vertex partition.

    Parameters
    ----------
    indptr, indices : CSR pattern of the n x n matrix A (values ignored)
    part : (n,) part id per row (= owner of row i of A and of H)
    P : number of parts (default ``max(part) + 1``; empty parts allowed)
    symmetric : pattern symmetry for the edge cut (None: detect)

    Returns
    -------
    dict with, all counts in rows of H per SpMM:

    * ``parts``; ``send``, ``recv``: int64 (P,) rows sent / received per rank;
      ``volume_total``, ``volume_max_send``, ``volume_max_recv``;
    * ``pair_src``, ``pair_dst``, ``pair_volume``: the ordered pairs (q -> p) with volume > 0,
      sorted by (src, dst) (sparse: at most min(P^2, total volume) entries);
    * ``messages_total`` (pairs with volume > 0); ``messages_send``, ``messages_recv``: int64
      (P,) messages sent / received per rank; ``messages_max_send``, ``messages_max_recv``,
      ``messages_max`` (max of the two);
    * ``edge_cut``, ``symmetric``;
    * ``nnz_per_part``, ``nnz_imbalance`` (max/mean local nnz); ``part_sizes``,
      ``size_imbalance`` (max/mean rows).
    """
    n = check_csr(indptr, indices)
    part, P = check_part(part, n, P)
    idx = np.asarray(indices, dtype=np.int64)
    psrc, pdst, ptr, ids = needed_pairs(part[row_ids(indptr)], idx, part[idx], n)
    counts = np.diff(ptr)
    order = np.lexsort((pdst, psrc))
    pair_src, pair_dst, counts = psrc[order], pdst[order], counts[order]
    send = np.bincount(pair_src, weights=counts, minlength=P).astype(np.int64)
    recv = np.bincount(pair_dst, weights=counts, minlength=P).astype(np.int64)
    msg_send = np.bincount(pair_src, minlength=P).astype(np.int64)
    msg_recv = np.bincount(pair_dst, minlength=P).astype(np.int64)
    if symmetric is None:
        symmetric = is_symmetric_pattern(indptr, indices, n)
    nnz_per_part = np.bincount(part, weights=np.diff(indptr), minlength=P).astype(np.int64)
    sizes = np.bincount(part, minlength=P).astype(np.int64)
    return {
        "parts": P,
        "send": send,
        "recv": recv,
        "volume_total": int(ids.size),
        "volume_max_send": int(send.max()) if P else 0,
        "volume_max_recv": int(recv.max()) if P else 0,
        "pair_src": pair_src,
        "pair_dst": pair_dst,
        "pair_volume": counts.astype(np.int64),
        "messages_total": int(pair_src.size),
        "messages_send": msg_send,
        "messages_recv": msg_recv,
        "messages_max_send": int(msg_send.max()) if P else 0,
        "messages_max_recv": int(msg_recv.max()) if P else 0,
        "messages_max": int(max(msg_send.max(), msg_recv.max())) if P else 0,
        "edge_cut": edge_cut(indptr, indices, part, symmetric),
        "symmetric": bool(symmetric),
        "nnz_per_part": nnz_per_part,
        "nnz_imbalance": imbalance(nnz_per_part),
        "part_sizes": sizes,
        "size_imbalance": imbalance(sizes),
    }


@dataclass
class SendLists:
    """Rows each rank sends to each other rank, as CSR over the nonempty ordered pairs.

    Attributes
    ----------
    parts : number of ranks P
    src, dst : int64 (m,) the ordered pairs (q -> p), sorted by (src, dst)
    ptr : int64 (m + 1,) offsets into `ids`
    ids : int64 global row ids; pair k sends ``ids[ptr[k]:ptr[k + 1]]`` (sorted ascending)
    """

    parts: int
    src: np.ndarray
    dst: np.ndarray
    ptr: np.ndarray
    ids: np.ndarray

    def __len__(self) -> int:
        return int(self.src.size)

    def __post_init__(self) -> None:
        self._key = self.src * self.parts + self.dst

    def get(self, q: int, p: int) -> np.ndarray:
        """Sorted global ids of the rows q sends to p (empty if none)."""
        key = self._key
        k = int(np.searchsorted(key, q * self.parts + p))
        if k < key.size and key[k] == q * self.parts + p:
            return self.ids[self.ptr[k] : self.ptr[k + 1]]
        return np.empty(0, dtype=np.int64)

    def as_dict(self) -> dict[tuple[int, int], np.ndarray]:
        """{(q, p): ids} for every nonempty pair (convenient for small P)."""
        return {
            (int(q), int(p)): self.ids[self.ptr[k] : self.ptr[k + 1]]
            for k, (q, p) in enumerate(zip(self.src, self.dst))
        }


def send_lists(
    indptr: np.ndarray, indices: np.ndarray, part: np.ndarray, P: int | None = None
) -> SendLists:
    """Exact lists of H rows sent between ranks for 1D row-parallel SpMM.

    Parameters
    ----------
    indptr, indices : CSR pattern of A
    part : (n,) part id per row
    P : number of parts (default ``max(part) + 1``)

    Returns
    -------
    `SendLists`; ``len(result.get(q, p))`` equals volume(q -> p) of `comm_volume`.
    """
    n = check_csr(indptr, indices)
    part, P = check_part(part, n, P)
    idx = np.asarray(indices, dtype=np.int64)
    src, dst, ptr, ids = needed_pairs(part[row_ids(indptr)], idx, part[idx], n)
    order = np.lexsort((dst, src))
    lens = np.diff(ptr)[order]
    new_ptr = np.zeros(order.size + 1, dtype=np.int64)
    np.cumsum(lens, out=new_ptr[1:])
    # the ids of pair order[0], then of order[1], ...: concatenated ranges, vectorised
    take = np.arange(int(new_ptr[-1]), dtype=np.int64) + np.repeat(
        ptr[:-1][order] - new_ptr[:-1], lens
    )
    return SendLists(P, src[order], dst[order], new_ptr, ids[take].astype(np.int64))


def vertex_cut_comm(
    replica_ptr: np.ndarray, replica_parts: np.ndarray, root: np.ndarray, P: int
) -> dict:
    """Communication of one exact aggregation over a vertex cut (DistGNN cd-0).

    Every replica of a split vertex on a part other than its root sends its partial aggregate
    to the root (one row) and receives the final aggregate back (one row).

    Parameters
    ----------
    replica_ptr, replica_parts : CSR vertex -> parts holding a replica
    root : (n,) master part per vertex
    P : number of parts

    Returns
    -------
    dict with ``send``, ``recv`` (P,), ``volume_total``, ``volume_max_send``,
    ``volume_max_recv``, ``messages_total``, ``messages_max_send``, ``messages_max_recv``,
    ``messages_max`` (pairs exchanging at least one row, counted per direction).
    """
    counts = np.diff(replica_ptr)
    owner = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    leaf = np.asarray(replica_parts, dtype=np.int64)
    r = np.asarray(root, dtype=np.int64)[owner]
    keep = leaf != r
    leaf, r = leaf[keep], r[keep]
    # leaf -> root (partial aggregates), root -> leaf (final aggregates)
    src = np.concatenate([leaf, r])
    dst = np.concatenate([r, leaf])
    send = np.bincount(src, minlength=P).astype(np.int64)
    recv = np.bincount(dst, minlength=P).astype(np.int64)
    pairs = unique_ints(src * P + dst, overwrite=True)
    msg_send = np.bincount(pairs // P, minlength=P)
    msg_recv = np.bincount(pairs % P, minlength=P)
    return {
        "send": send,
        "recv": recv,
        "volume_total": int(src.size),
        "volume_max_send": int(send.max()),
        "volume_max_recv": int(recv.max()),
        "messages_total": int(pairs.size),
        "messages_max_send": int(msg_send.max()),
        "messages_max_recv": int(msg_recv.max()),
        "messages_max": int(max(msg_send.max(), msg_recv.max())),
    }
