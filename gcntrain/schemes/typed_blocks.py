"""The local rows of S and S^T as the row schemes multiply them: column blocks and joins of
blocks, each cast to a training dtype once (`TypedBlocks`).

A join of consecutive blocks in ascending order (a one-node product through the node window
joins them all) is the column range of the rows themselves: no block is cut and nothing is
stacked, only the cast is made.  Other joins stack the blocks (stage order).  The blocks
are cut on first use only; the rows are dropped then (the blocks hold the same entries).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from gcntrain.schemes.layout import column_blocks


def as_dtype(mats: list[sp.csr_matrix], dtype) -> list[sp.csr_matrix]:
    """Each CSR of `mats` with its values in `dtype` and int64 column ids (new arrays)."""
    out = []
    for M in mats:
        M2 = sp.csr_matrix(
            (M.data.astype(dtype), M.indices.astype(np.int64), M.indptr), shape=M.shape
        )
        out.append(M2)
    return out


def column_range(indptr, indices, data, lo: int, hi: int, width: int) -> sp.csr_matrix:
    """Columns [lo, hi) of the CSR rows (global column ids, `width` columns in all, sorted
    in each row) with local ids ``col - lo``; the rows themselves where that is all of
    them."""
    M = sp.csr_matrix((data, indices, indptr), shape=(indptr.shape[0] - 1, width))
    if lo == 0 and hi == width:
        return M
    B = M[:, lo:hi].tocsr()
    B.sort_indices()
    return B


class TypedBlocks:
    """Column blocks of the local rows of S ("f") and S^T ("t": S's where S is symmetric,
    `bwd` None), cast to each dtype once (module docstring).

    Parameters
    ----------
    offsets : the column blocks' bounds (the row blocks' of the numbering).
    fwd, bwd : (indptr, indices, data) of the local rows of S and S^T (global column ids).
    """

    def __init__(self, offsets: np.ndarray, fwd, bwd):
        self.offsets = np.asarray(offsets)
        self._rows = {"f": fwd} if bwd is None else {"f": fwd, "t": bwd}
        self._blocks: dict = {}
        self._typed: dict = {}

    def _which(self, which: str) -> str:
        return which if which in self._rows or which in self._blocks else "f"

    def _cut(self, which: str) -> list[sp.csr_matrix]:
        if which not in self._blocks:
            self._blocks[which] = column_blocks(*self._rows.pop(which), self.offsets)
        return self._blocks[which]

    def get(self, which: str, dtype) -> list[sp.csr_matrix]:
        """Every column block of `which`, in `dtype`."""
        which = self._which(which)
        key = (which, np.dtype(dtype).str)
        if key not in self._typed:
            self._typed[key] = as_dtype(self._cut(which), dtype)
        return self._typed[key]

    def joined(self, which: str, dtype, qs: tuple) -> sp.csr_matrix:
        """Blocks `qs` side by side, one matrix over their X blocks stacked in that order."""
        which = self._which(which)
        qs = tuple(int(q) for q in qs)
        key = (which, np.dtype(dtype).str, qs)
        if key not in self._typed:
            if which in self._rows and qs and qs == tuple(range(qs[0], qs[-1] + 1)):
                lo, hi = int(self.offsets[qs[0]]), int(self.offsets[qs[-1] + 1])
                M = column_range(*self._rows[which], lo, hi, int(self.offsets[-1]))
            else:
                blocks = self._cut(which)
                M = sp.hstack([blocks[q] for q in qs], format="csr")
                M.sort_indices()
            self._typed[key] = as_dtype([M], dtype)[0]
        return self._typed[key]
