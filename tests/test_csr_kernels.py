"""The loading and normalisation passes (`gcntrain.kernels.csr`) against the numpy/scipy
formulas they replaced: equal arrays, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from gcntrain.kernels.csr import (
    coo_rows_to_csr,
    csr_diagonal_count,
    csr_gather_rows,
    csr_row_order,
    csr_sort_rows,
    csr_sum_duplicates,
)
from gcntrain.model.normalize import (
    DEGREE_OFFSET,
    KINDS,
    _support_rows_scipy,
    degrees,
    support_rows,
)
from gcntrain.schemes.loading.assemble import gather_rows, sorted_csr, take_rows


def _block(seed: int, m: int = 60, n: int = 80, weighted: bool = True, long_rows: bool = False):
    """A random row block with self-loops, duplicate columns (at most two of a kind: scipy's
    unstable sort may order three or more differently) and unsorted rows."""
    rng = np.random.default_rng(seed)
    lens = rng.integers(0, 8, m)
    if long_rows:
        lens[::7] = rng.integers(40, 70, lens[::7].shape[0])
    rows = np.arange(m, dtype=np.int64) + 7
    cols = []
    for i in range(m):
        c = rng.choice(n, size=min(int(lens[i]), n), replace=False)
        if c.size and rng.random() < 0.3:
            c[0] = rows[i] % n  # a self-loop
        if c.size > 1 and rng.random() < 0.3:
            c = np.concatenate([c, c[-1:]])  # one duplicate
        cols.append(rng.permutation(c))
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum([c.size for c in cols], out=indptr[1:])
    indices = np.concatenate(cols).astype(np.int64)
    data = rng.uniform(0.1, 2.0, indices.size).astype(np.float32) if weighted else None
    return indptr, indices, data, rows % n, n


def _degrees_reference(indptr, indices, data, kind, rows=None, partial=False):
    m = indptr.shape[0] - 1
    vals = np.ones(indices.shape[0]) if data is None else np.asarray(data, np.float64)
    local_row = np.repeat(np.arange(m, dtype=np.int64), np.diff(indptr))
    one = 0.0 if partial else DEGREE_OFFSET[kind]
    if kind == "gcn":
        return np.bincount(local_row, weights=vals, minlength=m) + one
    grow = local_row if rows is None else np.asarray(rows, dtype=np.int64)[local_row]
    off = np.asarray(indices, dtype=np.int64) != grow
    deg = np.bincount(local_row[off], weights=vals[off], minlength=m)
    return deg + one if kind == "sage-gcn" else deg


def _inv(d, power):
    out = np.zeros_like(d, dtype=np.float64)
    nz = d > 0
    out[nz] = d[nz] ** (-power)
    return out


def _support_reference(indptr, indices, data, rows, deg, kind, col_range=None, identity=None):
    """The scipy formula `support_rows` computed before its Numba passes (kept as the
    fallback for weighted rows that repeat a column: `normalize._support_rows_scipy`)."""
    vals = np.ones(indices.shape[0]) if data is None else np.asarray(data, np.float64)
    return _support_rows_scipy(
        indptr, indices, vals, rows, deg, kind, col_range, identity, np.int64
    )


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("weighted", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_degrees_match_the_bincount_formula(kind, weighted, seed):
    indptr, indices, data, rows, _ = _block(seed, weighted=weighted)
    for partial in (False, True):
        got = degrees(indptr, indices, data, kind, rows=rows, partial=partial)
        want = _degrees_reference(indptr, indices, data, kind, rows=rows, partial=partial)
        assert got.dtype == np.float64
        assert np.array_equal(got, want)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("weighted", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_support_rows_match_the_scipy_formula(kind, weighted, seed):
    indptr, indices, data, rows, n = _block(seed, weighted=weighted, long_rows=seed % 2 == 1)
    rng = np.random.default_rng(seed + 100)
    deg = rng.uniform(0.0, 5.0, n)
    deg[::9] = 0.0
    before = indices.copy()
    options = [{}, {"col_range": (10, 50)}, {"identity": rng.random(rows.shape[0]) < 0.5}]
    for opts in options:
        got = support_rows(indptr, indices, data, rows, deg, kind, **opts)
        want = _support_reference(indptr, indices, data, rows, deg, kind, **opts)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype
            assert np.array_equal(g, w)
    assert np.array_equal(indices, before)  # the caller's arrays are not sorted in place
    ip32 = support_rows(indptr, indices, data, rows, deg, kind, index_dtype=np.int32)
    assert ip32[1].dtype == np.int32
    assert np.array_equal(ip32[1], _support_reference(indptr, indices, data, rows, deg, kind)[1])


@pytest.mark.parametrize("kind", KINDS)
def test_support_rows_of_weighted_triplicates_keep_scipys_order(kind):
    """Three or more weighted entries of one column in a long row: summed in the order
    scipy's sort gives them (the fallback), as before."""
    rng = np.random.default_rng(11)
    m, n = 5, 300
    rows = np.arange(m, dtype=np.int64)
    cols = [np.concatenate([rng.permutation(n)[:60], [3, 3, 3, 0, 0]]) for _ in range(m)]
    indptr = np.zeros(m + 1, np.int64)
    np.cumsum([c.size for c in cols], out=indptr[1:])
    indices = np.concatenate(cols).astype(np.int64)
    data = rng.uniform(0.1, 2.0, indices.size).astype(np.float32)
    deg = rng.uniform(0.5, 5.0, n)
    for ix in (indices, np.sort(indices.reshape(m, -1), axis=1).ravel()):
        got = support_rows(indptr, ix, data, rows, deg, kind)
        want = _support_reference(indptr, ix, data, rows, deg, kind)
        for g, w in zip(got, want, strict=True):
            assert np.array_equal(g, w)


def test_sort_rows_is_stable_and_sorts_only_what_needs_it():
    indptr, indices, data, _, _ = _block(5, long_rows=True)
    ix, dv = indices.copy(), data.copy()
    changed = csr_sort_rows(indptr, ix, dv)
    assert csr_row_order(indptr, ix) != 0
    assert 0 < changed <= indptr.shape[0] - 1
    for i in range(indptr.shape[0] - 1):
        lo, hi = indptr[i], indptr[i + 1]
        order = np.argsort(indices[lo:hi], kind="stable")
        assert np.array_equal(ix[lo:hi], indices[lo:hi][order])
        assert np.array_equal(dv[lo:hi], data[lo:hi][order])
    assert csr_sort_rows(indptr, ix, dv) == 0
    ix2 = indices.copy()
    csr_sort_rows(indptr, ix2, np.zeros(0, np.float32))
    assert np.array_equal(ix2, ix)


def test_sorted_csr_copies_only_unsorted_input():
    indptr, indices, data, _, _ = _block(6)
    ip, ix, dv = sorted_csr(indptr, indices, data)
    assert not np.shares_memory(ix, indices) and dv.dtype == np.float32
    ip2, ix2, dv2 = sorted_csr(ip, ix, dv)
    assert ix2 is ix and dv2 is dv
    ref = sp.csr_matrix((data, indices, indptr), shape=(indptr.shape[0] - 1, 100))
    ref.sort_indices()
    assert np.array_equal(ix, ref.indices) and np.array_equal(dv, ref.data)
    assert sorted_csr(ip, ix, None)[2] is None


def test_gather_rows_matches_scipy_row_indexing():
    indptr, indices, data, _, n = _block(7)
    m = indptr.shape[0] - 1
    rng = np.random.default_rng(7)
    take = rng.permutation(m)[: m // 2]
    colmap = rng.permutation(n).astype(np.int64)
    A = sp.csr_matrix((data, indices, indptr), shape=(m, n))[take]
    ip, ix, dv = gather_rows(indptr, indices.astype(np.int32), data, take, colmap)
    assert np.array_equal(ip, A.indptr) and ip.dtype == np.int64
    assert np.array_equal(ix, colmap[A.indices]) and ix.dtype == np.int64
    assert np.array_equal(dv, A.data) and dv.dtype == np.float32
    ip, ix, dv = gather_rows(indptr, indices, None, take, None)
    assert dv is None and np.array_equal(ix, A.indices)
    out_ip = np.empty(1, np.int64)
    csr_gather_rows(
        indptr,
        indices,
        data,
        np.zeros(0, np.int64),
        colmap,
        out_ip,
        np.empty(0, np.int64),
        np.empty(0, np.float32),
    )
    assert out_ip[0] == 0


def test_take_rows_slices_and_shares():
    a = np.arange(10.0)
    assert take_rows(a, np.arange(10), share=True) is a
    v = take_rows(a, np.arange(2, 6))
    assert v.base is a and np.array_equal(v, a[2:6])
    assert np.array_equal(take_rows(a, np.array([3, 1])), [3.0, 1.0])
    assert take_rows(None, np.arange(3)) is None


def test_diagonal_count():
    indptr, indices, _, _, _ = _block(8)
    rows = np.repeat(np.arange(indptr.shape[0] - 1), np.diff(indptr))
    for row0 in (0, 7):
        assert csr_diagonal_count(indptr, indices, row0) == np.count_nonzero(rows + row0 == indices)


def test_coo_rows_to_csr_and_sum_duplicates_match_scipy():
    rng = np.random.default_rng(9)
    m, n, k = 30, 40, 300
    r = rng.integers(0, m, k)
    c = rng.integers(0, n, k)
    v = rng.normal(size=k)
    ip = np.empty(m + 1, np.int64)
    ix = np.empty(k, np.int64)
    dv = np.empty(k, np.float64)
    coo_rows_to_csr(r, c, v, m, ip, ix, dv)
    csr_sort_rows(ip, ix, dv)
    out_ip = np.empty(m + 1, np.int64)
    kept = csr_sum_duplicates(ip, ix, dv, out_ip)
    M = sp.csr_matrix((v, (r, c)), shape=(m, n))
    M.sum_duplicates()
    assert np.array_equal(out_ip, M.indptr)
    assert np.array_equal(ix[:kept], M.indices)
    assert np.allclose(dv[:kept], M.data, rtol=1e-15, atol=1e-15)
