"""The distributed transpose's kernels (`gcntrain.kernels.transpose_merge`), the exchange
played out serially: every block transposes its rows, packs the other blocks' runs, and
each block merges what it would receive with its own run.  The result equals, array for
array and dtype for dtype, the COO path it replaced (every block's pairs counting-sorted by
row with duplicates summed, `coo_block_to_csr`), and the rows of S^T."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from gcntrain.kernels.transpose_blocks import csr_to_pairs, csr_transpose_blocked
from gcntrain.kernels.transpose_merge import (
    distinct_rows,
    merge_transposed_rows,
    pack_remote_pairs,
    rows32,
)
from gcntrain.model.normalize import coo_block_to_csr


def _blocks(rng, n: int, offsets: np.ndarray, dup: bool):
    """Every block's rows of a random n x n matrix (global columns, float64), unsorted rows
    with (with `dup`) repeated columns."""
    nnz = int(rng.integers(0, 6 * n + 1))
    r = np.sort(rng.integers(0, n, nnz))
    c = rng.integers(0, n, nnz)
    if dup and nnz > 1:
        c[1::3] = c[0:-1:3][: c[1::3].size]
    ip = np.concatenate(([0], np.cumsum(np.bincount(r, minlength=n)))).astype(np.int64)
    v = rng.standard_normal(nnz)
    out = []
    for p in range(len(offsets) - 1):
        lo, hi = offsets[p], offsets[p + 1]
        out.append((ip[lo : hi + 1] - ip[lo], c[ip[lo] : ip[hi]], v[ip[lo] : ip[hi]]))
    return out, sp.csr_matrix((v, c, ip), shape=(n, n))


def _old_path(blocks, offsets, me):
    """The replaced path: each block's whole transpose as pairs, block me's runs gathered in
    block order, then `coo_block_to_csr`."""
    got, vals = [], []
    for p, (ip, ix, dv) in enumerate(blocks):
        ip_t, ix_t, dv_t = csr_transpose_blocked(ip, ix, dv, int(offsets[-1]))
        pairs, pv = np.empty((ix_t.shape[0], 2), np.int64), np.empty(ix_t.shape[0])
        csr_to_pairs(ip_t, ix_t, dv_t, 0, int(offsets[p]), pairs, pv)
        a, b = ip_t[offsets[me]], ip_t[offsets[me + 1]]
        got.append(pairs[a:b])
        vals.append(pv[a:b])
    got, vals = np.concatenate(got), np.concatenate(vals)
    m = int(offsets[me + 1] - offsets[me])
    return coo_block_to_csr(got[:, 0] - offsets[me], got[:, 1], vals, m)


def _new_path(blocks, offsets, me):
    """`transpose_rows` without MPI: pack on every block, merge on block me."""
    P = len(blocks)
    sent = []
    for p, (ip, ix, dv) in enumerate(blocks):
        lo, hi = int(offsets[p]), int(offsets[p + 1])
        t = csr_transpose_blocked(ip, ix, dv, int(offsets[-1]), 0, rows32(hi - lo))
        assert t[1].dtype == np.int32
        pairs, vals = pack_remote_pairs(*t, lo, hi, lo)
        counts = np.diff(t[0][offsets])
        counts[p] = 0  # the own run is not packed: the others follow one another
        at = np.concatenate(([0], np.cumsum(counts)))
        assert at[-1] == pairs.shape[0] == vals.shape[0]
        sent.append((t, pairs, vals, at))
    parts = [(sent[p][1], sent[p][2], sent[p][3]) for p in range(P) if p != me]
    got = np.concatenate([pr[at[me] : at[me + 1]] for pr, _, at in parts] or [np.zeros((0, 2))])
    gv = np.concatenate([pv[at[me] : at[me + 1]] for _, pv, at in parts] or [np.zeros(0)])
    recv = np.array([0 if p == me else sent[p][3][me + 1] - sent[p][3][me] for p in range(P)])
    seg = np.concatenate(([0], np.cumsum(recv))).astype(np.int64)
    lo, hi = int(offsets[me]), int(offsets[me + 1])
    merged = merge_transposed_rows(
        *sent[me][0], lo, hi, lo, me, got.astype(np.int64), gv.astype(np.float64), seg
    )
    return distinct_rows(*merged)


@pytest.mark.parametrize(
    "n,cuts,dup",
    [(1, [], False), (60, [20, 20, 45], True), (300, [100, 250], False), (257, [3], True)],
)
def test_merged_rows_equal_the_coo_path_and_the_transpose(n, cuts, dup):
    rng = np.random.default_rng(n + len(cuts))
    offsets = np.array([0, *cuts, n], dtype=np.int64)
    blocks, S = _blocks(rng, n, offsets, dup)
    T = S.T.tocsr()
    T.sum_duplicates()
    for me in range(len(offsets) - 1):
        want = _old_path(blocks, offsets, me)
        got = _new_path(blocks, offsets, me)
        for a, b in zip(want, got):
            assert a.dtype == b.dtype
            assert np.array_equal(a.view(np.uint8), b.view(np.uint8))
        lo, hi = offsets[me], offsets[me + 1]
        rows = sp.csr_matrix((got[2], got[1], got[0]), shape=(hi - lo, n))
        assert np.allclose(rows.toarray(), T[lo:hi].toarray(), rtol=0, atol=1e-12)


def test_row_dtype_of_the_blocked_transpose():
    rng = np.random.default_rng(5)
    blocks, _ = _blocks(rng, 90, np.array([0, 90]), True)
    want = csr_transpose_blocked(*blocks[0], 90)
    got = csr_transpose_blocked(*blocks[0], 90, 2, np.int32)
    assert got[1].dtype == np.int32 and np.array_equal(got[1], want[1])
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[2], want[2])
    with pytest.raises(ValueError, match="row_dtype"):
        csr_transpose_blocked(*blocks[0], 90, 0, np.float64)
    assert rows32(10) == np.int32 and rows32(1 << 31) == np.int64
