"""The one jitted binary search of the edge kernels (`gcntrain.kernels.edges._lower_bound`)
and the two passes that use it: `reciprocal_pairs` and `values_symmetric` against scipy."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from gcntrain.kernels.edges import _lower_bound, reciprocal_pairs
from gcntrain.kernels.edgevalues import values_symmetric


def test_lower_bound_equals_searchsorted_left():
    rng = np.random.default_rng(3)
    a = np.sort(rng.integers(0, 50, 200)).astype(np.int32)
    for lo, hi in [(0, 200), (17, 90), (40, 40), (199, 200)]:
        for x in range(-2, 53):
            want = lo + int(np.searchsorted(a[lo:hi], x, side="left"))
            assert _lower_bound(a, lo, hi, x) == want


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_reciprocal_pairs_and_value_symmetry_equal_scipy(seed):
    n = 60
    A = sp.random(n, n, density=0.1, format="csr", random_state=seed, dtype=np.float32)
    A.setdiag(0)
    A.eliminate_zeros()
    A.sort_indices()
    B = A.astype(bool).astype(np.int8)
    both = B.multiply(B.T)
    want = int(sp.triu(both, k=1).nnz)
    assert reciprocal_pairs(A.indptr.astype(np.int64), A.indices) == want
    S = (A + A.T).tocsr()
    S.sort_indices()
    assert values_symmetric(S.indptr.astype(np.int64), S.indices, S.data)
    if A.nnz and want < A.nnz / 2:  # A itself is not symmetric
        assert not values_symmetric(A.indptr.astype(np.int64), A.indices, A.data)
    T = S.copy()
    T.data[0] += 1.0  # one value off: no longer equal to its transpose
    assert not values_symmetric(T.indptr.astype(np.int64), T.indices, T.data)
