"""Kernels over a CSR matrix's pattern for the simulator's plans: the symmetry test of the
support matrix without forming its transpose, and a symmetric renumbering of the pattern
without copies of the values.  Callers preallocate."""

from __future__ import annotations

import numpy as np
from numba import njit

from gcntrain.kernels.edges import _insertion_sort

#: rows up to this long are sorted by insertion (a library sort's call costs more)
SHORT_ROW = 48


@njit(nogil=True, cache=True)
def symmetry_deviation(indptr, indices, data):  # pragma: no cover - jitted
    """(max |S_ij - S_ji| over all (i, j), max |S_ij|, canonical) of a square CSR matrix.

    An entry absent from S counts as 0, as in ``abs(S - S.T).max()``.  `canonical` is False
    (and the two maxima meaningless) where a row's column ids are not strictly increasing:
    the walk that finds S_ji needs sorted rows without duplicates.
    """
    n = indptr.shape[0] - 1
    dev = 0.0
    big = 0.0
    for i in range(n):
        a, b = indptr[i], indptr[i + 1]
        for k in range(a, b):
            if k > a and indices[k] <= indices[k - 1]:
                return 0.0, 0.0, False
    # rows in increasing order: the queries into row j come with increasing i, so one
    # cursor per row, moving forward only, finds S_ji (O(nnz) in all, no search)
    cur = indptr[:-1].copy()
    for i in range(n):
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            v = data[k]
            big = max(big, abs(v))
            c = cur[j]
            end = indptr[j + 1]
            while c < end and indices[c] < i:
                c += 1
            cur[j] = c
            if c < end and indices[c] == i:
                d = abs(v - data[c])
            else:
                d = abs(v)
            dev = max(dev, d)
    return dev, big, True


@njit(nogil=True, cache=True)
def permute_pattern(indptr, indices, perm, inv, out_indptr, out_indices):  # pragma: no cover
    """Pattern of ``S[perm][:, perm]``: new row r is old row ``perm[r]``, column c becomes
    ``inv[c]``, each row sorted.  `out_indptr` holds the new row pointers (the old rows'
    lengths in new order, summed); fills `out_indices` and returns it."""
    for r in range(perm.shape[0]):
        o = perm[r]
        a = indptr[o]
        s = out_indptr[r]
        m = indptr[o + 1] - a
        for k in range(m):
            out_indices[s + k] = inv[indices[a + k]]
        if m > SHORT_ROW:
            out_indices[s : s + m].sort()
            continue
        _insertion_sort(out_indices, s, s + m)  # most rows are short
    return out_indices


def permuted_indptr(indptr: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """Row pointers of ``S[perm]`` (int64)."""
    lengths = np.diff(np.asarray(indptr, dtype=np.int64))[perm]
    out = np.zeros(perm.shape[0] + 1, dtype=np.int64)
    np.cumsum(lengths, out=out[1:])
    return out
