"""Locality orders of the rows (pure; no MPI): which row comes first inside its part.

A sparse product gathers ``X[indices[k]]`` row after row; when the columns of neighbouring rows
are close together, the gathered rows are already in cache.  A renumbering that keeps every
row part contiguous may order the rows *inside* each part freely, so a locality order costs no
communication and changes no part's contents (the planned bytes stay those of the partition).

Orders (`ORDERS`; ``--reorder`` also takes ``auto``, `CHOICES`):

``auto`` (the default)
    ``rcm`` where a part holds more than `AUTO_RCM_ROWS` rows of a graph file, else ``none``
    (`auto_order`).
``none``
    Increasing original id inside each part (the renumbering's default).
``degree``
    Decreasing number of stored entries, ties by id: the rows most columns point at share
    the first cache lines and pages.
``rcm``
    Reverse Cuthill-McKee of the symmetrised structure (scipy's), which clusters the
    nonzeros near the diagonal (meshes, road networks, community structure).

Only the numbering changes: dropout masks and outputs use original ids, so training equals the
unordered run up to the floating-point order of each row's sum.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

ORDERS = ("none", "degree", "rcm")
#: the values ``--reorder`` takes: an order, or ``auto`` (`auto_order`)
CHOICES = ("auto", *ORDERS)
#: ``auto`` orders by ``rcm`` where a part holds more rows than this.  The narrowest operand
#: a sparse product gathers (hidden width 16, float32) takes 64 bytes a row: past 16,384
#: rows it no longer fits 1 MiB, a core's private L2 on the x86 servers users run (0.5-2
#: MiB; A64FX's 8 MiB L2 is shared by a CMG's 12 cores), and the gathers reach the shared
#: cache or memory, where neighbouring rows' columns sharing cache lines pays.  Measured in
#: docs/measurements/reorder-auto-2026-12-07.md: unordered, the serial epoch is 1.26x the
#: ordered one on the 200k-row benchmark graph and 1.13x on Slashdot (82k rows), in every
#: round; on smaller graphs the order is left as it is.
AUTO_RCM_ROWS = 16384


def auto_order(rows_max: int) -> str:
    """The order ``auto`` stands for on a numbering whose largest part holds `rows_max`
    rows: ``rcm`` above `AUTO_RCM_ROWS`, else ``none``."""
    return "rcm" if rows_max > AUTO_RCM_ROWS else "none"


def order_key(indptr: np.ndarray, indices: np.ndarray, order: str) -> np.ndarray | None:
    """Position of every row in the locality order `order` (int64, a permutation of
    ``0..n-1`` indexed by original id), or None for ``none``.

    Parameters
    ----------
    indptr, indices : CSR structure of the graph in its original numbering (square).
    order : one of `ORDERS`.
    """
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}; expected one of {', '.join(ORDERS)}")
    if order == "none":
        return None
    indptr = np.asarray(indptr, dtype=np.int64)
    n = indptr.shape[0] - 1
    if order == "degree":
        seq = np.argsort(-np.diff(indptr), kind="stable")
    else:
        from scipy.sparse.csgraph import reverse_cuthill_mckee

        idx = np.asarray(indices, dtype=np.int32 if n < 2**31 else np.int64)
        A = sp.csr_matrix((np.ones(idx.shape[0], dtype=np.int8), idx, indptr), shape=(n, n))
        A = (A + A.T).tocsr()  # the symmetrised pattern
        seq = np.asarray(reverse_cuthill_mckee(A, symmetric_mode=True), dtype=np.int64)
    key = np.empty(n, dtype=np.int64)
    key[seq] = np.arange(n, dtype=np.int64)
    return key


def reorder_within_parts(
    perm: np.ndarray, offsets: np.ndarray, key: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(perm, inv) of a renumbering whose part p keeps the rows ``perm[offsets[p]:
    offsets[p+1]]`` (new -> original), ordered inside the part by increasing ``key[original
    id]``; parts and offsets are unchanged."""
    perm = np.asarray(perm, dtype=np.int64)
    part = np.repeat(np.arange(offsets.shape[0] - 1, dtype=np.int64), np.diff(offsets))
    new_perm = perm[np.lexsort((key[perm], part))]
    inv = np.empty_like(new_perm)
    inv[new_perm] = np.arange(new_perm.shape[0], dtype=np.int64)
    return new_perm, inv
