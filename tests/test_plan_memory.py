"""The planner's bounded-memory passes give the plans of the in-memory path, to the byte.

`plan_training` builds the support's pattern block by block (`gcntrain.simulate.support`)
and the schemes count their per-entry tables a range of row blocks at a time
(`gcntrain.schemes.entries`).  The reference is the in-memory path they replaced: the whole
support matrix with its values (`support_matrix`), renumbered with scipy
(`support_in_numbering`), its symmetry tested with scipy's transpose, and every per-entry
table in one pass (one block of entries)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

import gcntrain.schemes.entries as entries
import gcntrain.simulate.plangraph as plangraph
import gcntrain.simulate.run as run
import gcntrain.simulate.support as support
from gcntrain.data.generate import rmat
from gcntrain.model.normalize import support_matrix
from gcntrain.model.trainer import TrainConfig
from gcntrain.simulate.run import is_symmetric, plan_training, simulation_summary
from gcntrain.simulate.run import support_in_numbering as scipy_renumbered
from gcntrain.simulate.target import PlanTarget

PLANS = [
    ("1d", 6, {}, None),
    ("1.5d", 8, {"replication": 2}, None),
    ("p2p", 7, {}, "random"),
    ("2d", 6, {"grid": "2x3"}, None),
    ("3d", 8, {"grid": "2x2x2"}, "random"),
    ("plexus", 8, {"grid": "2x2x2"}, None),
    ("plexus", 12, {"grid": "2x3x2", "permute": "double"}, None),
]


@pytest.fixture(scope="module")
def graph():
    return rmat(9, edge_factor=5, seed=3, num_features=10, num_classes=3)


def _directed(g):
    """`g` without a third of its entries (not symmetric), with random weights."""
    rng = np.random.default_rng(0)
    keep = rng.random(g.indices.shape[0]) < 0.67
    rows = np.repeat(np.arange(g.n), np.diff(g.indptr))[keep]
    indptr = np.zeros(g.n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=g.n), out=indptr[1:])
    data = rng.uniform(0.5, 2, int(keep.sum())).astype(np.float32)
    return replace(g, indptr=indptr, indices=g.indices[keep], data=data, directed=True)


@pytest.mark.parametrize("kind", ["gcn", "sage-mean", "sage-gcn"])
@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("limit", [None, 17])
def test_pattern_and_symmetry_equal_the_scipy_path(graph, kind, directed, limit, monkeypatch):
    g = _directed(graph) if directed else graph
    if limit:
        monkeypatch.setattr(support, "BLOCK_ENTRIES", limit)
    perm = np.random.default_rng(2).permutation(g.n)
    S = support_matrix(g, kind)
    ref = scipy_renumbered(S, perm)
    for source in (g, S):
        M, symmetric = support.plan_support(source, kind, perm)
        assert symmetric == is_symmetric(S)
        assert np.array_equal(M.indptr, ref.indptr)
        assert np.array_equal(M.indices, ref.indices)
    assert is_symmetric(S) == (kind == "gcn" and not directed)
    assert support.is_symmetric(S) == is_symmetric(S)


def _reference_support(source, kind, perm):
    """The in-memory path: S with values, renumbered by scipy, symmetry by scipy."""
    S = source if sp.issparse(source) else support_matrix(source, kind)
    return scipy_renumbered(S, perm), is_symmetric(S)


def _figures(sim, config) -> dict:
    out = simulation_summary(sim, config, None, 0.0)
    del out["simulate_seconds"], out["peak_rss_bytes"]
    return out


@pytest.mark.parametrize("model", ["gcn", "sage"])
@pytest.mark.parametrize(("scheme", "P", "opts", "partition"), PLANS)
def test_bounded_memory_plans_equal_the_in_memory_plans(
    graph, monkeypatch, model, scheme, P, opts, partition
):
    config = TrainConfig(epochs=3, early_stopping=0, model=model)
    g = graph if model == "gcn" else _directed(graph)  # sage: S not symmetric

    def plan():
        sim = plan_training(PlanTarget(g, config, scheme, P, dict(opts), partition))
        return sim, _figures(sim, config), sim.table.phases()

    with monkeypatch.context() as m:
        m.setattr(run, "plan_support", _reference_support)
        m.setattr(entries, "BLOCK_ENTRIES", 1 << 40)  # one pass over all entries
        ref, ref_json, ref_phases = plan()
    with monkeypatch.context() as m:
        m.setattr(support, "BLOCK_ENTRIES", 29)
        m.setattr(entries, "BLOCK_ENTRIES", 23)  # many ranges of row blocks
        sim, got_json, got_phases = plan()
    assert got_json == ref_json
    assert ref_phases.keys() == got_phases.keys()
    for k in ref_phases:
        assert np.array_equal(ref_phases[k], got_phases[k]), k
    assert np.array_equal(ref.table.epoch_totals("work"), sim.table.epoch_totals("work"))
    fa, fb = ref.scheme.footprint(ref.ctx), sim.scheme.footprint(sim.ctx)
    assert fa.keys() == fb.keys()
    for k in fa:
        assert np.array_equal(np.asarray(fa[k]), np.asarray(fb[k])), k
    assert sim.ctx.symmetric == ref.ctx.symmetric == (model == "gcn")


def test_ranges_cover_every_block_once():
    indptr = np.array([0, 5, 5, 9, 30, 31, 40])
    offsets = np.array([0, 1, 3, 3, 6])
    for limit in (1, 4, 10, 100):
        r = entries.block_ranges(indptr, offsets, limit)
        assert r[0][0] == 0 and r[-1][1] == 4
        assert all(a < b for a, b in r) and all(r[k][1] == r[k + 1][0] for k in range(len(r) - 1))


def test_file_summary_equals_the_whole_graph(graph, tmp_path, monkeypatch):
    """A graph file's features are streamed and counted, never held: the same summary and
    the same plans as from the whole graph in memory."""
    from gcntrain.data.store import read_graph, write_graph

    X = graph.features.copy()
    X[::3, 1:] = 0  # rows with few nonzeros
    g = replace(graph, features=X)
    path = tmp_path / "g.h5"
    write_graph(path, g)
    monkeypatch.setattr(plangraph, "FEATURE_BLOCK", 50)
    monkeypatch.setattr(support, "BLOCK_ENTRIES", 37)  # the adjacency read block by block
    a, b = plangraph.read_plan_graph(path), plangraph.from_graph(read_graph(path))
    assert np.array_equal(a.stored, b.stored) and a.nonzero == b.nonzero > 0
    assert (a.num_features, a.itemsize, a.masks) == (b.num_features, b.itemsize, b.masks)
    assert np.array_equal(a.labels, b.labels)
    config = TrainConfig(epochs=2, early_stopping=0)
    for scheme, P, opts in (("p2p", 5, {}), ("2d", 6, {"grid": "2x3"})):
        one = plan_training(PlanTarget(str(path), config, scheme, P, dict(opts)))
        two = plan_training(PlanTarget(read_graph(path), config, scheme, P, dict(opts)))
        assert _figures(one, config) == _figures(two, config)


@pytest.mark.parametrize("seed", range(6))
def test_symmetry_test_equals_scipy_on_near_symmetric_matrices(seed):
    rng = np.random.default_rng(seed)
    A = sp.random(40, 40, density=0.15, random_state=seed, format="csr")
    S = (A + A.T).tocsr()
    S.sort_indices()
    k = rng.integers(S.nnz)
    S.data[k] += [0.0, 1e-14, 1e-9, -S.data[k], 1.0, 0.0][seed]  # tiny, small, zero, big
    if seed == 5:
        S = sp.csr_matrix(sp.triu(S))  # entries without a mirror
    assert support.is_symmetric(S) == is_symmetric(S)
