"""Partitioners: block/random, METIS, Mt-KaHyPar hypergraph, double permutation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from gcntrain.cli.main import run
from gcntrain.data.generate import road_grid
from gcntrain.data.partition_file import read_partition
from gcntrain.data.store import write_graph
from gcntrain.errors import InputError
from gcntrain.partition.basic import block_bounds, block_partition, random_partition
from gcntrain.partition.csr import symmetrized_without_loops
from gcntrain.partition.hypergraph import (
    column_nets,
    hypergraph_partition,
    km1,
    resolve_options,
    run_hypergraph,
    run_mtkahypar,
    sample_batches,
    stochastic_column_nets,
    stochastic_hypergraph_partition,
)
from gcntrain.partition.methods import run_method
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


# --- hypergraph refinement (V-cycles, METIS start, seeds) --------------------------------


def weight_bound(w, P, eps):
    """Largest part weight Mt-KaHyPar allows: floor((1 + eps) * ceil(total / P))."""
    return math.floor((1 + eps) * math.ceil(int(np.sum(w)) / P))


def volume(a, part, P):
    return comm_volume(a.indptr, a.indices, part, P)["volume_total"]


@pytest.mark.parametrize("refine", ["default", "deterministic"])
def test_vcycles_never_worsen_a_balanced_start(refine):
    a = sym_random(400, 0.015, 7)
    P, eps = 4, 0.05
    w = np.diff(a.indptr)
    # a balanced random start: deal the rows by decreasing weight round-robin
    order = np.argsort(-w, kind="stable")
    start = np.empty(a.shape[0], dtype=np.int64)
    start[order] = np.arange(a.shape[0]) % P
    assert np.bincount(start, weights=w).max() <= weight_bound(w, P, eps)
    net_ptr, pins = column_nets(a.indptr, a.indices)
    run = run_mtkahypar(
        a.shape[0], net_ptr, pins, w, P, eps=eps, threads=1, vcycles=1, refine=refine, start=start
    )
    assert run.start_km1 == [volume(a, start, P)]
    assert run.km1 == volume(a, run.part, P) <= volume(a, start, P)
    assert run.km1 < 0.9 * volume(a, start, P)  # a random start leaves much to gain
    loads = np.bincount(run.part, weights=w, minlength=P)
    assert loads.max() <= weight_bound(w, P, eps) == run.bound
    assert not run.fallback


def test_metis_start_refined_is_no_worse_than_metis():
    a = sym_random(500, 0.012, 3)
    P, eps = 6, 0.03
    w = np.diff(a.indptr)
    run = run_hypergraph(a.indptr, a.indices, P, eps=eps, seed=5, threads=1, init="metis")
    metis = metis_partition(a.indptr, a.indices, P, vweights=w, imbalance=eps, seed=5)
    assert run.start_km1 == [volume(a, metis, P)]
    assert run.km1 == volume(a, run.part, P) <= volume(a, metis, P)
    assert np.bincount(run.part, weights=w, minlength=P).max() <= weight_bound(w, P, eps)
    assert set(run.part.tolist()) == set(range(P))


def test_seeds_keep_the_best_attempt():
    a = sym_random(300, 0.02, 11)
    P, eps = 3, 0.03
    run = run_hypergraph(
        a.indptr, a.indices, P, eps=eps, seed=2, threads=1, init="none", vcycles=1, seeds=3
    )
    assert len(run.attempt_km1) == 3 and len(run.start_km1) == 3
    assert run.km1 == min(run.attempt_km1) == volume(a, run.part, P)
    assert run.seed == 2 + run.attempt_km1.index(run.km1)
    w = np.diff(a.indptr)
    assert np.bincount(run.part, weights=w, minlength=P).max() <= weight_bound(w, P, eps)


def test_unbalanced_start_ends_balanced():
    a = sym_random(300, 0.02, 4)
    P, eps = 4, 0.03
    w = np.diff(a.indptr)
    start = np.zeros(300, dtype=np.int64)
    start[250:] = np.arange(50) % P  # part 0 holds most of the weight
    assert np.bincount(start, weights=w).max() > weight_bound(w, P, eps)
    net_ptr, pins = column_nets(a.indptr, a.indices)
    run = run_mtkahypar(300, net_ptr, pins, w, P, eps=eps, threads=1, vcycles=1, start=start)
    assert np.bincount(run.part, weights=w, minlength=P).max() <= weight_bound(w, P, eps)
    assert run.km1 == volume(a, run.part, P)


def test_refinement_option_errors():
    a = sym_random(60, 0.1, 1)
    net_ptr, pins = column_nets(a.indptr, a.indices)
    w = np.diff(a.indptr)
    start = np.arange(60) % 2
    with pytest.raises(InputError, match="V-cycle"):
        run_mtkahypar(60, net_ptr, pins, w, 2, threads=1, vcycles=0, start=start)
    with pytest.raises(InputError, match="start partition"):
        run_mtkahypar(60, net_ptr, pins, w, 2, threads=1, vcycles=1, start=start[:10])
    with pytest.raises(InputError, match="outside"):
        run_mtkahypar(60, net_ptr, pins, w, 2, threads=1, vcycles=1, start=start + 1)
    with pytest.raises(InputError, match="seeds"):
        run_mtkahypar(60, net_ptr, pins, w, 2, threads=1, seeds=0)
    with pytest.raises(InputError, match="preset"):
        run_mtkahypar(60, net_ptr, pins, w, 2, threads=1, vcycles=1, refine="bogus")
    with pytest.raises(InputError, match="start"):
        hypergraph_partition(a.indptr, a.indices, 2, threads=1, init="random")


def test_net_cap_keeps_km1_exact_and_never_worse_than_start():
    a = sym_random(400, 0.02, 13)
    P, eps = 4, 0.05
    w = np.diff(a.indptr)
    net_ptr, pins = column_nets(a.indptr, a.indices)
    sizes = np.diff(net_ptr)
    cap = int(np.median(sizes))
    assert (sizes > cap).sum() > 50  # the cap leaves many nets out
    order = np.argsort(-w, kind="stable")
    start = np.empty(400, dtype=np.int64)
    start[order] = np.arange(400) % P
    for c in (cap, 2):  # 2: only two-pin nets (here: none) reach Mt-KaHyPar
        run = run_mtkahypar(
            400, net_ptr, pins, w, P, eps=eps, threads=1, vcycles=1, start=start, net_cap=c
        )
        assert run.net_cap == c
        assert run.start_km1 == [volume(a, start, P)]
        assert run.km1 == volume(a, run.part, P) <= volume(a, start, P)
        if run.kept_start:  # the refinement came out worse under the exact KM1
            assert np.array_equal(run.part, start) and run.km1 == run.start_km1[0]
        assert np.bincount(run.part, weights=w, minlength=P).max() <= weight_bound(w, P, eps)


def test_capped_refinement_of_a_good_start_keeps_the_start():
    """Refining a partition already refined on all nets, while seeing only the small nets,
    tends to cut the large ones more: the exact check must then return the start."""
    a = sym_random(400, 0.02, 13)
    P, eps = 4, 0.05
    w = np.diff(a.indptr)
    net_ptr, pins = column_nets(a.indptr, a.indices)
    order = np.argsort(-w, kind="stable")
    start = np.empty(400, dtype=np.int64)
    start[order] = np.arange(400) % P
    kw = {"eps": eps, "threads": 1, "vcycles": 1, "refine": "deterministic"}
    good = run_mtkahypar(400, net_ptr, pins, w, P, start=start, **kw).part
    kept = []
    for cap in (8, 10, 12):
        run = run_mtkahypar(400, net_ptr, pins, w, P, start=good, net_cap=cap, **kw)
        assert run.km1 == volume(a, run.part, P) <= volume(a, good, P)
        if run.kept_start:
            assert np.array_equal(run.part, good)
        kept.append(run.kept_start)
    assert any(kept)


def test_resolve_options_defaults():
    a = sym_random(50, 0.1, 1)
    u = sp.csr_matrix(sp.random(50, 50, density=0.1, random_state=1, format="csr"))
    sym = resolve_options(a.indptr, a.indices, 100)
    assert sym == {"init": "metis", "vcycles": 1, "refine": "deterministic", "net_cap": 200}
    assert resolve_options(a.indptr, a.indices, 4)["net_cap"] == 128
    assert resolve_options(u.indptr, u.indices, 4) == {
        "init": "none",
        "vcycles": 1,
        "refine": "default",
        "net_cap": None,
    }
    assert resolve_options(a.indptr, a.indices, 4, "metis", net_cap=0)["net_cap"] is None
    assert resolve_options(u.indptr, u.indices, 4, "none", net_cap="auto")["net_cap"] == 128
    assert resolve_options(a.indptr, a.indices, 4, "none", 3, "quality")["vcycles"] == 3
    with pytest.raises(InputError, match="net cap"):
        resolve_options(a.indptr, a.indices, 4, net_cap="big")
    with pytest.raises(InputError, match="net cap"):
        run_mtkahypar(50, *column_nets(a.indptr, a.indices), np.diff(a.indptr), 2, net_cap=1)


def test_run_method_records_hypergraph_options():
    a = sym_random(200, 0.03, 9)
    res = run_method(
        "hypergraph",
        a.indptr,
        a.indices,
        4,
        seed=1,
        threads=1,
        hg_options={"init": "none", "vcycles": 2, "refine": "default"},
    )
    p = res.params
    assert (p["init"], p["vcycles"], p["refine"], p["seeds"]) == ("none", 2, "default", 1)
    assert p["km1"] == volume(a, res.part, 4) and p["imbalance"] == 0.01
    default = run_method("hypergraph", a.indptr, a.indices, 4, threads=1).params
    key = ("init", "vcycles", "refine", "net_cap")
    assert tuple(default[k] for k in key) == ("metis", 1, "deterministic", 128)
    u = sp.csr_matrix(sp.random(200, 200, density=0.03, random_state=2, format="csr"))
    assert (u != u.T).nnz > 0
    ures = run_method("hypergraph", u.indptr, u.indices, 4, threads=1)
    assert tuple(ures.params[k] for k in key) == ("none", 1, "default", None)
    assert ures.params["km1"] == volume(u, ures.part, 4)
    with pytest.raises(InputError, match="unknown hypergraph options"):
        run_method("hypergraph", a.indptr, a.indices, 4, threads=1, hg_options={"cycles": 1})


def test_cli_hypergraph_options(tmp_path, capsys):
    g = road_grid(12, 12, seed=3)
    path = tmp_path / "g.h5"
    write_graph(path, g)
    out = tmp_path / "p.h5"
    argv = ["partition", str(path), "-m", "hypergraph", "-p", "4", "-o", str(out), "--json"]
    opts = ["--hg-init", "none", "--hg-vcycles", "1", "--hg-seeds", "2", "--hg-net-cap", "5"]
    rc = run([*argv, *opts])
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    rep = json.loads(cap.out)
    res = read_partition(out, graph_hash=g.content_hash())
    p = res.params
    assert (p["init"], p["vcycles"], p["seeds"], p["net_cap"]) == ("none", 1, 2, 5)
    assert rep["volume_total"] == volume(g, res.part, 4) == res.params["km1"]
    rc = run([*argv[:3], "metis", *argv[4:], "--hg-init", "none"])
    assert rc == 2
    assert "--hg-init applies to --method hypergraph" in capsys.readouterr().err


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
