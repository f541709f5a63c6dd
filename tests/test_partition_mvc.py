"""Minimum vertex cover (König) and SuperGCN's hybrid pre/post split of cut edges."""

from __future__ import annotations

import itertools
from collections import defaultdict

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from gcntrain.partition.metrics import comm_volume
from gcntrain.partition.mvc import LOCAL, POST, PRE, bipartite_min_vertex_cover, mvc_split


def brute_min_cover(nl, nr, edges):
    verts = [("L", u) for u in range(nl)] + [("R", v) for v in range(nr)]
    for k in range(len(verts) + 1):
        for C in itertools.combinations(verts, k):
            S = set(C)
            if all(("L", u) in S or ("R", v) in S for u, v in edges):
                return k
    raise AssertionError


def nx_matching_size(nl, nr, edges):
    G = nx.Graph()
    G.add_nodes_from(("L", u) for u in range(nl))
    G.add_nodes_from(("R", v) for v in range(nr))
    G.add_edges_from((("L", u), ("R", v)) for u, v in edges)
    M = nx.bipartite.hopcroft_karp_matching(G, top_nodes=[("L", u) for u in range(nl)])
    return len(M) // 2


@pytest.mark.parametrize("seed", range(12))
def test_cover_is_minimum_on_tiny_bipartite_graphs(seed):
    rng = np.random.default_rng(seed)
    nl, nr = int(rng.integers(1, 6)), int(rng.integers(1, 6))
    mask = rng.random((nl, nr)) < 0.4
    edges = list(zip(*np.nonzero(mask)))
    B = sp.csr_matrix(mask.astype(np.int8))
    cl, cr, msize = bipartite_min_vertex_cover(B)
    assert all(cl[u] or cr[v] for u, v in edges)  # a vertex cover
    size = int(cl.sum() + cr.sum())
    assert size == brute_min_cover(nl, nr, edges)  # of minimum size
    assert size == msize == nx_matching_size(nl, nr, edges)  # König


def test_cover_on_larger_random_bipartite_graph_matches_matching():
    B = sp.random(300, 250, density=0.01, random_state=5, format="csr")
    edges = list(zip(*B.nonzero()))
    cl, cr, msize = bipartite_min_vertex_cover(B)
    assert all(cl[u] or cr[v] for u, v in edges)
    assert cl.sum() + cr.sum() == msize == nx_matching_size(300, 250, edges)


def brute_pairs(a, part):
    """{(q, p): list of cut edges (src j, dst i)}."""
    out = defaultdict(list)
    rows = np.repeat(np.arange(a.shape[0]), np.diff(a.indptr))
    for k, (i, j) in enumerate(zip(rows.tolist(), a.indices.tolist())):
        if part[i] != part[j]:
            out[(int(part[j]), int(part[i]))].append((j, i, k))
    return out


CASES = [
    (60, 0.08, 0, 3, True),
    (50, 0.1, 1, 4, False),
    (40, 0.15, 2, 2, True),
    (70, 0.05, 3, 6, False),
]


@pytest.mark.parametrize("n,dens,seed,P,sym", CASES)
def test_mvc_split_volumes_and_assignment(n, dens, seed, P, sym):
    a = sp.random(n, n, density=dens, random_state=seed, format="csr")
    if sym:
        a = a + a.T
    a = sp.csr_matrix(a + sp.eye(n))
    a.sort_indices()
    part = np.random.default_rng(seed).integers(0, P, n)
    s = mvc_split(a.indptr, a.indices, part, P)
    pairs = brute_pairs(a, part)
    got = {(int(q), int(p)): k for k, (q, p) in enumerate(zip(s.pair_src, s.pair_dst))}
    assert set(got) == set(pairs)
    covered = np.zeros(a.nnz, dtype=int)
    for (q, p), edges in pairs.items():
        k = got[(q, p)]
        srcs = {j for j, _, _ in edges}
        dsts = {i for _, i, _ in edges}
        assert s.post_volume[k] == len(srcs)
        assert s.pre_volume[k] == len(dsts)
        # hybrid = minimum vertex cover of the pair's bipartite graph = its max matching
        lid = {j: x for x, j in enumerate(sorted(srcs))}
        rid = {i: x for x, i in enumerate(sorted(dsts))}
        e = {(lid[j], rid[i]) for j, i, _ in edges}
        assert s.hybrid_volume[k] == nx_matching_size(len(lid), len(rid), e)
        assert s.hybrid_volume[k] <= min(s.pre_volume[k], s.post_volume[k])
        # realised volume of the assignment: sources of post edges + destinations of pre edges
        post_src = {j for j, _, idx in edges if s.edge_mode[idx] == POST}
        pre_dst = {i for _, i, idx in edges if s.edge_mode[idx] == PRE}
        assert len(post_src) == s.hybrid_post[k] and len(pre_dst) == s.hybrid_pre[k]
        assert len(post_src) + len(pre_dst) == s.hybrid_volume[k]
        for _, _, idx in edges:
            covered[idx] += 1
    rows = np.repeat(np.arange(n), np.diff(a.indptr))
    cut = part[rows] != part[a.indices]
    assert np.all(covered[cut] == 1) and np.all(covered[~cut] == 0)
    assert np.all(np.isin(s.edge_mode[cut], [PRE, POST]))
    assert np.all(s.edge_mode[~cut] == LOCAL)
    # post volumes are the 1D volumes
    vol = comm_volume(a.indptr, a.indices, part, P)
    assert np.array_equal(s.post_volume, vol["pair_volume"])
    summ = s.summary()
    assert summ["post_total"] == vol["volume_total"]
    assert summ["hybrid_total"] <= min(summ["pre_total"], summ["post_total"])
    assert summ["hybrid_max_send"] == s.per_rank_send("hybrid").max()


def test_supergcn_figure4_example():
    """SuperGCN Fig. 4: remote graph of S0 with 5 cut edges; pre = post = 3, hybrid = 2.
    Remote sources on S1: 4, 5, 6; local destinations on S0: 1, 2, 3; edges 4->1, 4->2, 4->3,
    5->2, 6->2 (cover {4, 2})."""
    n = 7
    dst = [1, 2, 3, 2, 2]
    src = [4, 4, 4, 5, 6]
    a = sp.csr_matrix((np.ones(5), (dst, src)), shape=(n, n))
    a.sort_indices()
    part = np.array([0, 0, 0, 0, 1, 1, 1])
    s = mvc_split(a.indptr, a.indices, part, 2)
    assert s.pair_src.tolist() == [1] and s.pair_dst.tolist() == [0]
    assert s.post_volume.tolist() == [3] and s.pre_volume.tolist() == [3]
    assert s.hybrid_volume.tolist() == [2]
    rows = np.repeat(np.arange(n), np.diff(a.indptr))
    modes = {(int(j), int(i)): int(m) for i, j, m in zip(rows, a.indices, s.edge_mode)}
    assert modes[(4, 1)] == POST and modes[(4, 3)] == POST
    assert modes[(5, 2)] == PRE and modes[(6, 2)] == PRE
