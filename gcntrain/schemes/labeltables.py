"""Tables of a sparse matrix's stored entries counted by a label of their row and a label
of their column.

The plans of the block schemes count, for every stored entry of S, the block of the grid it
falls in: the 2D stage tables (row part x SUMMA stage), Plexus' shard tables (row chunk x
column chunk, each in its own numbering).  The block of an entry is a function of its row
alone and of its column alone, so each side is looked up once per node (an (n,) label
array, built once per numbering and axis) and an entry costs one gather and one count: no
search per entry.  The rows are walked in ranges of about
`gcntrain.schemes.entries.BLOCK_ENTRIES` entries (as
`gcntrain.schemes.entries.entry_chunks` does), so the memory held at once stays bounded.
"""

from __future__ import annotations

import numpy as np

from gcntrain.schemes.entries import block_ranges


def label_counts(
    M, row_labels: np.ndarray, col_labels: np.ndarray, shape: tuple[int, int], limit=None
) -> np.ndarray:
    """(shape) int64: entry [a, b] counts the stored entries (row, col) of the CSR matrix `M`
    with ``row_labels[row] == a`` and ``col_labels[col] == b``.

    Parameters
    ----------
    M : CSR matrix (sorted or not: only its pattern is read).
    row_labels : (rows of M,) integer labels in [0, shape[0]).
    col_labels : (columns of M,) integer labels in [0, shape[1]).
    shape : (row labels, column labels) of the table.
    limit : stored entries per range of rows (default
        `gcntrain.schemes.entries.BLOCK_ENTRIES`).

    Returns
    -------
    numpy.ndarray
        The (shape[0], shape[1]) table of counts.
    """
    nr, nc = int(shape[0]), int(shape[1])
    rows = np.asarray(row_labels, dtype=np.intp) * nc
    cols = np.asarray(col_labels, dtype=np.intp)
    indptr = np.asarray(M.indptr)
    tab = np.zeros(nr * nc, dtype=np.int64)
    bounds = np.arange(M.shape[0] + 1, dtype=np.int64)
    for r0, r1 in block_ranges(indptr, bounds, limit):
        a, b = int(indptr[r0]), int(indptr[r1])
        if b == a:
            continue
        code = np.repeat(rows[r0:r1], np.diff(indptr[r0 : r1 + 1]))
        code += cols[M.indices[a:b]]
        tab += np.bincount(code, minlength=nr * nc)
    return tab.reshape(nr, nc)
