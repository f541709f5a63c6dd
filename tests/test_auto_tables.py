"""The block tables that ``--scheme auto``'s bound builds for every configuration of the
block schemes (Plexus' shard tables, the 2D / split-3D stage tables and blocks) are
counted from per-node labels (`gcntrain.schemes.labeltables`): they equal, entry for
entry, the per-entry lookups they replace, over many ranges of rows, with and without
Plexus' double permutation, on a directed graph (S and S^T differ)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from gcntrain.data.generate import rmat
from gcntrain.data.store import write_graph
from gcntrain.model.trainer import TrainConfig
from gcntrain.schemes import entries
from gcntrain.schemes.labeltables import label_counts
from gcntrain.schemes.layout import owner_of
from gcntrain.schemes.plexus import cost as plexus_cost
from gcntrain.simulate.run import prepare_training
from gcntrain.simulate.target import PlanTarget

CONFIG = TrainConfig(epochs=1)


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    path = tmp_path_factory.mktemp("tables") / "rmat.h5"
    g = rmat(8, edge_factor=5, seed=7, symmetrize=False, num_features=9, num_classes=3)
    write_graph(path, g)
    return path


def _entries(M):
    M = sp.csr_matrix(M)
    rows = np.repeat(np.arange(M.shape[0]), np.diff(M.indptr))
    return rows, np.asarray(M.indices, dtype=np.int64)


def test_label_counts_equals_a_count_of_every_entry():
    rng = np.random.default_rng(5)
    M = sp.random(97, 97, density=0.07, format="csr", random_state=6)
    rl, cl = rng.integers(0, 3, 97), rng.integers(0, 5, 97)
    rows, cols = _entries(M)
    want = np.zeros((3, 5), dtype=np.int64)
    np.add.at(want, (rl[rows], cl[cols]), 1)
    assert want.sum() == M.nnz > 0
    for limit in (None, 1, 40):  # one range, a row at a time, several ranges
        got = label_counts(M, rl, cl, (3, 5), limit)
        assert got.dtype == np.int64 and np.array_equal(got, want)


def _plexus_reference(sim) -> np.ndarray:
    """(keys, P) shard entries per rank, from `shard_coords` of every entry."""
    lay, ctx = sim.ctx.layout, sim.ctx
    rows, cols = _entries(ctx.support)
    orig = plexus_cost._load_orig(lay)
    out = np.zeros((len(lay.shard_keys), lay.size), dtype=np.int64)
    c = lay.coords_all
    for s, key in enumerate(lay.shard_keys):
        _, q, r = key
        qi, ri, _, _ = lay.shard_coords(key, orig[rows], orig[cols])
        tab = np.bincount(qi * lay.dims[r] + ri, minlength=lay.dims[q] * lay.dims[r])
        out[s] = tab[c[:, q] * lay.dims[r] + c[:, r]]
    return out


@pytest.mark.parametrize(
    "grid,permute", [("2x2x1", "none"), ("1x2x2", "double"), ("4x1x1", "double")]
)
def test_plexus_shard_tables_equal_the_per_entry_counts(graph, monkeypatch, grid, permute):
    monkeypatch.setattr(entries, "BLOCK_ENTRIES", 50)  # many ranges of rows
    opts = {"grid": grid, "permute": permute}
    sim = prepare_training(PlanTarget(graph, CONFIG, "plexus", 4, opts, "block"))
    assert len(sim.ctx.layout.shard_keys) >= 1
    got = sim.scheme.shard_nnz(sim.ctx)
    assert got.sum() > 0
    assert np.array_equal(got, _plexus_reference(sim))


def _stage_reference(lay, M) -> np.ndarray:
    rows, cols = _entries(M)
    a = lay.stages[0]
    idx = owner_of(rows, lay.offsets) * a.shape[0] + np.searchsorted(a, cols, "right") - 1
    return np.bincount(idx, minlength=lay.pr * a.shape[0]).reshape(lay.pr, a.shape[0])


@pytest.mark.parametrize(
    "scheme,grid,part",
    [("2d", "2x2", "random"), ("3d", "2x1x2", "block"), ("3d", "1x2x2", "random")],
)
def test_stage_tables_and_blocks_equal_the_per_entry_counts(graph, monkeypatch, scheme, grid, part):
    from gcntrain.schemes.two_d.layout import block_of

    monkeypatch.setattr(entries, "BLOCK_ENTRIES", 50)
    sim = prepare_training(PlanTarget(graph, CONFIG, scheme, 4, {"grid": grid}, part))
    ctx, sch, lay = sim.ctx, sim.scheme, sim.ctx.layout
    assert not ctx.symmetric  # a directed graph: the table of S^T is its own
    for which, M in (("f", ctx.support), ("t", ctx.transpose())):
        assert np.array_equal(sch.stage_nnz(ctx, which), _stage_reference(lay, M))
    rows, cols = _entries(ctx.support)
    blocks = np.bincount(block_of(lay, rows, cols), minlength=lay.size)
    assert blocks.sum() == ctx.support.nnz
    assert np.array_equal(sch._block_nnz(ctx), blocks)
