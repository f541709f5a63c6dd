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

from gcntrain.partition.unique import unique_ints


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


#: ids at least this many (and at least 1/8 of the range of ids) are looked up in a table
OWNER_TABLE_MIN = 4096


def owner_of(cols: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Block that owns each (new-numbering) row id in `cols` (the last block whose offset is
    at most the id, ``searchsorted(offsets, cols, "right") - 1``).  Many ids are looked up in
    a table of every id's block (O(n + m) instead of O(m log P); the simulator calls this on
    every entry of S for each layout it plans)."""
    cols = np.asarray(cols)
    offsets = np.asarray(offsets)
    lo, hi = int(offsets[0]), int(offsets[-1])
    if cols.size >= OWNER_TABLE_MIN and hi - lo <= 8 * cols.size and cols.dtype.kind in "iu":
        if int(cols.min()) >= lo and int(cols.max()) < hi:
            table = np.repeat(np.arange(offsets.shape[0] - 1, dtype=np.intp), np.diff(offsets))
            return table[cols - lo] if lo else table[cols]
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


def needed_pairs(
    row_block: np.ndarray | int, cols: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`gcntrain.partition.metrics.needed_pairs` for a numbering's contiguous blocks: which
    rows of X each block receives from each other block to form its rows of ``M @ X``, from
    the entries of M (row block per entry, column per entry); pairs sorted by (dst, src).
    The p2p runtime calls it on its own rows, the plan on all rows."""
    from gcntrain.partition.metrics import needed_pairs as pairs

    cols = np.asarray(cols, dtype=np.int64)
    return pairs(row_block, cols, owner_of(cols, offsets), int(offsets[-1]))


def block_pair_counts(
    row_block: np.ndarray, cols: np.ndarray, offsets: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entries per (row block, column block) pair, sorted by pair, nonzero counts only.

    The transposition of a row-distributed matrix sends entry (i, j) from the owner of row i
    to the owner of row j of the transpose (= the owner of column j): the runtime applies this
    to its own entries, the plan to all of them.
    """
    B = offsets.shape[0] - 1
    if np.ndim(row_block) == 0:  # one block's own entries (the runtime): a count, no sort
        per = np.bincount(owner_of(cols, offsets), minlength=B)
        dst = np.flatnonzero(per).astype(np.int64)
        return np.full(dst.shape, int(row_block), dtype=np.int64), dst, per[dst].astype(np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    src = np.broadcast_to(np.asarray(row_block, dtype=np.int64), cols.shape)
    dst = owner_of(cols, offsets)
    key, cnt = unique_ints(src * B + dst, return_counts=True, overwrite=True)
    return key // B, key % B, cnt
