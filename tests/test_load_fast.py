"""The fast loading paths of issue 36: the blocked parallel transpose equals the serial
counting sort array for array, a block of rows is read as contiguous slices equal to the
gathered read, and a symmetric support is held once by `SerialOps` with the same products."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from gcntrain.data.generate import rmat
from gcntrain.data.rows import read_graph_rows
from gcntrain.data.store import write_graph
from gcntrain.kernels.transpose import csr_transpose
from gcntrain.kernels.transpose_blocks import block_width, csr_transpose_blocked
from gcntrain.model.normalize import support_matrix
from gcntrain.model.ops import SerialOps


def _random_csr(rng, n, m, nnz, dup: bool):
    """A CSR matrix with unsorted rows and (with `dup`) repeated columns, float32 values."""
    rows = np.sort(rng.integers(0, max(n, 1), nnz)) if n else np.zeros(0, np.int64)
    cols = rng.integers(0, max(m, 1), nnz) if m else np.zeros(0, np.int64)
    if dup and nnz > 1:
        cols[1::3] = cols[0:-1:3][: cols[1::3].size]  # neighbours repeat a column
    ip = np.zeros(n + 1, np.int64)
    np.add.at(ip, rows + 1, 1)
    np.cumsum(ip, out=ip)
    vals = rng.standard_normal(nnz).astype(np.float32)
    return ip, cols.astype(np.int32), vals


@pytest.mark.parametrize(
    "n,m,nnz,dup",
    [
        (0, 0, 0, False),
        (1, 7, 5, True),
        (40, 3, 200, True),
        (300, 70_000, 2_000, False),
        (2_000, 1_500, 30_000, True),
    ],
)
def test_blocked_transpose_equals_counting_sort(n, m, nnz, dup):
    rng = np.random.default_rng(n + m)
    ip, ix, dv = _random_csr(rng, n, m, nnz if n and m else 0, dup)
    want = csr_transpose(ip, ix, dv, m)
    for parts in (1, 2, 5):
        got = csr_transpose_blocked(ip, ix, dv, m, parts)
        for a, b in zip(want, got):
            assert a.dtype == b.dtype
            assert np.array_equal(a.view(np.uint8), b.view(np.uint8))


def test_blocked_transpose_of_a_row_slice_and_wide_blocks():
    rng = np.random.default_rng(3)
    ip, ix, dv = _random_csr(rng, 500, 200_000, 4_000, True)
    sub = ip[100:301]  # rows 100..299: indptr not starting at 0
    want = csr_transpose(sub, ix, dv, 200_000)
    got = csr_transpose_blocked(sub, ix, dv, 200_000, 3)
    assert all(np.array_equal(a, b) for a, b in zip(want, got))
    assert block_width(10) == 64 and block_width(1 << 30) == 65536
    assert block_width(200_000) * 256 >= 200_000


def test_symmetric_support_is_held_once_with_the_same_products():
    g = rmat(8, edge_factor=6, seed=4, num_features=4, num_classes=3)
    S = support_matrix(g, "gcn").astype(np.float32)
    ops = SerialOps(S)
    assert ops.T is ops.S  # an unweighted symmetric graph: S^T == S bit for bit
    want = S.T.tocsr()
    want.sort_indices()
    assert np.array_equal(want.indices, ops.S.indices)
    assert np.array_equal(want.data.view(np.uint32), ops.S.data.view(np.uint32))
    X = np.random.default_rng(0).standard_normal((g.n, 5)).astype(np.float32)
    assert np.array_equal(ops.aggregate_t(X, phase=None), ops.aggregate(X, phase=None))
    # a directed one keeps its own transpose
    A = sp.random(50, 50, density=0.1, format="csr", random_state=2, dtype=np.float32)
    ops2 = SerialOps(A)
    assert ops2.T is not ops2.S
    assert np.allclose(ops2.T.toarray(), A.toarray().T)


def test_block_of_rows_reads_as_slices(tmp_path):
    g = rmat(9, edge_factor=8, seed=5, num_features=3, num_classes=4)
    p = tmp_path / "g.h5"
    write_graph(p, g)
    A = g.adjacency()
    for lo, hi in ((0, g.n), (37, 300), (0, 1)):
        rows = np.arange(lo, hi, dtype=np.int64)
        r = read_graph_rows(p, rows)
        assert np.array_equal(r["indptr"], A.indptr[lo : hi + 1] - A.indptr[lo])
        assert np.array_equal(r["indices"], A.indices[A.indptr[lo] : A.indptr[hi]])
        assert r["indices"].dtype == g.indices.dtype  # the file's ids, not widened
        assert np.array_equal(r["features"], g.features[lo:hi])
        assert np.array_equal(r["labels"], g.labels[lo:hi])
        assert np.array_equal(r["train_mask"], np.asarray(g.train_mask, bool)[lo:hi])
    # two windows (a gap too wide to read through) equal the whole file's rows
    rows = np.concatenate((np.arange(0, 40), np.arange(400, 420))).astype(np.int64)
    r = read_graph_rows(p, rows, gap=0)
    B = A[rows]
    assert np.array_equal(r["indptr"], B.indptr)
    assert np.array_equal(np.asarray(r["indices"], np.int64), B.indices)


def test_streamed_diagonal_count_equals_the_whole_count():
    from gcntrain.data.stream_validate import DiagonalCount
    from gcntrain.kernels.csr import csr_diagonal_count

    rng = np.random.default_rng(7)
    n = 300
    counts = rng.integers(0, 6, n)
    counts[rng.integers(0, n, 60)] = 0  # empty rows, runs of them too
    counts[100:140] = 0
    ip = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    ix = rng.integers(0, n, int(ip[-1])).astype(np.int32)
    rows = np.repeat(np.arange(n), counts)
    loops = rng.random(ix.size) < 0.3
    ix[loops] = rows[loops]  # self-loops
    want = int(np.count_nonzero(ix == rows))
    assert want == csr_diagonal_count(ip, ix, 0) and want > 0
    for step in (1, 7, 64, ix.size):
        d = DiagonalCount(ip)
        for lo in range(0, ix.size, step):
            d.add(ix[lo : lo + step], lo)
        assert d.count == want, step


def test_pairs_of_a_csr_in_entry_order():
    from gcntrain.kernels.transpose_blocks import csr_to_pairs

    rng = np.random.default_rng(1)
    ip, ix, dv = _random_csr(rng, 30, 50, 200, False)
    sub = ip[5:21]
    k = int(sub[-1] - sub[0])
    pairs, vals = np.empty((k, 2), np.int64), np.empty(k)
    csr_to_pairs(sub, ix, dv, 1000, 7, pairs, vals)
    rows = np.repeat(np.arange(5, 20), np.diff(ip)[5:20]) - 5 + 1000
    assert np.array_equal(pairs[:, 0], rows)
    assert np.array_equal(pairs[:, 1], ix[sub[0] : sub[-1]].astype(np.int64) + 7)
    assert np.array_equal(vals, dv[sub[0] : sub[-1]].astype(np.float64))
