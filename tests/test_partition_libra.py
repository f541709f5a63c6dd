"""Libra vertex-cut: every edge once, replica lists = parts of incident edges, the greedy rules
replayed step by step, roots, and the random-edge baseline."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
import pytest
import scipy.sparse as sp

from gcntrain.data.generate import rmat
from gcntrain.partition.libra import libra_partition, random_edge_partition


def sym_random(n, density, seed, loops=True):
    a = sp.random(n, n, density=density, random_state=seed, format="csr")
    a = sp.csr_matrix(a + a.T + (sp.eye(n) if loops else 0))
    a.sort_indices()
    return a


def edges_of(a):
    rows = np.repeat(np.arange(a.shape[0]), np.diff(a.indptr))
    return list(zip(rows.tolist(), a.indices.tolist()))


def check_vertex_cut(a, vc, P):
    edges = edges_of(a)
    assert vc.edge_part.shape == (len(edges),)
    assert vc.edge_part.min() >= 0 and vc.edge_part.max() < P
    parts_of = defaultdict(set)
    count = defaultdict(Counter)
    for (u, v), c in zip(edges, vc.edge_part.tolist()):
        parts_of[u].add(c)
        parts_of[v].add(c)
        count[u][c] += 1
        if v != u:
            count[v][c] += 1
    n = a.shape[0]
    for x in range(n):
        reps = vc.replica_parts[vc.replica_ptr[x] : vc.replica_ptr[x + 1]].tolist()
        assert reps == sorted(parts_of[x])  # sorted, no duplicates, exactly the edge parts
        if count[x]:
            best = max(count[x].values())
            assert vc.root[x] == min(c for c, k in count[x].items() if k == best)
        else:
            assert vc.root[x] == -1
    has = [x for x in range(n) if parts_of[x]]
    rf = sum(len(parts_of[x]) for x in has) / len(has)
    assert vc.replication_factor == pytest.approx(rf)
    assert vc.replication_factor >= 1.0
    loads = np.bincount(vc.edge_part, minlength=P)
    assert vc.edge_balance == pytest.approx(loads.max() / loads.mean())


@pytest.mark.parametrize("P", [1, 2, 3, 8])
@pytest.mark.parametrize("rule", ["libra", "remaining"])
def test_libra_vertex_cut_is_consistent(P, rule):
    a = sym_random(60, 0.08, P)
    vc = libra_partition(a.indptr, a.indices, P, seed=2, rule=rule)
    check_vertex_cut(a, vc, P)


def test_random_edge_baseline_is_consistent_and_balanced():
    a = sym_random(60, 0.08, 1)
    vc = random_edge_partition(a.indptr, a.indices, 4, seed=0)
    check_vertex_cut(a, vc, 4)
    loads = np.bincount(vc.edge_part, minlength=4)
    assert loads.max() - loads.min() <= 1


@pytest.mark.parametrize("rule", ["libra", "remaining"])
def test_greedy_rules_replayed(rule):
    """Replay the natural-order stream: each edge's part must be allowed by the rule that
    applies and be least loaded among the allowed parts."""
    a = sym_random(50, 0.1, 9)
    P = 4
    vc = libra_partition(a.indptr, a.indices, P, seed=1, rule=rule, order="natural")
    edges = edges_of(a)
    deg = Counter()
    for u, v in edges:
        deg[u] += 1
        if v != u:
            deg[v] += 1
    remaining = dict(deg)
    reps = defaultdict(set)
    load = [0] * P
    for (u, v), c in zip(edges, vc.edge_part.tolist()):
        Au, Av = reps[u], reps[v]
        if not Au and not Av:
            allowed = set(range(P))
        elif Au and not Av:
            allowed = set(Au)
        elif Av and not Au:
            allowed = set(Av)
        elif Au & Av:
            allowed = Au & Av
        else:
            if rule == "libra":
                allowed = set(Au) if deg[u] < deg[v] else set(Av)
            else:
                allowed = set(Au) if remaining[u] > remaining[v] else set(Av)
        assert c in allowed
        assert load[c] == min(load[x] for x in allowed)
        load[c] += 1
        reps[u].add(c)
        reps[v].add(c)
        remaining[u] -= 1
        if v != u:
            remaining[v] -= 1


def test_natural_order_collapses_random_order_balances():
    """On a path streamed row by row every edge touches the first part (documented), a
    random stream spreads the edges."""
    n = 400
    a = sp.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1], format="csr")
    a.sort_indices()
    nat = libra_partition(a.indptr, a.indices, 4, seed=0, order="natural")
    rnd = libra_partition(a.indptr, a.indices, 4, seed=0, order="random")
    assert nat.edge_balance == pytest.approx(4.0)
    assert rnd.edge_balance < 1.1


def test_libra_beats_random_edges_and_grows_with_parts():
    g = rmat(10, 8, seed=0)  # 1024 vertices, power-law degrees
    rfs, base = [], []
    for P in (2, 4, 8):
        rfs.append(libra_partition(g.indptr, g.indices, P, seed=0).replication_factor)
        base.append(random_edge_partition(g.indptr, g.indices, P, seed=0).replication_factor)
    assert rfs == sorted(rfs) and rfs[0] < rfs[-1]
    assert all(x < y for x, y in zip(rfs, base))


def test_seeded_reproducible():
    a = sym_random(80, 0.05, 4)
    v1 = libra_partition(a.indptr, a.indices, 3, seed=11)
    v2 = libra_partition(a.indptr, a.indices, 3, seed=11)
    assert np.array_equal(v1.edge_part, v2.edge_part)
