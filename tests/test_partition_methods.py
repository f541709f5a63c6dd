"""Partitioners: block/random, METIS, Mt-KaHyPar hypergraph, double permutation."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from gcntrain.data.generate import road_grid
from gcntrain.errors import InputError
from gcntrain.partition.basic import block_bounds, block_partition, random_partition
from gcntrain.partition.csr import symmetrized_without_loops
from gcntrain.partition.hypergraph import (
    column_nets,
    hypergraph_partition,
    km1,
    sample_batches,
    stochastic_column_nets,
    stochastic_hypergraph_partition,
)
from gcntrain.partition.metis import metis_partition, vertex_weights
from gcntrain.partition.metrics import comm_volume
from gcntrain.partition.permute import (
    block_nnz,
    double_permutation,
    near_square_grid,
    permutation_balance,
    stratified_double_permutation,
    stratified_permutation,
)


def shared_dir() -> Path:
    p = Path(__file__).resolve().parents[1].parent / "shared"
    return p if p.is_dir() else Path("/work/shared")


def grid_graph(rows=12, cols=10, seed=0):
    g = road_grid(rows, cols, seed)
    return g.indptr, g.indices, g.n


def sym_random(n, density, seed, loops=True):
    a = sp.random(n, n, density=density, random_state=seed, format="csr")
    a = a + a.T + (sp.eye(n) if loops else 0)
    a = sp.csr_matrix(a)
    a.sort_indices()
    return a


# --- block / random ---------------------------------------------------------------------


@pytest.mark.parametrize("n,P", [(10, 3), (7, 7), (100, 8), (5, 1)])
def test_block_partition_contiguous_and_balanced(n, P):
    part = block_partition(n, P)
    sizes = np.bincount(part, minlength=P)
    assert sizes.sum() == n and sizes.max() - sizes.min() <= 1
    assert np.all(np.diff(part) >= 0) and part[0] == 0 and part[-1] == P - 1


def test_random_partition_balanced_and_seeded():
    a = random_partition(101, 4, seed=3)
    assert np.bincount(a).tolist() == [26, 25, 25, 25]
    assert np.array_equal(a, random_partition(101, 4, seed=3))
    assert not np.array_equal(a, random_partition(101, 4, seed=4))
    iid = random_partition(1000, 4, seed=0, balanced=False)
    assert iid.min() >= 0 and iid.max() < 4
    assert np.bincount(iid).max() - np.bincount(iid).min() > 1  # sizes vary under iid


@pytest.mark.parametrize("P", [0, -1, 11])
def test_bad_part_counts(P):
    with pytest.raises(InputError):
        block_partition(10, P)
    with pytest.raises(InputError):
        random_partition(10, P)


# --- METIS ------------------------------------------------------------------------------


def test_metis_input_is_symmetric_without_loops():
    a = sp.random(30, 30, density=0.1, random_state=1, format="csr") + sp.eye(30)
    a = sp.csr_matrix(a)
    ptr, idx = symmetrized_without_loops(a.indptr, a.indices, 30)
    S = sp.csr_matrix((np.ones(idx.size), idx, ptr), shape=(30, 30))
    expect = set()
    coo = a.tocoo()
    for i, j in zip(coo.row, coo.col):
        if i != j:
            expect |= {(int(i), int(j)), (int(j), int(i))}
    got = set(zip(*(x.tolist() for x in S.nonzero())))
    assert got == expect and S.diagonal().sum() == 0


@pytest.mark.parametrize("P", [2, 4, 7])
def test_metis_part_count_and_balance(P):
    indptr, indices, n = grid_graph(16, 15)
    part = metis_partition(indptr, indices, P, seed=1)
    sizes = np.bincount(part, minlength=P)
    assert part.shape == (n,) and part.min() == 0 and part.max() == P - 1
    assert sizes.max() <= math.ceil(1.03 * n / P) + 1
    # a grid partition should cut far fewer edges than a random one
    cut = comm_volume(indptr, indices, part, P)["edge_cut"]
    rcut = comm_volume(indptr, indices, random_partition(n, P, 0), P)["edge_cut"]
    assert cut < rcut / 3


def test_metis_degree_weights_balance_nnz():
    a = sym_random(300, 0.02, 4)
    # make a few heavy rows
    heavy = sp.lil_matrix((300, 300))
    for i in range(5):
        heavy[i, np.arange(300)] = 1
    a = sp.csr_matrix(a + heavy + heavy.T)
    a.sort_indices()
    w = vertex_weights(a.indptr, "degree")
    assert np.array_equal(w, np.maximum(np.diff(a.indptr), 1))
    part = metis_partition(a.indptr, a.indices, 4, vweights="degree", imbalance=0.05)
    loads = np.bincount(part, weights=w, minlength=4)
    assert loads.max() / loads.mean() <= 1.1


def test_train_weights_formula_and_errors():
    a = sym_random(50, 0.1, 2)
    train = np.zeros(50, bool)
    train[::5] = True
    w = vertex_weights(a.indptr, "train", train)
    nnz = np.maximum(np.diff(a.indptr), 1)
    lam = max(1, round(nnz.sum() / 10))
    assert np.array_equal(w, nnz + lam * train)
    part = metis_partition(a.indptr, a.indices, 2, vweights="train", train_mask=train)
    assert set(part.tolist()) == {0, 1}
    with pytest.raises(InputError, match="training mask"):
        vertex_weights(a.indptr, "train", None)
    with pytest.raises(InputError):
        vertex_weights(a.indptr, "bogus")
    with pytest.raises(InputError):
        vertex_weights(a.indptr, np.full(50, -1))


# --- hypergraph -------------------------------------------------------------------------


@pytest.mark.parametrize("P", [2, 4])
def test_hypergraph_part_count_balance_and_quality(P):
    indptr, indices, n = grid_graph(16, 16)
    eps = 0.03
    part = hypergraph_partition(indptr, indices, P, eps=eps, seed=0, threads=1)
    w = np.diff(indptr)
    loads = np.bincount(part, weights=w, minlength=P)
    assert part.min() == 0 and part.max() == P - 1
    assert loads.max() <= (1 + eps) * math.ceil(w.sum() / P)
    net_ptr, pins = column_nets(indptr, indices)
    rnd = random_partition(n, P, 0)
    assert km1(net_ptr, pins, part) < km1(net_ptr, pins, rnd) / 3


def test_gemat11_hypergraph_beats_reference_partition():
    """Our 3-way column-net partition of gemat11 (rows weighted by nnz) has no larger
    connectivity-1 than the reference hypergraph partition shipped with the paper's code."""
    d = shared_dir() / "datasets" / "suitesparse"
    A = sp.csr_matrix(scipy.io.mmread(str(d / "gemat11.mtx")))
    A.sort_indices()
    ref = np.array((d / "gemat11.mtx.3.hp").read_text().split(), dtype=np.int64)
    assert ref.size == A.shape[0] and set(ref.tolist()) == {0, 1, 2}
    net_ptr, pins = column_nets(A.indptr, A.indices)
    ref_km1 = km1(net_ptr, pins, ref)
    assert ref_km1 == comm_volume(A.indptr, A.indices, ref, 3)["volume_total"]
    ours = hypergraph_partition(A.indptr, A.indices, 3, eps=0.03, seed=0, threads=1)
    assert km1(net_ptr, pins, ours) <= ref_km1


def test_stochastic_nets_match_induced_subgraphs():
    a = sp.csr_matrix(sp.random(40, 40, density=0.1, random_state=3, format="csr"))
    batches = sample_batches(40, 15, 3, seed=1)
    assert all(b.size == 15 and np.unique(b).size == 15 for b in batches)
    net_ptr, pins = stochastic_column_nets(a.indptr, a.indices, batches)
    expect = []
    for V in batches:
        Vs = set(V.tolist())
        for j in sorted(Vs):
            expect.append({i for i in Vs if a[i, j] != 0} | {j})
    got = [set(pins[net_ptr[k] : net_ptr[k + 1]].tolist()) for k in range(net_ptr.size - 1)]
    assert got == expect
    part = stochastic_hypergraph_partition(a.indptr, a.indices, 2, batches, eps=0.1, threads=1)
    assert part.shape == (40,) and set(part.tolist()) == {0, 1}


# --- double permutation -----------------------------------------------------------------


def test_double_permutation_valid():
    r, c = double_permutation(1000, seed=5)
    assert np.array_equal(np.sort(r), np.arange(1000))
    assert np.array_equal(np.sort(c), np.arange(1000))
    assert not np.array_equal(r, c)
    r2, c2 = double_permutation(1000, seed=5)
    assert np.array_equal(r, r2) and np.array_equal(c, c2)


@pytest.mark.parametrize("rc", [(2, 3), (4, 4), (1, 5)])
def test_block_nnz_matches_dense_blocks(rc):
    r, c = rc
    a = sp.csr_matrix(sp.random(37, 37, density=0.2, random_state=2, format="csr"))
    rp, cp = double_permutation(37, seed=1)
    counts = block_nnz(a.indptr, a.indices, 37, r, c, rp, cp)
    D = (a.toarray() != 0)[rp][:, cp]
    rb = np.array_split(np.arange(37), r)
    cb = np.array_split(np.arange(37), c)
    expect = np.array([[D[np.ix_(x, y)].sum() for y in cb] for x in rb])
    assert np.array_equal(counts, expect)
    assert np.array_equal(
        block_nnz(a.indptr, a.indices, 37, r, c),
        np.array([[(a.toarray() != 0)[np.ix_(x, y)].sum() for y in cb] for x in rb]),
    )


def test_double_permutation_balances_grid_graph():
    g = road_grid(60, 60, 0)
    bal = permutation_balance(g.indptr, g.indices, 4, 4, seed=0)
    assert bal["nnz_max_mean_original"] > 3.0  # banded: nonzeros on the diagonal blocks
    assert bal["nnz_max_mean_double"] < 1.1
    assert bal["nnz_max_mean_double"] <= bal["nnz_max_mean_original"]


@pytest.mark.parametrize("n,nb", [(103, 4), (64, 8), (5, 5), (7, 3)])
def test_stratified_permutation_valid_and_balanced(n, nb):
    rng = np.random.default_rng(n)
    w = rng.pareto(1.2, n).astype(np.int64) + 1  # heavy-tailed weights
    perm = stratified_permutation(w, nb, np.random.default_rng(1))
    assert np.array_equal(np.sort(perm), np.arange(n))
    bounds = block_bounds(n, nb)
    sums = [w[perm[bounds[b] : bounds[b + 1]]].sum() for b in range(nb)]
    # each run of nb vertices (by weight) puts one vertex in every block, so block sums differ
    # by at most the largest weight
    assert max(sums) - min(sums) <= w.max()
    # the block contents are not just the sorted order cut into pieces
    assert not np.array_equal(perm, np.argsort(-w, kind="stable"))


def test_stratified_double_permutation_beats_uniform_on_skewed_graph():
    from gcntrain.data.generate import rmat

    g = rmat(11, 8, seed=1)
    sr, sc = stratified_double_permutation(g.indptr, g.indices, 4, 4, seed=0)
    assert np.array_equal(np.sort(sr), np.arange(g.n)) and not np.array_equal(sr, sc)
    bal = permutation_balance(g.indptr, g.indices, 4, 4, seed=0)
    assert bal["nnz_max_mean_double_stratified"] < bal["nnz_max_mean_original"]
    assert bal["nnz_max_mean_double_stratified"] < 1.1


def test_near_square_grid():
    assert near_square_grid(16) == (4, 4)
    assert near_square_grid(12) == (3, 4)
    assert near_square_grid(7) == (1, 7)
