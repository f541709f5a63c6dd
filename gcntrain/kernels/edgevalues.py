"""Edge lists with values into CSR: count, scatter, then sort and merge every row in place.

The passes of `gcntrain.kernels.edges` (which build a pattern) carrying a float32 value per
entry.  `merge_rows` sorts each row stably by column and merges repeated columns in the
order the entries were scattered: by sum with numpy's arithmetic (``np.add.reduceat``: the
first value plus numpy's pairwise sum of the others, in float32), so that a sum equals the
one of a stable sort of the whole list followed by ``reduceat``; or by maximum, which does
not depend on the order (a NaN if any, and +0.0 above -0.0, where numpy's ``maximum`` keeps
the first of two zeros).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from gcntrain.kernels.edges import _lower_bound


@njit(nogil=True, cache=True)
def value_degrees(src, dst, forward, backward, skip_loops, counts):  # pragma: no cover - jitted
    """Add the entries of edges (u, v) to the row counts `counts` (int64, zeroed).

    An edge counts in row u when `forward`, and in row v when `backward` and u != v; a
    self-loop counts once (when `forward`), or never with `skip_loops`.
    """
    for i in range(src.shape[0]):
        u = src[i]
        v = dst[i]
        if u == v:
            if forward and not skip_loops:
                counts[u] += 1
            continue
        if forward:
            counts[u] += 1
        if backward:
            counts[v] += 1


@njit(nogil=True, cache=True)
def value_scatter(
    src, dst, vals, forward, backward, negate, skip_loops, cursor, indices, data
):  # pragma: no cover - jitted
    """Place the entries that `value_degrees` counted: (v, w) at ``cursor[u]`` and, for
    `backward`, (u, w) at ``cursor[v]`` (``-w`` with `negate`); each cursor then advances.

    ``cursor`` starts as a copy of the row starts ``indptr[:-1]``.
    """
    for i in range(src.shape[0]):
        u = src[i]
        v = dst[i]
        w = vals[i]
        if u == v:
            if forward and not skip_loops:
                indices[cursor[u]] = v
                data[cursor[u]] = w
                cursor[u] += 1
            continue
        if forward:
            indices[cursor[u]] = v
            data[cursor[u]] = w
            cursor[u] += 1
        if backward:
            indices[cursor[v]] = u
            data[cursor[v]] = -w if negate else w
            cursor[v] += 1


@njit(nogil=True, cache=True)
def pairwise_sum(a, lo, n):  # pragma: no cover - jitted
    """Sum of ``a[lo:lo + n]`` (float32) as numpy's pairwise summation computes it: up to 7
    values one by one from -0.0, up to 128 in eight interleaved partial sums, more by
    halving (at a multiple of 8)."""
    if n < 8:
        res = np.float32(-0.0)
        for i in range(n):
            res += a[lo + i]
        return res
    if n <= 128:
        r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
        r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
        i = 8
        whole = n - n % 8
        while i < whole:
            r0 += a[lo + i]
            r1 += a[lo + i + 1]
            r2 += a[lo + i + 2]
            r3 += a[lo + i + 3]
            r4 += a[lo + i + 4]
            r5 += a[lo + i + 5]
            r6 += a[lo + i + 6]
            r7 += a[lo + i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += a[lo + i]
            i += 1
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return pairwise_sum(a, lo, n2) + pairwise_sum(a, lo + n2, n - n2)


@njit(nogil=True, cache=True)
def _larger(v, x):  # pragma: no cover - jitted
    """The larger of two values, whatever their order: a NaN if either is one, +0.0 above
    -0.0 (numpy's ``maximum`` gives the first of two zeros)."""
    if v != v:
        return v
    if x != x or x > v or (x == v and math.copysign(1.0, v) < 0.0):
        return x
    return v


@njit(nogil=True, cache=True)
def _stable_sort_row(indices, data, lo, hi):  # pragma: no cover - jitted
    """Sort ``indices[lo:hi]`` stably, moving ``data`` along."""
    if hi - lo <= 32:
        for i in range(lo + 1, hi):
            c = indices[i]
            x = data[i]
            j = i - 1
            while j >= lo and indices[j] > c:
                indices[j + 1] = indices[j]
                data[j + 1] = data[j]
                j -= 1
            indices[j + 1] = c
            data[j + 1] = x
        return
    order = np.argsort(indices[lo:hi], kind="mergesort")
    cols = indices[lo:hi][order]
    vals = data[lo:hi][order]
    indices[lo:hi] = cols
    data[lo:hi] = vals


@njit(nogil=True, cache=True)
def merge_rows(indptr, indices, data, use_sum, add_loops):  # pragma: no cover - jitted
    """Sort every row stably by column, merge repeated columns (sum or maximum, see the
    module docstring), compact the rows to the front and rewrite `indptr` in place.

    With `add_loops`, the last slot of every row is reserved (not scattered): a row without
    a diagonal entry gets one of value 1.0 there, in its sorted place.

    Returns
    -------
    int
        The new number of entries, ``indptr[-1]``.
    """
    n = indptr.shape[0] - 1
    w = 0
    start = indptr[0]
    for r in range(n):
        end = indptr[r + 1]
        stop = end - 1 if add_loops else end
        _stable_sort_row(indices, data, start, stop)
        indptr[r] = w
        first = w
        diagonal = False
        k = start
        while k < stop:
            c = indices[k]
            j = k + 1
            while j < stop and indices[j] == c:
                j += 1
            v = data[k]
            if j - k > 1:
                if use_sum:
                    v = v + pairwise_sum(data, k + 1, j - k - 1)
                else:
                    for t in range(k + 1, j):
                        v = _larger(v, data[t])
            indices[w] = c
            data[w] = v
            w += 1
            diagonal = diagonal or c == r
            k = j
        if add_loops and not diagonal:
            p = w
            while p > first and indices[p - 1] > r:
                indices[p] = indices[p - 1]
                data[p] = data[p - 1]
                p -= 1
            indices[p] = r
            data[p] = np.float32(1.0)
            w += 1
        start = end
    indptr[n] = w
    return w


@njit(nogil=True, cache=True)
def values_symmetric(indptr, indices, data):  # pragma: no cover - jitted
    """Whether a square CSR matrix (rows sorted without repeats) equals its transpose,
    values compared with ``==`` (a NaN never equals)."""
    n = indptr.shape[0] - 1
    for u in range(n):
        for k in range(indptr[u], indptr[u + 1]):
            v = indices[k]
            lo = _lower_bound(indices, indptr[v], indptr[v + 1], u)
            if lo >= indptr[v + 1] or indices[lo] != u or not (data[lo] == data[k]):
                return False
    return True
