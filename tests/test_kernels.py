"""Numba kernels against scipy / numpy references computed independently."""

from __future__ import annotations

import sys
import types

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import log_softmax

from gcntrain.errors import InputError
from gcntrain.kernels import gpu
from gcntrain.kernels.coo import indptr_from_sorted_rows
from gcntrain.kernels.elementwise import relu_backward, relu_inplace, row_normalize_inplace
from gcntrain.kernels.softmax import softmax_xent_grad, softmax_xent_rows
from gcntrain.kernels.spmm import (
    balanced_row_splits,
    spmm,
    spmm_csr_dense,
    spmm_csr_dense_add,
    spmm_csr_dense_balanced,
)
from gcntrain.kernels.threads import advised_threads, get_threads, max_threads, set_threads
from gcntrain.kernels.transpose import csr_transpose, spmm_csr_t_dense, spmm_csr_t_dense_parts
from gcntrain.model.optim import adam_step_size, adam_update

HEAVY = 10_000  # nonzeros in the one heavy row


@pytest.fixture(autouse=True)
def _restore_threads():
    before = numba.get_num_threads()
    yield
    numba.set_num_threads(before)


def random_csr(n, m, seed, heavy_row=None, dtype=np.float64, index_dtype=np.int32):
    """CSR n x m: degrees 0..12 (about a fifth of rows empty), distinct sorted columns per row,
    positive values; optionally one row with HEAVY nonzeros."""
    rng = np.random.default_rng(seed)
    deg = rng.integers(0, 13, size=n)
    deg[rng.random(n) < 0.2] = 0
    if heavy_row is not None:
        deg[heavy_row] = HEAVY
    cols = [np.sort(rng.choice(m, size=d, replace=False)) for d in deg]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(deg, out=indptr[1:])
    indices = np.concatenate(cols).astype(index_dtype)
    data = rng.uniform(0.1, 1.0, size=indptr[-1]).astype(dtype)
    return indptr.astype(index_dtype), indices, data


CASES = [  # (rows, cols, heavy row): non-square with a heavy row, square, more rows than cols
    (1500, 12_000, 700),
    (2000, 2000, None),
    (3000, 500, None),
]
# (value dtype, indptr dtype, indices dtype): each dtype and index width at least twice, and
# the Graph layout (int64 indptr, int32 indices); few combinations keep JIT compilation short
TYPES = [
    (np.float32, np.int32, np.int32),
    (np.float64, np.int64, np.int64),
    (np.float32, np.int64, np.int64),
    (np.float64, np.int64, np.int32),
]


def _case_arrays(case, dtype, indptr_dtype, index_dtype):
    n, m, heavy = case
    indptr, indices, data = random_csr(
        n, m, seed=n + m, heavy_row=heavy, dtype=dtype, index_dtype=index_dtype
    )
    indptr = indptr.astype(indptr_dtype)
    return indptr, indices, data, sp.csr_matrix((data, indices, indptr), shape=(n, m))


@pytest.mark.parametrize("types_", TYPES, ids=lambda t: "-".join(np.dtype(x).name for x in t))
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}")
def test_spmm_and_explicit_transpose_match_scipy(types_, case):
    n, m, _ = case
    indptr, indices, data, A = _case_arrays(case, *types_)
    dtype = types_[0]
    At = A.T.tocsr()
    At.sort_indices()
    ip_t, ix_t, d_t = csr_transpose(indptr, indices, data, m)
    np.testing.assert_array_equal(ip_t, At.indptr)
    np.testing.assert_array_equal(ix_t, At.indices)
    np.testing.assert_array_equal(d_t, At.data)
    assert ix_t.dtype == indices.dtype and d_t.dtype == data.dtype
    rng = np.random.default_rng(1)
    for f in (1, 3, 16, 64):
        X = rng.uniform(0.0, 1.0, size=(m, f)).astype(dtype)
        ref = A @ X
        out = np.full((n, f), np.nan, dtype=dtype)  # garbage must be overwritten
        spmm_csr_dense(indptr, indices, data, X, out)
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=0)
        for parts in (1, 7, n + 5):
            out[:] = np.nan
            # add and slab given as the wrappers pass them (one compiled kernel per types)
            splits = balanced_row_splits(indptr, parts)
            spmm_csr_dense_balanced(indptr, indices, data, X, out, splits, False, 0)
            np.testing.assert_allclose(out, ref, rtol=1e-5, atol=0)
        # in place: out += A @ X; rows without entries keep their values bit for bit
        base = rng.uniform(-1.0, 1.0, size=(n, f)).astype(dtype)
        out = base.copy()
        spmm_csr_dense_add(indptr, indices, data, X, out)
        np.testing.assert_allclose(out, base + ref, rtol=1e-5, atol=1e-6)
        empty = np.diff(indptr) == 0
        assert empty.any() and np.array_equal(out[empty], base[empty])
        Y = rng.uniform(0.0, 1.0, size=(n, f)).astype(dtype)
        out_t = np.full((m, f), np.nan, dtype=dtype)
        spmm_csr_dense(ip_t, ix_t, d_t, Y, out_t)  # the model's way: explicit transpose
        np.testing.assert_allclose(out_t, A.T @ Y, rtol=1e-5, atol=0)


@pytest.mark.parametrize("types_", TYPES[:2], ids=lambda t: "-".join(np.dtype(x).name for x in t))
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}")
def test_scatter_transpose_matches_scipy(types_, case):
    n, m, _ = case
    indptr, indices, data, A = _case_arrays(case, *types_)
    rng = np.random.default_rng(2)
    for f in (1, 3, 16, 64):
        Y = rng.uniform(0.0, 1.0, size=(n, f)).astype(types_[0])
        ref_t = A.T @ Y
        out_t = np.full((m, f), np.nan, dtype=types_[0])
        for threads in (1, 2):  # serial scatter, and private buffers + reduction
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            out_t[:] = np.nan
            spmm_csr_t_dense(indptr, indices, data, Y, out_t)
            np.testing.assert_allclose(out_t, ref_t, rtol=1e-5, atol=0)
        out_t[:] = np.nan  # more chunks than threads: still one buffer per extra chunk
        spmm_csr_t_dense_parts(indptr, indices, data, Y, out_t, 5)
        np.testing.assert_allclose(out_t, ref_t, rtol=1e-5, atol=0)


def test_spmm_row_block_with_offset_indptr():
    """A row block sliced from raw CSR arrays (indptr[0] != 0) is handled as is."""
    indptr, indices, data = random_csr(400, 300, seed=3, dtype=np.float32)
    A = sp.csr_matrix((data, indices, indptr), shape=(400, 300))
    X = np.random.default_rng(2).uniform(size=(300, 5)).astype(np.float32)
    block = indptr[100:251]
    ref = A[100:250] @ X
    out = np.empty((150, 5), np.float32)
    spmm_csr_dense(block, indices, data, X, out)
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    splits = balanced_row_splits(block, 4)
    assert splits[0] == 0 and splits[-1] == 150
    out[:] = np.nan
    spmm_csr_dense_balanced(block, indices, data, X, out, splits, False, 0)
    np.testing.assert_allclose(out, ref, rtol=1e-5)


def test_spmm_empty_and_zero_width():
    indptr = np.zeros(4, dtype=np.int32)  # 3 empty rows
    indices = np.zeros(0, dtype=np.int32)
    data = np.zeros(0, dtype=np.float32)
    X = np.ones((5, 2), dtype=np.float32)
    np.testing.assert_array_equal(spmm(indptr, indices, data, X), np.zeros((3, 2)))
    assert spmm(indptr, indices, data, np.ones((5, 0), np.float32)).shape == (3, 0)
    none = spmm(np.zeros(1, np.int32), indices, data, X)  # no rows at all
    assert none.shape == (0, 2)


def test_spmm_wrapper_casts_and_checks():
    indptr, indices, data = random_csr(50, 40, seed=5)
    A = sp.csr_matrix((data, indices, indptr), shape=(50, 40))
    X = np.asfortranarray(np.random.default_rng(0).uniform(size=(40, 3)).astype(np.float32))
    out = spmm(indptr, indices, data, X)  # float64 data cast to float32; X made C-contiguous
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, A @ X.astype(np.float64), rtol=1e-5)
    with pytest.raises(ValueError, match="out must be"):
        spmm(indptr, indices, data, X, out=np.empty((50, 4), np.float32))
    with pytest.raises(ValueError, match="out must be"):
        spmm(indptr, indices, data, X, out=np.empty((50, 3), np.float64))
    splits = balanced_row_splits(indptr, 3)
    np.testing.assert_allclose(spmm(indptr, indices, data, X, row_splits=splits), out, rtol=0)


@pytest.mark.parametrize("parts", [1, 2, 3, 16, 999, 5000])
def test_balanced_splits_cover_rows_once(parts):
    indptr, _, _ = random_csr(1000, 12_000, seed=parts, heavy_row=10)
    splits = balanced_row_splits(indptr, parts)
    assert splits.dtype == np.int64 and splits.shape == (parts + 1,)
    assert splits[0] == 0 and splits[-1] == 1000
    assert np.all(np.diff(splits) >= 0)
    covered = np.concatenate([np.arange(splits[p], splits[p + 1]) for p in range(parts)])
    np.testing.assert_array_equal(covered, np.arange(1000))  # every row exactly once
    # balance: a chunk exceeds the fair share only by (at most) one row's work
    work = np.diff(indptr) + 1
    chunk_work = np.add.reduceat(np.append(work, 0), splits[:-1])
    chunk_work[np.diff(splits) == 0] = 0
    assert chunk_work.max() <= work.sum() / parts + work.max()
    if parts == 16:  # the heavy row is alone (or nearly) in its chunk
        heavy_chunk = np.searchsorted(splits, 10, side="right") - 1
        assert splits[heavy_chunk + 1] - splits[heavy_chunk] < 50


def test_balanced_splits_rejects_bad_parts():
    with pytest.raises(ValueError, match="parts"):
        balanced_row_splits(np.array([0, 1, 2]), 0)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}")
def test_indptr_from_sorted_rows_matches_scipy(case):
    # row ids of CSR entries (empty rows, a heavy row, trailing empty rows) back to indptr
    indptr, indices, data, A = _case_arrays(case, np.float32, np.int64, np.int32)
    n = A.shape[0]
    rows = A.tocoo().row.astype(np.int32)
    got = np.full(n + 1, -1, dtype=np.int64)
    assert indptr_from_sorted_rows(rows, got) == rows.shape[0]
    np.testing.assert_array_equal(got, indptr)
    empty = np.full(5, -1, dtype=np.int64)
    assert indptr_from_sorted_rows(np.zeros(0, np.int32), empty) == 0
    np.testing.assert_array_equal(empty, np.zeros(5))
    # leading, middle and trailing empty rows; no rows at all
    edges = np.full(7, -1, dtype=np.int64)
    assert indptr_from_sorted_rows(np.array([2, 2, 4], np.int32), edges) == 3
    np.testing.assert_array_equal(edges, [0, 0, 0, 2, 2, 3, 3])
    none = np.full(1, -1, dtype=np.int64)
    assert indptr_from_sorted_rows(np.zeros(0, np.int64), none) == 0
    np.testing.assert_array_equal(none, [0])


def test_indptr_from_sorted_rows_reports_the_first_bad_entry():
    out = np.empty(4, dtype=np.int64)  # 3 rows
    assert indptr_from_sorted_rows(np.array([0, 2, 1], np.int32), out) == 2  # out of order
    assert indptr_from_sorted_rows(np.array([0, 1, 3], np.int32), out) == 2  # out of range
    assert indptr_from_sorted_rows(np.array([-1], np.int32), out) == 0


def test_csr_transpose_trailing_empty_columns():
    indptr = np.array([0, 2, 2, 3], dtype=np.int32)
    indices = np.array([0, 2, 0], dtype=np.int32)
    data = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    ip, ix, d = csr_transpose(indptr, indices, data, 5)
    T = sp.csr_matrix((data, indices, indptr), shape=(3, 5)).T.tocsr()
    T.sort_indices()
    np.testing.assert_array_equal(ip, T.indptr)
    np.testing.assert_array_equal(ix, T.indices)
    np.testing.assert_array_equal(d, T.data)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_kernels_match_numpy(dtype):
    rng = np.random.default_rng(7)
    Z = rng.standard_normal((301, 17)).astype(dtype)
    Z[0, :3] = [0.0, -0.0, np.nan]
    dH = rng.standard_normal((301, 17)).astype(dtype)
    H = relu_inplace(Z.copy())
    np.testing.assert_array_equal(H, np.maximum(Z, 0))
    expected = np.where(Z > 0, dH, 0).astype(dtype)
    out = np.full_like(dH, np.nan)
    np.testing.assert_array_equal(relu_backward(dH, Z, out), expected)
    np.testing.assert_array_equal(relu_backward(dH, H, np.empty_like(dH)), expected)
    d2 = dH.copy()
    relu_backward(d2, Z, d2)  # in place
    np.testing.assert_array_equal(d2, expected)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_normalize_matches_formula(dtype):
    rng = np.random.default_rng(8)
    X = rng.uniform(-1, 3, size=(200, 9)).astype(dtype)
    X[5] = 0
    X[6, :] = [1, -1, 0, 0, 0, 0, 0, 0, 0]  # sums to 0 but L1 norm 2
    norm = np.abs(X.astype(np.float64)).sum(axis=1, keepdims=True)
    expected = np.divide(X, norm, out=np.zeros(X.shape), where=norm > 0)
    got = row_normalize_inplace(X)
    np.testing.assert_allclose(got, expected, rtol=1e-6 if dtype == np.float32 else 1e-13)
    assert np.all(got[5] == 0)
    np.testing.assert_allclose(np.abs(got[norm[:, 0] > 0]).sum(axis=1), 1.0, rtol=1e-6)


def _xent_case(dtype, n=120, c=7, seed=9):
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal((n, c)) * 5).astype(dtype)
    logits[0] = 1000.0  # overflow without the max shift
    logits[1, 0] = -1000.0
    logits[2] = np.array([900, -900, 0, 0, 0, 0, 0][:c], dtype=dtype)
    labels = rng.integers(0, c, size=n)
    labels[rng.random(n) < 0.1] = -1
    mask = rng.random(n) < 0.6
    mask[:3] = True
    labels[2] = 1  # probability ~ e^-1800: loss 1800, still finite
    return logits, labels, mask


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_xent_matches_scipy(dtype):
    logits, labels, mask = _xent_case(dtype)
    logp = log_softmax(logits.astype(np.float64), axis=1)
    counted = mask & (labels >= 0)
    expected_loss = -logp[counted, labels[counted]].sum()
    probs = np.full_like(logits, np.nan)
    loss = softmax_xent_rows(logits, labels, mask, probs)
    assert np.isfinite(loss)
    np.testing.assert_allclose(loss, expected_loss, rtol=1e-6)
    np.testing.assert_allclose(probs, np.exp(logp), rtol=1e-5, atol=1e-7)
    # in place (probs_out is logits) gives the same
    inplace = logits.copy()
    np.testing.assert_allclose(softmax_xent_rows(inplace, labels, mask, inplace), loss, rtol=1e-12)
    np.testing.assert_array_equal(inplace, probs)
    # gradient: scale * (p - onehot) on counted rows, 0 elsewhere
    scale = 1.0 / counted.sum()
    onehot = np.zeros(logits.shape)
    onehot[np.flatnonzero(counted), labels[counted]] = 1.0
    expected_grad = np.where(counted[:, None], scale * (np.exp(logp) - onehot), 0.0)
    grad = np.full_like(probs, np.nan)
    softmax_xent_grad(probs, labels, mask, scale, grad)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-5, atol=1e-8)
    softmax_xent_grad(probs, labels, mask, scale, probs)  # in place
    np.testing.assert_array_equal(probs, grad)


def test_softmax_xent_grad_finite_differences():
    logits, labels, mask = _xent_case(np.float64, n=12, c=4, seed=11)
    logits[:3] = np.random.default_rng(0).standard_normal((3, 4))  # keep the check smooth
    probs = np.empty_like(logits)
    softmax_xent_rows(logits, labels, mask, probs)
    grad = softmax_xent_grad(probs, labels, mask, 0.5, np.empty_like(logits))
    eps = 1e-6
    numeric = np.zeros_like(logits)
    scratch = np.empty_like(logits)
    for i in range(logits.shape[0]):
        for j in range(logits.shape[1]):
            up, down = logits.copy(), logits.copy()
            up[i, j] += eps
            down[i, j] -= eps
            numeric[i, j] = (
                0.5
                * (
                    softmax_xent_rows(up, labels, mask, scratch)
                    - softmax_xent_rows(down, labels, mask, scratch)
                )
                / (2 * eps)
            )
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-8)


def test_threads(monkeypatch):
    assert set_threads(1) == 1 and get_threads() == 1
    assert set_threads(10**6) == max_threads() == get_threads()
    with pytest.raises(InputError, match="threads"):
        set_threads(0)
    with pytest.raises(InputError, match="threads"):
        set_threads(1.5)
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")
    assert set_threads(None) == 1 and get_threads() == 1
    monkeypatch.setenv("NUMBA_NUM_THREADS", "many")
    with pytest.raises(InputError, match="NUMBA_NUM_THREADS"):
        set_threads(None)
    monkeypatch.delenv("NUMBA_NUM_THREADS")
    assert set_threads(None) == max_threads()
    assert advised_threads(4, cores=64) == 16
    assert advised_threads(3, cores=2) == 1


def test_threads_cap_the_blas_and_idle_openmp_workers_sleep():
    import os
    import subprocess

    from threadpoolctl import threadpool_info

    blas = [p for p in threadpool_info() if p["user_api"] == "blas"]
    assert blas, "numpy's BLAS not found by threadpoolctl"
    set_threads(1)
    assert all(p["num_threads"] == 1 for p in threadpool_info() if p["user_api"] == "blas")
    # any --threads: BLAS stays at one thread per call, the dense products run in parallel
    # over Numba's threads (kernels.dense), so the two pools never spin on each other
    n = set_threads(10**6)
    assert n == max_threads()
    assert all(p["num_threads"] == 1 for p in threadpool_info() if p["user_api"] == "blas")
    code = "import os, gcntrain.kernels; print(os.environ['OMP_WAIT_POLICY'])"
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    for given, want in ((None, "PASSIVE"), ("ACTIVE", "ACTIVE")):
        e = env if given is None else {**env, "OMP_WAIT_POLICY": given}
        out = subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True)
        assert out.stdout.strip() == want, out.stderr
    assert advised_threads(1) >= 1
    with pytest.raises(InputError):
        advised_threads(0)


def test_gpu_available_is_false_safe(monkeypatch):
    try:
        import cupy  # noqa: F401

        has_cupy = True
    except Exception:
        has_cupy = False
    result = gpu.available()
    assert isinstance(result, bool)
    if not has_cupy:
        assert result is False
        with pytest.raises(RuntimeError, match="GPU"):
            gpu.spmm_csr_dense_gpu(
                np.array([0]),
                np.array([], np.int32),
                np.array([], np.float32),
                np.ones((1, 1), np.float32),
            )
    monkeypatch.setitem(sys.modules, "cupy", None)  # import fails
    assert gpu.available() is False
    broken = types.ModuleType("cupy")

    def _raise():
        raise RuntimeError("cudaErrorInsufficientDriver")

    broken.is_available = _raise
    monkeypatch.setitem(sys.modules, "cupy", broken)  # imports, but probing fails
    assert gpu.available() is False
    broken.is_available = lambda: False
    assert gpu.available() is False


def test_gpu_module_not_imported_by_package():
    import subprocess

    code = "import gcntrain, gcntrain.kernels, sys; print('gcntrain.kernels.gpu' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "False"


def _adam_numpy(w, g, m, v, t, lr, decay, b1=0.9, b2=0.999, eps=1e-8):
    """The NumPy formula the fused Adam kernel replaced (temporaries and all)."""
    dt = w.dtype.type
    m *= dt(b1)
    m += dt(1.0 - b1) * g
    v *= dt(b2)
    v += dt(1.0 - b2) * np.square(g)
    if decay:
        w -= dt(lr * decay) * w
    w -= dt(adam_step_size(lr, t, b1, b2)) * m / (np.sqrt(v) + dt(eps))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(7, 5), (9,), "strided"])
@pytest.mark.parametrize("decay", [0.0, 0.1])
def test_fused_adam_equals_the_numpy_formula_bit_for_bit(dtype, shape, decay):
    """Five steps of `adam_update` (one fused pass) against the NumPy formula: every weight
    and moment equal bit for bit, for 2-D, 1-D and non-contiguous (column-sliced) arrays."""
    rng = np.random.default_rng(11)

    def arr(base=None):
        if shape == "strided":  # every other column of a wider array: a view with strides
            a = rng.standard_normal((6, 8)).astype(dtype)
            return a[:, ::2]
        return rng.standard_normal(shape).astype(dtype)

    w = arr()
    ref_w = w.copy()
    m, v = np.zeros_like(w), np.zeros_like(w)
    ref_m, ref_v = m.copy(), v.copy()
    for t in range(1, 6):
        g = arr()
        adam_update(w, g, m, v, t, 0.05, decoupled_decay=decay)
        _adam_numpy(ref_w, g, ref_m, ref_v, t, 0.05, decay)
    assert w.dtype == dtype and m.dtype == dtype
    np.testing.assert_array_equal(w, ref_w)
    np.testing.assert_array_equal(m, ref_m)
    np.testing.assert_array_equal(v, ref_v)
    assert not np.array_equal(w, arr())  # the weights moved


def test_fused_adam_refuses_mismatched_shapes():
    w = np.zeros((3, 2))
    with pytest.raises(ValueError, match="shapes"):
        adam_update(w, np.zeros((2, 3)), np.zeros_like(w), np.zeros_like(w), 1, 0.1)
