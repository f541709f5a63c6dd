"""`TypedBlocks`: a join of consecutive blocks taken from the rows themselves equals the
stacked blocks entry for entry; blocks are cut on first use; a symmetric S is cast once."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from gcntrain.schemes.layout import column_blocks
from gcntrain.schemes.typed_blocks import TypedBlocks


def rows_of(seed: int, m: int = 40, n: int = 90):
    M = sp.random(m, n, density=0.2, random_state=seed, format="csr", dtype=np.float64)
    M.sort_indices()
    return M.indptr.astype(np.int64), M.indices.astype(np.int64), M.data


def stacked(rows, offsets, qs, dtype):
    blocks = column_blocks(*rows, offsets)
    M = sp.hstack([blocks[q] for q in qs], format="csr")
    M.sort_indices()
    return M.indptr, M.indices, M.data.astype(dtype)


def same(M, want) -> bool:
    return (
        np.array_equal(M.indptr, want[0])
        and np.array_equal(M.indices, want[1])
        and M.data.dtype == want[2].dtype
        and np.array_equal(M.data, want[2])
    )


def test_joins_equal_the_stacked_blocks_and_blocks_are_cut_on_first_use():
    offsets = np.array([0, 20, 20, 55, 90])  # an empty block too
    fwd, bwd = rows_of(1), rows_of(2)
    tb = TypedBlocks(offsets, fwd, bwd)
    for qs in [(0, 1, 2, 3), (1, 2, 3), (2,), (0, 1), (3, 0), (2, 0, 1, 3), (0, 2)]:
        for which, rows in (("f", fwd), ("t", bwd)):
            got = tb.joined(which, np.float32, qs)
            assert same(got, stacked(rows, offsets, qs, np.float32)), (which, qs)
    assert set(tb._blocks) == {"f", "t"}  # a non-consecutive join cut them
    tb2 = TypedBlocks(offsets, fwd, bwd)
    tb2.joined("f", np.float64, (0, 1, 2, 3))
    assert tb2._blocks == {}  # the whole rows: nothing cut
    got = tb2.get("f", np.float32)
    want = column_blocks(*fwd, offsets)
    assert all(same(a, (b.indptr, b.indices, b.data.astype(np.float32))) for a, b in zip(got, want))
    assert "f" not in tb2._rows  # the rows let go of once the blocks hold them


def test_a_symmetric_support_is_cast_once_for_both_directions():
    offsets = np.array([0, 30, 90])
    tb = TypedBlocks(offsets, rows_of(3), None)
    assert tb.joined("t", np.float32, (0, 1)) is tb.joined("f", np.float32, (0, 1))
    assert tb.get("t", np.float32) is tb.get("f", np.float32)
