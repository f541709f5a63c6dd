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
