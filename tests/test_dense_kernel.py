"""The model's dense products (`gcntrain.kernels.dense`: Numba row chunks of single-threaded
BLAS calls) equal numpy's, give the same bits at any thread count, and leave numpy the
products they do not handle (CSR features, mixed dtypes, small products)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from threadpoolctl import threadpool_info

from gcntrain.kernels import dense
from gcntrain.kernels.threads import max_threads, set_threads

SHAPES = [(40000, 128, 16), (1537, 600, 7), (70000, 16, 64), (513, 3, 1), (0, 128, 16), (5, 4, 3)]


def _close(got, ref64, dtype):
    """Within rounding of the dtype, measured against the float64 product: a sum of n terms
    is off by about sqrt(n) eps of its largest magnitude."""
    eps = 1e-5 if dtype == np.float32 else 1e-13
    scale = max(1.0, float(np.abs(ref64).max(initial=0.0)))
    np.testing.assert_allclose(got, ref64, rtol=0, atol=eps * scale)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,k,f", SHAPES)
def test_products_equal_numpy(dtype, n, k, f):
    rng = np.random.default_rng(n + k + f)
    H = rng.standard_normal((n, k)).astype(dtype)
    W = rng.standard_normal((k, f)).astype(dtype)
    dZ = rng.standard_normal((n, f)).astype(dtype)
    H64, W64, dZ64 = H.astype(np.float64), W.astype(np.float64), dZ.astype(np.float64)
    for got, ref in (
        (dense.matmul(H, W), H64 @ W64),
        (dense.matmul(dZ, W.T), dZ64 @ W64.T),  # an F-ordered right operand
        (dense.matmul_tn(H, dZ), H64.T @ dZ64),
    ):
        assert got.dtype == dtype and got.shape == ref.shape
        _close(got, ref, dtype)


def test_chunks_depend_on_rows_only_and_cover_them():
    for n in (0, 1, 511, 512, 1024, 10**5, 10**7):
        s = dense.row_chunks(n)
        assert s[0] == 0 and s[-1] == n and np.all(np.diff(s) >= 0)
        assert len(s) - 1 <= dense.MAX_CHUNKS
        if n >= 2 * dense.MIN_CHUNK_ROWS:
            assert np.diff(s).min() >= dense.MIN_CHUNK_ROWS


def test_same_bits_at_every_thread_count():
    rng = np.random.default_rng(3)
    H = rng.standard_normal((50000, 64)).astype(np.float32)
    W = rng.standard_normal((64, 16)).astype(np.float32)
    dZ = rng.standard_normal((50000, 16)).astype(np.float32)
    runs = []
    try:
        for t in sorted({1, max_threads()}):
            set_threads(t)
            runs.append((dense.matmul(H, W), dense.matmul_tn(H, dZ), dense.matmul(dZ, W.T)))
    finally:
        set_threads(None)
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            assert np.array_equal(a, b)


def test_blas_runs_one_thread_after_set_threads():
    # a fresh process: the BLAS Numba's np.dot calls (scipy's) must be capped too, although
    # nothing had loaded it when set_threads ran
    code = (
        "import json, numpy as np\n"
        "from gcntrain.kernels.threads import set_threads\n"
        "from gcntrain.kernels import dense\n"
        "set_threads(2)\n"
        "dense.matmul(np.ones((70000, 16)), np.ones((16, 16)))\n"
        "from threadpoolctl import threadpool_info\n"
        "pools = [p['num_threads'] for p in threadpool_info() if p['user_api'] == 'blas']\n"
        "print(json.dumps(pools))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    counts = json.loads(out.stdout)
    assert counts and all(n == 1 for n in counts), counts
    set_threads(None)
    assert all(p["num_threads"] == 1 for p in threadpool_info() if p["user_api"] == "blas")


def test_mismatched_shapes_raise_as_numpy_does():
    H = np.ones((70000, 16), np.float32)
    with pytest.raises(ValueError):
        dense.matmul(H, np.ones((8, 16), np.float32))
    with pytest.raises(ValueError):
        dense.matmul_tn(H, np.ones((70001, 16), np.float32))


def test_what_the_kernels_do_not_take_goes_to_numpy():
    rng = np.random.default_rng(4)
    W = rng.standard_normal((300, 8))
    X = sp.random(3000, 300, density=0.01, format="csr", random_state=5)
    dZ = rng.standard_normal((3000, 8))
    np.testing.assert_allclose(dense.matmul(X, W), X @ W, rtol=1e-12)  # CSR features
    np.testing.assert_allclose(dense.matmul_tn(X, dZ), X.T @ dZ, rtol=1e-12)
    H32 = rng.standard_normal((3000, 300)).astype(np.float32)  # mixed dtypes: numpy's rules
    got = dense.matmul(H32, W)
    assert got.dtype == np.float64
    np.testing.assert_allclose(got, H32 @ W, rtol=1e-12)
    Hs = rng.standard_normal((6000, 300))[::2]  # a strided view is copied, not misread
    np.testing.assert_allclose(dense.matmul(Hs, W), Hs @ W, rtol=1e-12)
