"""Row pointers of coordinate (COO) entries: the CSR ``indptr`` of entries already in row
order, in one pass (no counting array, no sort).  2D's SUMMA stages receive their sparse
pieces as (row, column, value) triples in CSR order and multiply them straight away."""

from __future__ import annotations

from numba import njit


@njit(nogil=True, cache=True)
def indptr_from_sorted_rows(rows, indptr):  # pragma: no cover - jitted
    """Fill ``indptr`` (length m + 1) so that entries ``indptr[i]:indptr[i + 1]`` are those of
    row i, given the entries' row ids `rows` in non-decreasing order, each in ``[0, m)``.

    Returns the number of entries consumed: ``rows.shape[0]`` when `rows` is valid, else the
    position of the first row id that is out of range or smaller than its predecessor (the
    caller raises; ``indptr`` is then not meaningful).
    """
    m = indptr.shape[0] - 1
    nnz = rows.shape[0]
    i = 0
    prev = 0
    for k in range(nnz):
        r = rows[k]
        if r < prev or r >= m:
            return k
        while i <= r:
            indptr[i] = k
            i += 1
        prev = r
    while i <= m:
        indptr[i] = nnz
        i += 1
    return nnz
