"""CSR passes of loading and normalisation: gather and relabel rows, sort within rows, count
the diagonal, row sums, the normalised support of a row block, a COO block to CSR.

Every kernel is one (or two: count, then fill) pass over the arrays, with no float64
temporaries of the size of the entries: the callers preallocate the outputs.  An optional
array (edge values, the identity's rows) is passed as an empty array when absent.

The arithmetic is that of the numpy/scipy code these passes replaced, element by element:
edge values are promoted to float64, degrees are summed in entry order starting from 0.0, a
gcn support value is ``(v * dinv[row]) * dinv[col]``, a sage one ``v * dinv[row]``, and
duplicate columns are summed left to right in the (stable) sorted order, the identity's
entry after a row's own diagonal entries.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from gcntrain.kernels.prefetch import prefetch_read

#: entries ahead whose column scale `csr_support_fill` prefetches
FILL_AHEAD = 16
#: rows up to this length are sorted by insertion (stable); longer ones by a merge sort
_SHORT_ROW = 32


@njit(nogil=True, cache=True)
def csr_diagonal_count(indptr, indices, row0):  # pragma: no cover - jitted
    """Entries ``(i, j)`` with ``j == row0 + i`` (self-loops of rows starting at `row0`).

    Parameters
    ----------
    indptr, indices : numpy.ndarray
        CSR structure (any integer dtypes).
    row0 : int
        Global id of the first row.

    Returns
    -------
    int
    """
    m = indptr.shape[0] - 1
    count = 0
    for i in range(m):
        g = row0 + i
        for k in range(indptr[i], indptr[i + 1]):
            if indices[k] == g:
                count += 1
    return count


#: `csr_row_order` codes
UNSORTED, SORTED, STRICT = 0, 1, 2


@njit(nogil=True, cache=True)
def csr_row_order(indptr, indices):  # pragma: no cover - jitted
    """How the column ids of the rows are ordered.

    Returns
    -------
    int
        ``UNSORTED`` (0): some row decreases; ``SORTED`` (1): every row is non-decreasing
        and some row repeats a column; ``STRICT`` (2): every row strictly increases.
    """
    m = indptr.shape[0] - 1
    code = 2
    for i in range(m):
        for k in range(indptr[i] + 1, indptr[i + 1]):
            if indices[k] < indices[k - 1]:
                return 0
            if indices[k] == indices[k - 1]:
                code = 1
    return code


@njit(nogil=True, cache=True)
def _insertion_sort(indices, data, lo, hi, has_data):  # pragma: no cover - jitted
    """Stable insertion sort of ``indices[lo:hi]`` (and `data` alike when `has_data`)."""
    for k in range(lo + 1, hi):
        c = indices[k]
        j = k - 1
        while j >= lo and indices[j] > c:
            j -= 1
        if j == k - 1:
            continue
        if has_data:
            v = data[k]
            for t in range(k, j + 1, -1):
                data[t] = data[t - 1]
            data[j + 1] = v
        for t in range(k, j + 1, -1):
            indices[t] = indices[t - 1]
        indices[j + 1] = c


@njit(nogil=True, cache=True)
def csr_sort_rows(indptr, indices, data):  # pragma: no cover - jitted
    """Sort the column ids of every row in place, stably (duplicates keep their order);
    `data` (empty when absent) is permuted alike.  Rows already sorted are left untouched.

    Returns
    -------
    int
        The number of rows that needed sorting.
    """
    m = indptr.shape[0] - 1
    has_data = data.shape[0] > 0
    changed = 0
    for i in range(m):
        lo, hi = indptr[i], indptr[i + 1]
        ok = True
        for k in range(lo + 1, hi):
            if indices[k] < indices[k - 1]:
                ok = False
                break
        if ok:
            continue
        changed += 1
        if hi - lo <= _SHORT_ROW:
            _insertion_sort(indices, data, lo, hi, has_data)
        else:
            seg = indices[lo:hi].copy()
            order = np.argsort(seg, kind="mergesort")
            for t in range(hi - lo):
                indices[lo + t] = seg[order[t]]
            if has_data:
                vals = data[lo:hi].copy()
                for t in range(hi - lo):
                    data[lo + t] = vals[order[t]]
    return changed


@njit(nogil=True, cache=True)
def csr_gather_rows(
    indptr, indices, data, rows, colmap, out_indptr, out_indices, out_data
):  # pragma: no cover - jitted
    """Rows `rows` of a CSR matrix, their column ids relabelled by `colmap`.

    Parameters
    ----------
    indptr, indices, data : numpy.ndarray
        The source CSR (`data` empty when absent).
    rows : int64 array (m,)
        Source rows to take, in output order.
    colmap : int64 array
        New id of every source column (empty: ids kept).
    out_indptr : int64 array (m + 1,)
        Filled here: the output row pointers.
    out_indices, out_data : numpy.ndarray
        Preallocated with ``sum(row lengths)`` entries (`out_data` empty when absent); values
        are cast to its dtype.
    """
    m = rows.shape[0]
    relabel = colmap.shape[0] > 0
    has_data = out_data.shape[0] > 0
    pos = 0
    out_indptr[0] = 0
    for t in range(m):
        r = rows[t]
        for k in range(indptr[r], indptr[r + 1]):
            c = indices[k]
            out_indices[pos] = colmap[c] if relabel else c
            if has_data:
                out_data[pos] = data[k]
            pos += 1
        out_indptr[t + 1] = pos


@njit(nogil=True, cache=True)
def csr_row_sums(indptr, indices, data, rows, skip_diagonal, out):  # pragma: no cover - jitted
    """``out[i]`` = the sum of row i's values in float64, in entry order from 0.0 (ones when
    `data` is empty); with `skip_diagonal`, entries with column ``rows[i]`` are left out."""
    m = indptr.shape[0] - 1
    has_data = data.shape[0] > 0
    for i in range(m):
        g = rows[i] if skip_diagonal else -1
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            if skip_diagonal and indices[k] == g:
                continue
            s += np.float64(data[k]) if has_data else 1.0
        out[i] = s


@njit(nogil=True, cache=True)
def csr_support_counts(
    indptr, indices, rows, drop_diagonal, identity, out_indptr
):  # pragma: no cover - jitted
    """Row pointers of the support rows `csr_support_fill` writes: distinct columns of each
    (column-sorted) row, less the diagonal with `drop_diagonal`, plus the identity's column
    where ``identity[i]``.

    Returns
    -------
    int
        The number of entries.
    """
    m = indptr.shape[0] - 1
    out_indptr[0] = 0
    for i in range(m):
        g = rows[i]
        pending = identity[i]
        last = -1
        cnt = 0
        for k in range(indptr[i], indptr[i + 1]):
            c = indices[k]
            if drop_diagonal and c == g:
                continue
            if pending and c > g:
                if last != g:
                    cnt += 1
                last = g
                pending = False
            if c != last:
                cnt += 1
            last = c
        if pending and last != g:
            cnt += 1
        out_indptr[i + 1] = out_indptr[i] + cnt
    return out_indptr[m]


@njit(nogil=True, cache=True, parallel=True)
def csr_support_fill(
    indptr,
    indices,
    data,
    rows,
    drop_diagonal,
    identity,
    left,
    right,
    scale_cols,
    out_indptr,
    out_indices,
    out_data,
):  # pragma: no cover - jitted
    """Fill the support rows counted by `csr_support_counts`.

    Entry (i, c) with value v (float64; 1.0 without `data`) becomes
    ``(v * left[rows[i]]) * right[c]`` with `scale_cols`, else ``v * left[rows[i]]``; the
    identity's entry has v = 1.0 and comes after the row's own diagonal entries; equal
    columns are summed left to right in float64 and each sum is stored once, cast to
    `out_data`'s dtype (float32 output holds the float64 result rounded once, as a cast
    of the float64 matrix would).  Rows must be sorted by column (`csr_rows_sorted`).
    Rows are filled in parallel (each its own slice of the outputs: the same result on any
    number of threads).
    """
    m = indptr.shape[0] - 1
    has_data = data.shape[0] > 0
    scales = right.reshape((right.shape[0], 1))  # for the prefetch intrinsic (2-D)
    kend = indptr[m]
    for i in prange(m):  # rows apart: each writes its own slice, the same values
        g = rows[i]
        a = left[g]
        pending = identity[i]
        pos = out_indptr[i]
        col = -1  # the entry being summed (none while col < 0)
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            # the column scales are read in random order: fetch the one needed
            # `FILL_AHEAD` entries on (a hint, never a fault; 4x fewer stalls on R-MAT 21)
            if scale_cols and k + FILL_AHEAD < kend:
                prefetch_read(scales, indices[k + FILL_AHEAD], 0)
            c = indices[k]
            if drop_diagonal and c == g:
                continue
            if pending and c > g:
                w = _scaled(1.0, a, right, g, scale_cols)
                pos, col, acc = _emit(out_indices, out_data, pos, col, acc, g, w)
                pending = False
            v = np.float64(data[k]) if has_data else 1.0
            w = _scaled(v, a, right, c, scale_cols)
            pos, col, acc = _emit(out_indices, out_data, pos, col, acc, c, w)
        if pending:
            w = _scaled(1.0, a, right, g, scale_cols)
            pos, col, acc = _emit(out_indices, out_data, pos, col, acc, g, w)
        if col >= 0:
            out_indices[pos] = col
            out_data[pos] = acc


@njit(nogil=True, cache=True)
def _scaled(v, a, right, c, scale_cols):  # pragma: no cover - jitted
    """``(v * a) * right[c]`` with `scale_cols`, else ``v * a`` (in that order)."""
    w = v * a
    if scale_cols:
        w = w * right[c]
    return w


@njit(nogil=True, cache=True)
def _emit(out_indices, out_data, pos, col, acc, c, w):  # pragma: no cover - jitted
    """Add entry (c, w) to the sum `acc` of column `col` when c is that column; else store
    that sum at `pos` (none while col < 0) and start column c.  Returns (pos, col, acc)."""
    if col == c:
        return pos, col, acc + w
    if col >= 0:
        out_indices[pos] = col
        out_data[pos] = acc
        pos += 1
    return pos, c, w


@njit(nogil=True, cache=True)
def coo_rows_to_csr(
    rows, cols, vals, m, out_indptr, out_indices, out_data
):  # pragma: no cover - jitted
    """COO entries of an m-row block to CSR by a stable counting sort on the row; entries of
    a row keep their order (sort them with `csr_sort_rows`).  Preallocated outputs:
    `out_indptr` (m + 1,), `out_indices` and `out_data` as long as `rows`."""
    nnz = rows.shape[0]
    for i in range(m + 1):
        out_indptr[i] = 0
    for k in range(nnz):
        out_indptr[rows[k] + 1] += 1
    for i in range(m):
        out_indptr[i + 1] += out_indptr[i]
    nxt = out_indptr[:-1].copy()
    for k in range(nnz):
        r = rows[k]
        p = nxt[r]
        out_indices[p] = cols[k]
        out_data[p] = vals[k]
        nxt[r] = p + 1


@njit(nogil=True, cache=True)
def csr_sum_duplicates(indptr, indices, data, out_indptr):  # pragma: no cover - jitted
    """Sum consecutive equal columns of each (sorted) row in place, left to right, and
    compact the arrays; `out_indptr` (m + 1,) receives the new row pointers.

    Returns
    -------
    int
        The number of entries kept (the first ones of `indices` and `data`).
    """
    m = indptr.shape[0] - 1
    pos = 0
    out_indptr[0] = 0
    for i in range(m):
        start = pos
        for k in range(indptr[i], indptr[i + 1]):
            c = indices[k]
            if pos > start and indices[pos - 1] == c:
                data[pos - 1] += data[k]
            else:
                indices[pos] = c
                data[pos] = data[k]
                pos += 1
        out_indptr[i + 1] = pos
    return pos


@njit(nogil=True, cache=True)
def csr_pairs_by_owner(
    indptr, indices, data, offsets, row0, out_pairs, out_vals, out_counts
):  # pragma: no cover - jitted
    """The entries of a row block as transposed pairs ``(column, row0 + i)`` grouped by the
    block owning the column (`offsets`: the blocks' first rows, ascending, and the total),
    entries of a block in their CSR order (a stable counting sort on the owner).

    Preallocated outputs: `out_pairs` int64 (nnz, 2), `out_vals` (nnz,) and `out_counts`
    int64 (blocks,): entries per owner.
    """
    m = indptr.shape[0] - 1
    nblocks = offsets.shape[0] - 1
    for b in range(nblocks):
        out_counts[b] = 0
    base = indptr[0]
    nnz = indptr[m] - base
    owner = np.empty(nnz, dtype=np.int32)
    for k in range(nnz):
        c = indices[base + k]
        b = np.searchsorted(offsets, c, side="right") - 1
        owner[k] = b
        out_counts[b] += 1
    nxt = np.empty(nblocks, dtype=np.int64)
    acc = 0
    for b in range(nblocks):
        nxt[b] = acc
        acc += out_counts[b]
    for i in range(m):
        for k in range(indptr[i], indptr[i + 1]):
            b = owner[k - base]
            p = nxt[b]
            out_pairs[p, 0] = indices[k]
            out_pairs[p, 1] = row0 + i
            out_vals[p] = data[k]
            nxt[b] = p + 1


@njit(nogil=True, cache=True)
def csr_values_close(a, b, rtol):  # pragma: no cover - jitted
    """``np.allclose(a, b, rtol=rtol, atol=0)`` for two value arrays of one length, in one
    pass without temporaries: every ``a[k] == b[k]`` or ``|a[k] - b[k]| <= rtol * |b[k]|``
    (a NaN is close to nothing), stopping at the first pair that is not."""
    for k in range(a.shape[0]):
        x = a[k]
        y = b[k]
        if x == y:
            continue
        if not abs(x - y) <= rtol * abs(y):
            return False
    return True
