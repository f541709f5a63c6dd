"""Row layouts of the 1D family (pure; no MPI): who owns which rows, who needs which rows.

A partition vector `part` (length n, values 0..B-1) is turned into a renumbering that makes
every part a contiguous block of rows, part by part, keeping increasing original ids inside
a part.  Everything after loading works in the new numbering; `perm[new] = old` maps back
(dropout masks and outputs use original ids, so a run equals the serial run whatever the
partition).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def renumber(part: np.ndarray, nparts: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (perm new->old, inv old->new, offsets (nparts+1)) for a partition vector."""
    part = np.asarray(part, dtype=np.int64)
    perm = np.argsort(part, kind="stable").astype(np.int64)
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.shape[0], dtype=np.int64)
    counts = np.bincount(part, minlength=nparts)
    offsets = np.zeros(nparts + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return perm, inv, offsets


def owner_of(cols: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Block that owns each (new-numbering) row id in `cols`."""
    return np.searchsorted(offsets, cols, side="right") - 1


def column_blocks(
    indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, offsets: np.ndarray
) -> list[sp.csr_matrix]:
    """Split local rows (global new-numbering column ids) into one CSR per column block.

    Block q has local column ids ``col - offsets[q]`` and shape (rows, offsets[q+1]-offsets[q]).
    """
    m = indptr.shape[0] - 1
    M = sp.csr_matrix((data, indices, indptr), shape=(m, int(offsets[-1])))
    out = []
    for q in range(offsets.shape[0] - 1):
        B = M[:, int(offsets[q]) : int(offsets[q + 1])].tocsr()
        B.sort_indices()
        out.append(B)
    return out


def block_nnz(indptr: np.ndarray, indices: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Nonzeros of local rows per column block (length nparts)."""
    own = owner_of(np.asarray(indices, dtype=np.int64), offsets)
    return np.bincount(own, minlength=offsets.shape[0] - 1).astype(np.int64)


def halo_needs(indices: np.ndarray, offsets: np.ndarray, me: int) -> list[np.ndarray]:
    """Distinct remote columns of a block's rows, grouped by owner (sorted, new numbering)."""
    cols = np.unique(np.asarray(indices, dtype=np.int64))
    own = owner_of(cols, offsets)
    out = []
    for q in range(offsets.shape[0] - 1):
        out.append(cols[own == q] if q != me else np.zeros(0, dtype=np.int64))
    return out


def needed_pairs(
    row_block: np.ndarray, cols: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Which rows of X each block must receive from each other block to form its rows of
    ``M @ X`` (1D row-parallel SpMM), from the entries of M.

    Parameters
    ----------
    row_block : int64, the block that owns each entry's row (a constant for one rank's rows).
    cols : int64, each entry's column (new numbering).
    offsets : block boundaries (B+1).

    Returns
    -------
    (src, dst, ptr, ids)
        The block pairs src -> dst (src != dst) with at least one needed row, sorted by
        (dst, src); pair k's rows are ``ids[ptr[k]:ptr[k+1]]`` (sorted, each once).  Used by
        the p2p runtime on its own rows (its receive lists; the send lists travel in the
        setup request exchange) and by the plan on all rows: one definition of who sends what.
    """
    cols = np.asarray(cols, dtype=np.int64)
    dst = np.broadcast_to(np.asarray(row_block, dtype=np.int64), cols.shape)
    src = owner_of(cols, offsets)
    remote = src != dst
    n = int(offsets[-1])
    key = np.unique(dst[remote] * max(n, 1) + cols[remote])
    d, ids = key // max(n, 1), key % max(n, 1)
    s = owner_of(ids, offsets)
    order = np.lexsort((ids, s, d))
    d, s, ids = d[order], s[order], ids[order]
    pk = d * (offsets.shape[0] - 1) + s
    starts = np.flatnonzero(np.r_[True, pk[1:] != pk[:-1]]) if pk.size else np.zeros(0, np.int64)
    ptr = np.append(starts, pk.size).astype(np.int64)
    return s[starts], d[starts], ptr, ids


def block_pair_counts(
    row_block: np.ndarray, cols: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entries per (row block, column block) pair, sorted by pair, nonzero counts only.

    The transposition of a row-distributed matrix sends entry (i, j) from the owner of row i
    to the owner of row j of the transpose (= the owner of column j): the runtime applies this
    to its own entries, the plan to all of them.
    """
    cols = np.asarray(cols, dtype=np.int64)
    src = np.broadcast_to(np.asarray(row_block, dtype=np.int64), cols.shape)
    B = offsets.shape[0] - 1
    dst = owner_of(cols, offsets)
    key, cnt = np.unique(src * B + dst, return_counts=True)
    return key // B, key % B, cnt.astype(np.int64)
