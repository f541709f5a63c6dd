"""The SpMM family gives the bits of a plain loop: each output element is its row's products
summed in storage order, whatever the width (vector passes of 64 and 16 columns, the memory
accumulator for the rest), the column slabs, the row chunks, or the index and value types."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from gcntrain.kernels.spmm import (
    balanced_row_splits,
    slab_width,
    spmm_csr_dense,
    spmm_csr_dense_add,
    spmm_csr_dense_balanced,
)
from gcntrain.kernels.transpose import csr_transpose, spmm_csr_t_dense_parts

WIDTHS = (1, 3, 7, 16, 17, 31, 64, 100, 130)


def random_csr(n, m, seed, dtype, index_dtype=np.int32):
    """CSR n x m with degrees 0..20 (about a quarter of the rows empty), sorted columns,
    signed values (so that cancellation would show a changed order)."""
    rng = np.random.default_rng(seed)
    deg = rng.integers(0, 21, size=n)
    deg[rng.random(n) < 0.25] = 0
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(deg, out=indptr[1:])
    indices = np.concatenate([np.sort(rng.choice(m, size=d)) for d in deg]).astype(index_dtype)
    data = rng.standard_normal(indptr[-1]).astype(dtype)
    return indptr.astype(index_dtype), indices, data


def loop_reference(indptr, indices, data, X, base=None):
    """``A @ X`` (``base + A @ X`` with rows without entries untouched) by a plain loop:
    per row, ``acc = acc + data[k] * X[indices[k]]`` in storage order, in X's dtype."""
    n = indptr.shape[0] - 1
    out = np.zeros((n, X.shape[1]), X.dtype) if base is None else base.copy()
    for i in range(n):
        if base is not None and indptr[i] == indptr[i + 1]:
            continue
        acc = out[i].copy() if base is not None else np.zeros(X.shape[1], X.dtype)
        for k in range(indptr[i], indptr[i + 1]):
            acc = acc + data[k] * X[indices[k]]
        out[i] = acc
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_spmm_family_bit_identical_to_loop(dtype, index_dtype):
    n, m = 150, 120
    indptr, indices, data = random_csr(n, m, 1, dtype, index_dtype)
    rng = np.random.default_rng(2)
    for f in WIDTHS:
        X = rng.standard_normal((m, f)).astype(dtype)
        ref = loop_reference(indptr, indices, data, X)
        out = np.full((n, f), np.nan, dtype)
        spmm_csr_dense(indptr, indices, data, X, out)
        assert np.array_equal(out, ref), f
        base = rng.standard_normal((n, f)).astype(dtype)
        ref_add = loop_reference(indptr, indices, data, X, base)
        got = base.copy()
        spmm_csr_dense_add(indptr, indices, data, X, got)
        assert np.array_equal(got, ref_add), f
        for parts in (1, 5):
            splits = balanced_row_splits(indptr, parts)
            for slab in (16, 32, 48, 5):  # forced slabs: any width gives the same bits
                out[:] = np.nan
                spmm_csr_dense_balanced(indptr, indices, data, X, out, splits, False, slab)
                assert np.array_equal(out, ref), (f, parts, slab)
                got = base.copy()
                spmm_csr_dense_balanced(indptr, indices, data, X, got, splits, True, slab)
                assert np.array_equal(got, ref_add), (f, parts, slab)


def test_spmm_row_window_and_zero_width():
    """A window of the row pointer (indptr[0] != 0), as the plexus blocks pass, and f = 0."""
    indptr, indices, data = random_csr(200, 90, 3, np.float32)
    X = np.random.default_rng(4).standard_normal((90, 64)).astype(np.float32)
    block = indptr[40:121]
    out = np.full((80, 64), np.nan, np.float32)
    spmm_csr_dense(block, indices, data, X, out)
    assert np.array_equal(out, loop_reference(indptr, indices, data, X)[40:120])
    empty = np.empty((200, 0), np.float32)
    spmm_csr_dense(indptr, indices, data, np.empty((90, 0), np.float32), empty)


def test_scatter_transpose_serial_bit_identical():
    """One chunk: the scatter adds each output row's products in row order, the order of
    the explicit transpose's rows."""
    indptr, indices, data = random_csr(120, 100, 5, np.float64)
    ip_t, ix_t, d_t = csr_transpose(indptr, indices, data, 100)
    for f in (1, 16, 17, 64):
        Y = np.random.default_rng(f).standard_normal((120, f))
        out = np.full((100, f), np.nan)
        spmm_csr_t_dense_parts(indptr, indices, data, Y, out, 1)
        assert np.array_equal(out, loop_reference(ip_t, ix_t, d_t, Y))


def test_threads_do_not_change_bits():
    indptr, indices, data = random_csr(3000, 2000, 6, np.float32)
    X = np.random.default_rng(7).standard_normal((2000, 64)).astype(np.float32)
    before = numba.get_num_threads()
    outs = []
    try:
        for t in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(t)
            out = np.empty((3000, 64), np.float32)
            outs.append(spmm_csr_dense(indptr, indices, data, X, out))
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(outs[0], outs[1])


def test_slab_width_rule():
    """One slab while X fits half the last-level cache or a slab would span fewer than
    SLAB_MIN_LINES lines per row; otherwise multiples of LANES columns covering f."""
    from gcntrain.kernels.prefetch import LLC_BYTES
    from gcntrain.kernels.simd import LANES
    from gcntrain.kernels.spmm import SLAB_CACHE_SHARE

    budget = LLC_BYTES // SLAB_CACHE_SHARE
    assert slab_width(1000, 64, 4) == 64  # small X: one slab
    assert slab_width(10, 0, 4) == 1  # zero width: a valid step
    m = budget // (64 * 4)  # a 64-column float32 slab of m rows fills the budget
    w = slab_width(m, 1024, 4)
    assert w % LANES == 0 and 64 <= w < 1024 and m * w * 4 <= budget * 1.5
    assert slab_width(budget // 16, 64, 4) == 64  # one line per row would fit: no slabs
