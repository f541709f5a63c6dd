"""The K1 product's GPU kernel (`gcntrain.kernels.gpu.CsrOnDevice`) on the host engine that
keeps ``cupyx.cusparse.spmm``'s contract: the int32 conversion and its checks, both operand
layouts, the matrix built once and the outputs preallocated.  The CuPy engine itself has
never run (docs/gpu.md); the GPU test at the end skips without a GPU."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from gcntrain.kernels import gpu


def random_csr(n, m, density, seed):
    a = sp.random(n, m, density=density, random_state=seed, format="csr", dtype=np.float64)
    a.sort_indices()
    return a


@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-12), (np.float32, 1e-5)])
@pytest.mark.parametrize("layout", gpu.LAYOUTS)
def test_products_equal_scipy_with_the_matrix_built_once(dtype, tol, layout):
    a = random_csr(40, 30, 0.1, 1)
    engine = gpu.HostEngine()
    S = gpu.CsrOnDevice(
        a.indptr.astype(np.int64), a.indices.astype(np.int64), a.data, 30, dtype, engine, layout
    )
    rng = np.random.default_rng(2)
    seen = {}
    for width in (16, 3, 16, 3, 16):
        for order in ("C", "F"):
            X = np.asarray(rng.standard_normal((30, width)), dtype=dtype, order=order)
            Y = S @ X
            ref = a.astype(dtype) @ X
            np.testing.assert_allclose(Y, ref, rtol=tol, atol=tol)
            assert Y.dtype == dtype and Y.flags.f_contiguous
            assert seen.setdefault(width, Y) is Y  # one output buffer per width
    assert engine.builds == 1 and engine.calls == 10
    assert S.matrix.indices.dtype == np.int32 and S.matrix.indptr.dtype == np.int32


def test_unsorted_and_duplicate_columns_are_made_canonical_once():
    indptr, indices = np.array([0, 3, 4]), np.array([2, 0, 2, 1])
    data = np.array([1.0, 2.0, 3.0, 4.0])
    S = gpu.CsrOnDevice(indptr, indices, data, 3, np.float64, gpu.HostEngine())
    X = np.arange(6.0).reshape(3, 2)
    np.testing.assert_allclose(S @ X, [[2 * 0 + 4 * 4, 2 * 1 + 4 * 5], [4 * 2, 4 * 3]])


def test_c_ordered_x_is_not_copied_under_transb():
    a = random_csr(8, 6, 0.3, 3)
    S = gpu.CsrOnDevice(a.indptr, a.indices, a.data, 6, np.float64, gpu.HostEngine(), "transb")
    X = np.ones((6, 4))
    b, transb = S.operand(X)
    assert transb and np.shares_memory(b, X) and b.flags.f_contiguous
    S2 = gpu.CsrOnDevice(a.indptr, a.indices, a.data, 6, np.float64, gpu.HostEngine(), "copy")
    b2, transb2 = S2.operand(X)
    assert not transb2 and not np.shares_memory(b2, X) and b2.flags.f_contiguous
    assert S2.operand(X)[0] is b2  # the copy's buffer is kept


def test_empty_matrix_and_bad_operands():
    S = gpu.CsrOnDevice(
        np.zeros(4, np.int64), np.zeros(0, np.int64), np.zeros(0), 5, np.float32, gpu.HostEngine()
    )
    Y = S @ np.ones((5, 2), np.float32)
    assert Y.shape == (3, 2) and not Y.any()
    with pytest.raises(ValueError, match="must be 5 x f"):
        S @ np.ones((4, 2), np.float32)
    with pytest.raises(ValueError, match="float32"):
        S @ np.ones((5, 2), np.float64)
    with pytest.raises(ValueError, match="layout"):
        gpu.CsrOnDevice(np.zeros(1), np.zeros(0), np.zeros(0), 1, np.float32, gpu.HostEngine(), "x")


@pytest.mark.parametrize(
    "indptr, indices, n_cols, message",
    [
        ([1, 2], [0, 0], 3, "rise from 0"),
        ([0, 2, 1], [0, 1], 3, "rise from 0"),
        ([0, 1], [3], 3, "outside 0..2"),
        ([0, 1], [-1], 3, "outside"),
        ([0, 1], [0], 2**31, "32-bit"),
    ],
)
def test_csr_int32_refuses_what_cusparse_cannot_take(indptr, indices, n_cols, message):
    data = np.ones(len(indices))
    with pytest.raises(ValueError, match=message):
        gpu.csr_int32(np.array(indptr), np.array(indices), data, n_cols, np.float32)


def test_csr_int32_types():
    ip, ix, dv = gpu.csr_int32(
        np.array([0, 1, 2], np.int64), np.array([1, 0], np.int64), [2, 3], 2, np.float32
    )
    assert (ip.dtype, ix.dtype, dv.dtype) == (np.int32, np.int32, np.float32)
    with pytest.raises(ValueError, match="float32 or float64"):
        gpu.csr_int32(ip, ix, dv, 2, np.int32)
    with pytest.raises(ValueError, match="differ in length"):
        gpu.csr_int32(ip, ix, [1.0], 2, np.float32)


@pytest.mark.skipif(not gpu.available(), reason="no GPU: CuPy with a usable device is needed")
def test_on_a_gpu_the_cusparse_product_equals_scipy():  # pragma: no cover - needs a GPU
    import cupy

    a = random_csr(500, 400, 0.02, 5)
    for dtype, tol in ((np.float64, 1e-10), (np.float32, 1e-4)):
        S = gpu.CsrOnDevice(a.indptr, a.indices, a.data, 400, dtype)
        X = np.random.default_rng(6).standard_normal((400, 64)).astype(dtype)
        Y = cupy.asnumpy(S @ cupy.asarray(X))
        np.testing.assert_allclose(Y, a.astype(dtype) @ X, rtol=tol, atol=tol)
        np.testing.assert_allclose(
            gpu.spmm_csr_dense_gpu(a.indptr, a.indices, a.data, X), a @ X, rtol=tol, atol=tol
        )


def test_a_matrix_summed_on_the_host_engine_leaves_the_callers_arrays_as_they_are():
    """A row that repeats a column is summed (as cuSPARSE requires) in a copy: the caller's
    int32 arrays, which `csr_int32` passes through uncopied, stay as given."""
    from gcntrain.kernels.gpu import CsrOnDevice, HostEngine

    ip = np.array([0, 3, 4], np.int32)
    ix = np.array([1, 1, 0, 2], np.int32)
    dv = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    given = (ip.copy(), ix.copy(), dv.copy())
    M = CsrOnDevice(ip, ix, dv, 3, np.float32, engine=HostEngine())
    assert all(np.array_equal(a, b) for a, b in zip(given, (ip, ix, dv)))
    X = np.arange(6, dtype=np.float32).reshape(3, 2)
    want = np.array([[3 * 2 + 3 * 0, 3 * 3 + 3 * 1], [4 * 4, 4 * 5]], np.float32)
    assert np.array_equal(np.asarray(M @ X), want)
