"""The hier scheme's pure pieces: per-pair minimum vertex cover split, pair row counts (the
functions the runtime and the plans share), message sizes, option validation, start-up
partitions."""

from __future__ import annotations

import numpy as np
import pytest

from gcntrain.data.generate import rmat
from gcntrain.errors import InputError
from gcntrain.kernels.quant import packed_width
from gcntrain.partition.basic import random_partition
from gcntrain.partition.mvc import POST, PRE, cover_modes, mvc_split
from gcntrain.schemes.hier import Hier, message_bytes, pair_rows, receiver_split
from gcntrain.schemes.layout import renumber
from gcntrain.schemes.loading import partition_vector


def _renumbered(P: int, seed: int = 0):
    g = rmat(9, edge_factor=6, seed=seed, num_features=4, num_classes=3)
    A = g.adjacency().tocsr()
    part = random_partition(g.n, P, seed=seed)
    perm, _, off = renumber(part, P)
    M = A[perm][:, perm].tocsr()
    rows = np.repeat(np.arange(M.shape[0], dtype=np.int64), np.diff(M.indptr))
    return M, rows, M.indices.astype(np.int64), off, A, part


@pytest.mark.parametrize("P", [2, 3, 5])
def test_hybrid_never_exceeds_pre_or_post_and_matches_the_global_cover(P):
    """Per receiver, per source: hybrid rows <= min(pre rows, post rows) and equal to the
    maximum matching that `mvc_split` finds over the whole graph."""
    M, rows, cols, off, A, part = _renumbered(P)
    n = M.shape[0]
    vols = {}
    for aggr in ("pre", "post", "hybrid"):
        V = np.zeros((P, P), dtype=np.int64)
        for p in range(P):
            a, b = int(M.indptr[off[p]]), int(M.indptr[off[p + 1]])
            cut, src, mode = receiver_split(p, rows[a:b], cols[a:b], off, aggr)
            assert np.all(src != p)
            npre, npost = pair_rows(src, rows[a:b][cut], cols[a:b][cut], mode, P, n)
            V[:, p] = npre + npost
        vols[aggr] = V
    assert np.all(vols["hybrid"] <= np.minimum(vols["pre"], vols["post"]))
    assert vols["hybrid"].sum() < min(vols["pre"].sum(), vols["post"].sum())
    whole = mvc_split(A.indptr, A.indices, part, P)
    H = np.zeros((P, P), dtype=np.int64)
    H[whole.pair_src, whole.pair_dst] = whole.hybrid_volume
    assert np.array_equal(H, vols["hybrid"])
    P_ = np.zeros((P, P), dtype=np.int64)
    P_[whole.pair_src, whole.pair_dst] = whole.post_volume
    assert np.array_equal(P_, vols["post"])


def test_cover_modes_cover_every_edge_and_ignore_edge_order():
    rng = np.random.default_rng(3)
    dst = rng.integers(0, 40, 300)
    src = rng.integers(100, 160, 300)
    src_part = 1 + src % 3
    mode = cover_modes(dst, src, src_part, 4)
    order = rng.permutation(300)
    assert np.array_equal(cover_modes(dst[order], src[order], src_part[order], 4), mode[order])
    # sources of post edges and (destination, part) of pre edges form a vertex cover of size
    # = sum of per-pair maximum matchings; every edge is covered by its mode's endpoint
    post_src = set(src[mode == POST].tolist())
    pre_dst = set(zip(dst[mode == PRE].tolist(), src_part[mode == PRE].tolist()))
    for d, s, q, m in zip(dst, src, src_part, mode):
        assert (s in post_src) if m == POST else ((d, q) in pre_dst)
    assert set(cover_modes(dst, src, src_part, 4, "pre").tolist()) == {PRE}
    assert set(cover_modes(dst, src, src_part, 4, "post").tolist()) == {POST}


def test_message_bytes():
    rows = np.array([0, 1, 5, 33])
    vb, pb = message_bytes(rows, 16, 4, 32, 1)
    assert vb.tolist() == [0, 64, 320, 2112] and pb.tolist() == [0, 0, 0, 0]
    vb, pb = message_bytes(rows, 16, 4, 2, 1)
    assert vb.tolist() == (rows * packed_width(16, 2)).tolist() and pb.tolist() == [0, 8, 40, 264]
    assert message_bytes(rows, 7, 4, 2, 4)[1].tolist() == [0, 8, 16, 72]
    assert message_bytes(rows, 7, 4, 2, 0)[1].tolist() == [0, 8, 8, 8]
    assert message_bytes(rows, 7, 8, 4, 0)[0].tolist() == (rows * 4).tolist()


@pytest.mark.parametrize(
    "values,needle",
    [
        ({"quant_bits": "3"}, "--quant-bits must be 2, 4, 8 or 32"),
        ({"quant_bits": "x"}, "--quant-bits must be an integer"),
        ({"aggr": "both"}, "--aggr must be pre, post or hybrid"),
        ({"quant_group": "2"}, "--quant-group needs --quant-bits"),
        ({"quant_bits": "4", "quant_group": "-1"}, "--quant-group must be >= 0"),
    ],
)
def test_configure_refuses_bad_options(values, needle):
    with pytest.raises(InputError, match=needle):
        Hier().configure(4, values)


def test_configure_defaults():
    assert Hier().configure(4, {}).to_dict() == {
        "aggr": "hybrid",
        "quant_bits": 32,
        "quant_group": 1,
        "seed": 0,
    }


def test_startup_partitions_need_the_structure_and_equal_the_partitioner():
    from gcntrain.partition.metis import metis_partition

    g = rmat(8, edge_factor=6, seed=2, num_features=4, num_classes=3)
    with pytest.raises(InputError, match="computed at start-up from a graph file"):
        partition_vector("metis", g.n, 3, 0, "")
    part = partition_vector("metis", g.n, 3, 0, "", lambda: (g.indptr, g.indices))
    # training partitions balance the dense and the SpMM work: rows and row nonzeros
    expect = metis_partition(g.indptr, g.indices, 3, vweights="rows+degree", seed=0)
    assert np.array_equal(part, expect)
    hp = partition_vector("hypergraph", g.n, 3, 0, "", lambda: (g.indptr, g.indices))
    again = partition_vector("hypergraph", g.n, 3, 0, "", lambda: (g.indptr, g.indices))
    assert np.array_equal(hp, again) and set(hp.tolist()) == {0, 1, 2}
