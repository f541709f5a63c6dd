"""Edge-list passes of the synthetic generators: R-MAT bit levels, relabelling, and a CSR
built from an edge list without a global sort (count, scatter, then sort and de-duplicate
each row in place).

The CSR builder keeps memory at the edge list plus one index array: no int64 keys, no
float64 temporaries.  Its result is canonical (each row's columns sorted, no duplicates, no
self-loops), so it equals `gcntrain.data.preprocess.coo_to_csr` followed by ``symmetrize``
on the same entries.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(nogil=True, cache=True)
def rmat_level(draws, level, ab, a_norm, c_norm, src, dst):  # pragma: no cover - jitted
    """OR one R-MAT bit level into the edges ``src``, ``dst`` (length m).

    Parameters
    ----------
    draws : float64 array (2 m,)
        Uniform [0, 1) draws: the first m decide the row bits, the next m the column bits.
    level : int
        The bit set by this level.
    ab, a_norm, c_norm : float
        ``a + b``; ``a / (a + b)`` (column threshold in the top half); ``c / (1 - a - b)``
        (column threshold in the bottom half).  A row bit is set when its draw exceeds
        ``ab``, a column bit when its draw exceeds the threshold of the row's half.
    src, dst : integer arrays (m,)
        Edge ends, updated in place.
    """
    m = src.shape[0]
    one = np.int64(1) << level
    for i in range(m):
        row = draws[i] > ab
        thr = c_norm if row else a_norm
        if row:
            src[i] |= one
        if draws[m + i] > thr:
            dst[i] |= one


@njit(nogil=True, cache=True)
def relabel_inplace(ids, perm):  # pragma: no cover - jitted
    """``ids[i] = perm[ids[i]]`` for every i (ids must lie in ``[0, len(perm))``)."""
    for i in range(ids.shape[0]):
        ids[i] = perm[ids[i]]


@njit(nogil=True, cache=True)
def edge_degrees(src, dst, symmetric, counts):  # pragma: no cover - jitted
    """Add each edge's entries to the row counts `counts` (int64, zeroed by the caller).

    An edge (u, v) with u != v counts once in row u, and also once in row v when
    `symmetric`; self-loops (u == v) are skipped.
    """
    for i in range(src.shape[0]):
        u = src[i]
        v = dst[i]
        if u == v:
            continue
        counts[u] += 1
        if symmetric:
            counts[v] += 1


@njit(nogil=True, cache=True)
def edge_scatter(src, dst, symmetric, cursor, indices):  # pragma: no cover - jitted
    """Place each edge's entries in CSR order: column v at ``cursor[u]`` (then advanced),
    and u at ``cursor[v]`` when `symmetric`; self-loops skipped (as in `edge_degrees`).

    ``cursor`` starts as the row starts ``indptr[:-1]`` (a copy, int64); `indices` has the
    length the counts of `edge_degrees` sum to.
    """
    for i in range(src.shape[0]):
        u = src[i]
        v = dst[i]
        if u == v:
            continue
        indices[cursor[u]] = v
        cursor[u] += 1
        if symmetric:
            indices[cursor[v]] = u
            cursor[v] += 1


@njit(nogil=True, cache=True)
def _insertion_sort(a, lo, hi):  # pragma: no cover - jitted
    for i in range(lo + 1, hi):
        x = a[i]
        j = i - 1
        while j >= lo and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


@njit(nogil=True, cache=True)
def sort_dedup_rows(indptr, indices):  # pragma: no cover - jitted
    """Sort every row's columns and drop repeated ones, compacting the rows to the front of
    `indices` and rewriting `indptr` (int64) in place.

    Returns
    -------
    int
        The new number of entries, ``indptr[-1]``; ``indices[:nnz]`` holds the rows.
    """
    n = indptr.shape[0] - 1
    w = 0
    start = indptr[0]
    for r in range(n):
        end = indptr[r + 1]
        if end - start <= 32:
            _insertion_sort(indices, start, end)
        else:
            indices[start:end].sort()
        indptr[r] = w
        prev = -1
        for k in range(start, end):
            c = indices[k]
            if c != prev:
                indices[w] = c
                w += 1
                prev = c
        start = end
    indptr[n] = w
    return w


@njit(nogil=True, cache=True)
def csr_check(indptr, indices, n_cols):  # pragma: no cover - jitted
    """One pass over a CSR matrix: is every row strictly increasing within ``[0, n_cols)``,
    and how many diagonal entries are there.

    Returns
    -------
    (int, int)
        The first row that breaks the rule (-1 when none), and the diagonal entries.
    """
    n = indptr.shape[0] - 1
    diag = 0
    for r in range(n):
        prev = -1
        for k in range(indptr[r], indptr[r + 1]):
            c = indices[k]
            if c <= prev or c >= n_cols:
                return r, diag
            if c == r:
                diag += 1
            prev = c
    return -1, diag


@njit(nogil=True, cache=True)
def _lower_bound(a, lo, hi, x):  # pragma: no cover - jitted
    """The first position k in ``lo..hi`` with ``a[k] >= x`` (`hi` where there is none) of a
    sorted slice ``a[lo:hi]``: a binary search in one CSR row."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(nogil=True, cache=True)
def reciprocal_pairs(indptr, indices):  # pragma: no cover - jitted
    """Number of pairs u < v stored in both directions, (u, v) and (v, u), of a square CSR
    matrix whose rows are sorted without repeats (binary search in row v)."""
    n = indptr.shape[0] - 1
    found = 0
    for u in range(n):
        for k in range(indptr[u], indptr[u + 1]):
            v = indices[k]
            if v <= u:
                continue
            lo = _lower_bound(indices, indptr[v], indptr[v + 1], u)
            if lo < indptr[v + 1] and indices[lo] == u:
                found += 1
    return found
