"""Synthetic generators (R-MAT, SBM, grid, default data set) and `gcntrain generate`."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from gcntrain.cli.main import run
from gcntrain.data.generate import (
    default_dataset,
    expected_homophily,
    rmat,
    rmat_edges,
    rmat_generated,
    road_grid,
    road_grid_generated,
    sbm,
    sbm_generated,
    sbm_probabilities,
)
from gcntrain.errors import InputError

ARRAYS = ("indptr", "indices", "features", "labels", "train_mask", "val_mask", "test_mask")


def _same(g1, g2) -> bool:
    return all(np.array_equal(getattr(g1, a), getattr(g2, a)) for a in ARRAYS)


def _check_simple_undirected(g) -> None:
    A = g.adjacency()
    assert (A - A.T).count_nonzero() == 0
    assert g.self_loop_count() == 0
    for i in range(0, g.n, max(1, g.n // 200)):  # sorted, no duplicates
        assert np.all(np.diff(g.indices[g.indptr[i] : g.indptr[i + 1]]) > 0)
    masks = np.stack([g.train_mask, g.val_mask, g.test_mask])
    assert masks.sum(axis=0).max() <= 1  # disjoint


def _intra_fraction(g) -> float:
    rows = np.repeat(np.arange(g.n), np.diff(g.indptr))
    return float(np.mean(g.labels[rows] == g.labels[g.indices]))


# --------------------------------------------------------------------------------------
# R-MAT


def test_rmat_deterministic_and_seed_dependent():
    g1, g2, g3 = rmat(10, 8, seed=3), rmat(10, 8, seed=3), rmat(10, 8, seed=4)
    assert _same(g1, g2) and g1.content_hash() == g2.content_hash()
    assert not np.array_equal(g1.indices, g3.indices)
    _check_simple_undirected(g1)
    assert g1.n == 1024 and g1.num_features == 32 and g1.num_classes == 4
    assert g1.features.dtype == np.float32
    # at most edge_factor * n undirected edges survive (duplicates/self-loops removed)
    assert 0.5 * 8 * 1024 < g1.num_undirected_edges() <= 8 * 1024
    sizes = [int(m.sum()) for m in (g1.train_mask, g1.val_mask, g1.test_mask)]
    assert sizes == [614, 205, 205]


def test_rmat_quadrant_probabilities_and_skew():
    rng = np.random.default_rng(0)
    a, b, c = 0.57, 0.19, 0.19
    src, dst = rmat_edges(8, 200_000, a, b, c, rng)
    assert src.max() < 256 and dst.max() < 256
    for level in (0, 7):  # every bit level draws the quadrant independently
        rb, cb = (src >> level) & 1, (dst >> level) & 1
        freq = [np.mean((rb == i) & (cb == j)) for i, j in ((0, 0), (0, 1), (1, 0), (1, 1))]
        np.testing.assert_allclose(freq, [a, b, c, 1 - a - b - c], atol=0.005)
    g = rmat(12, 16, seed=1)
    deg = np.diff(g.indptr)
    assert deg.max() > 20 * deg.mean()  # heavy-tailed, unlike a uniform random graph


def test_rmat_directed_and_bad_parameters():
    g = rmat(8, 4, seed=0, symmetrize=False)
    assert g.directed and g.self_loop_count() == 0
    with pytest.raises(InputError):
        rmat(8, a=0.6, b=0.3, c=0.3)
    with pytest.raises(InputError):
        rmat(0)


# --------------------------------------------------------------------------------------
# SBM and the default data set


def test_sbm_homophily_and_degree_as_designed():
    n, k, p_in, p_out = 3000, 6, 0.02, 0.002
    g = sbm(n, k, p_in, p_out, 50, seed=11)
    _check_simple_undirected(g)
    sizes = np.bincount(g.labels, minlength=k)
    assert sizes.max() - sizes.min() <= 1
    # expected counts from the block sizes (independent of the generator's sampling)
    intra_pairs = float(np.sum(sizes * (sizes - 1) / 2))
    inter_pairs = n * (n - 1) / 2 - intra_pairs
    exp_edges = p_in * intra_pairs + p_out * inter_pairs
    m = g.num_undirected_edges()
    assert abs(m - exp_edges) < 5 * np.sqrt(exp_edges)
    h = p_in * intra_pairs / exp_edges
    assert expected_homophily(sizes, p_in, p_out) == pytest.approx(h)
    se = np.sqrt(h * (1 - h) / m)
    assert abs(_intra_fraction(g) - h) < 5 * se


def test_sbm_from_degree_and_homophily():
    p_in, p_out = sbm_probabilities(2000, 4, 12.0, 0.8)
    g = sbm(2000, 4, num_features=20, seed=2, avg_degree=12.0, homophily=0.8)
    assert g.extra["p_in"] == pytest.approx(p_in) and g.extra["p_out"] == pytest.approx(p_out)
    assert abs(g.nnz / g.n - 12.0) < 0.6
    assert abs(_intra_fraction(g) - 0.8) < 0.03


def test_sbm_deterministic_splits_and_small_n():
    g1 = sbm(600, 3, num_features=16, seed=5)
    g2 = sbm(600, 3, num_features=16, seed=5)
    g3 = sbm(600, 3, num_features=16, seed=6)
    assert _same(g1, g2)
    assert not np.array_equal(g1.indices, g3.indices)
    assert not np.array_equal(g1.features, g3.features)
    for c in range(3):
        assert int((g1.train_mask & (g1.labels == c)).sum()) == 20
    assert int(g1.val_mask.sum()) == int(g1.test_mask.sum()) == (600 - 60) // 3
    tiny = sbm(30, 3, num_features=4, seed=0)
    _check_simple_undirected(tiny)
    # classes of 10 nodes: 10 // 5 = 2 training nodes each; val and test a third of the rest
    assert tiny.train_mask.sum() == 6 and tiny.val_mask.sum() == tiny.test_mask.sum() == 8


def _ridge_accuracy(F, y, train, test, k, lam=0.1):
    """Closed-form one-vs-all ridge classifier: an independent learnability probe."""
    Ft = np.hstack([F[train], np.ones((int(train.sum()), 1))])
    W = np.linalg.solve(Ft.T @ Ft + lam * np.eye(Ft.shape[1]), Ft.T @ np.eye(k)[y[train]])
    pred = np.argmax(np.hstack([F[test], np.ones((int(test.sum()), 1))]) @ W, axis=1)
    return float(np.mean(pred == y[test]))


def test_default_dataset_is_learnable_with_the_graph_only():
    g = default_dataset()
    assert g.name == "sbm-default" and g.n == 4000 and g.num_classes == 8
    assert 14 < g.nnz / g.n < 18
    assert _same(g, default_dataset())
    _check_simple_undirected(g)
    assert [int(m.sum()) for m in (g.train_mask, g.val_mask, g.test_mask)] == [160, 500, 1000]
    A = g.adjacency() + sp.identity(g.n)
    d = np.asarray(A.sum(axis=1)).ravel() ** -0.5
    S = sp.diags(d) @ A @ sp.diags(d)
    X = g.features.astype(np.float64)
    X /= np.maximum(X.sum(axis=1, keepdims=True), 1)
    args = (g.labels, g.train_mask, g.test_mask, g.num_classes)
    acc_features = _ridge_accuracy(X, *args)
    acc_graph = _ridge_accuracy(S @ (S @ X), *args)
    chance = 1 / g.num_classes
    assert 2 * chance < acc_features < 0.65  # features alone: informative but weak
    assert acc_graph > 0.75 and acc_graph > acc_features + 0.2


# --------------------------------------------------------------------------------------
# grid


def test_road_grid_structure():
    rows, cols = 20, 30
    g = road_grid(rows, cols, seed=1, p_delete=0.0, p_diagonal=0.0)
    _check_simple_undirected(g)
    assert g.n == rows * cols
    assert g.num_undirected_edges() == rows * (cols - 1) + (rows - 1) * cols
    ids = np.arange(g.n)
    r, c = ids // cols, ids % cols
    A = g.adjacency().tocoo()
    assert np.all(np.abs(r[A.row] - r[A.col]) + np.abs(c[A.row] - c[A.col]) == 1)
    gr = road_grid(rows, cols, seed=1, p_delete=0.1, p_diagonal=0.1)
    _check_simple_undirected(gr)
    A = gr.adjacency().tocoo()
    dr, dc = np.abs(r[A.row] - r[A.col]), np.abs(c[A.row] - c[A.col])
    assert np.all((dr <= 1) & (dc <= 1))
    assert np.any((dr == 1) & (dc == 1))  # some diagonals
    full = rows * (cols - 1) + (rows - 1) * cols
    lattice = int(np.sum(dr + dc == 1)) // 2
    assert 0.8 * full < lattice < full
    assert _same(gr, road_grid(rows, cols, seed=1, p_delete=0.1, p_diagonal=0.1))
    assert not np.array_equal(gr.indices, road_grid(rows, cols, seed=2, p_delete=0.1).indices)
    np.testing.assert_array_equal(gr.labels, c * 4 // cols)


# --------------------------------------------------------------------------------------
# CLI


def test_cli_generate_sbm_writes_and_matches(tmp_path, capsys):
    from gcntrain.data.store import read_graph

    out = tmp_path / "s.h5"
    argv = [
        "generate",
        "sbm",
        "-o",
        str(out),
        "--n",
        "500",
        "--classes",
        "4",
        "--features",
        "12",
        "--seed",
        "9",
        "--json",
    ]
    assert run(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    ref = sbm(500, 4, num_features=12, seed=9)
    g = read_graph(str(out))
    assert _same(g, ref)
    assert summary["nodes"] == 500 and summary["undirected_edges"] == ref.num_undirected_edges()


def test_cli_generate_rmat_grid_default(tmp_path, capsys):
    from gcntrain.data.store import read_graph

    assert (
        run(
            [
                "generate",
                "rmat",
                "-o",
                str(tmp_path / "r.h5"),
                "--scale",
                "7",
                "--edge-factor",
                "4",
                "--seed",
                "2",
            ]
        )
        == 0
    )
    assert _same(read_graph(str(tmp_path / "r.h5")), rmat(7, 4, seed=2))
    assert (
        run(["generate", "grid", "-o", str(tmp_path / "g.h5"), "--rows", "5", "--cols", "6"]) == 0
    )
    assert read_graph(str(tmp_path / "g.h5")).n == 30
    assert run(["generate", "default", "-o", str(tmp_path / "d.h5")]) == 0
    assert read_graph(str(tmp_path / "d.h5")).name == "sbm-default"
    capsys.readouterr()


def test_cli_generate_errors_exit_2(tmp_path, capsys):
    assert run(["generate", "torus", "-o", str(tmp_path / "x.h5")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert run(["generate", "rmat", "-o", str(tmp_path / "x.h5"), "--scale", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("gcntrain: error: ") and "scale" in err and err.count("\n") == 1
    assert not (tmp_path / "x.h5").exists()


# --------------------------------------------------------------------------------------
# bounded-memory building and streamed writing (issue 36)


def _per_level_reference(scale, num_edges, a, b, c, rng, batch):
    """The R-MAT draw written plainly: per batch and level, the row draws, then the column
    draws (the definition the kernel must keep)."""
    src = np.zeros(num_edges, np.int64)
    dst = np.zeros(num_edges, np.int64)
    ab = a + b
    for lo in range(0, num_edges, batch):
        hi = min(num_edges, lo + batch)
        for level in range(scale):
            row = rng.random(hi - lo) > ab
            col = rng.random(hi - lo) > np.where(row, c / (1 - ab), a / ab)
            src[lo:hi] |= row.astype(np.int64) << level
            dst[lo:hi] |= col.astype(np.int64) << level
    return src, dst


def test_rmat_edges_equal_the_per_level_draw_over_several_batches():
    args = (9, 5000, 0.57, 0.19, 0.19)
    ref = _per_level_reference(*args, np.random.default_rng(7), batch=1234)
    got = rmat_edges(*args, np.random.default_rng(7), dtype=np.int32, batch=1234)
    assert got[0].dtype == np.int32
    np.testing.assert_array_equal(got[0], ref[0])
    np.testing.assert_array_equal(got[1], ref[1])
    other = rmat_edges(*args, np.random.default_rng(7), batch=1000)
    assert not np.array_equal(other[0], ref[0])  # the batch is part of the draw


def test_csr_from_edges_equals_sort_merge_and_symmetrize():
    from gcntrain.data.generators.build import csr_from_edges
    from gcntrain.data.preprocess import coo_to_csr, symmetrize

    rng = np.random.default_rng(3)
    n = 300
    src = rng.integers(0, n, 20_000)
    dst = rng.integers(0, n, 20_000)
    src[:400] = 5  # a hub row longer than the insertion-sort cutoff, with repeats
    dst[:400] = rng.integers(0, 60, 400)
    src[400:450] = dst[400:450]  # self-loops
    keep = src != dst
    for symmetric in (True, False):
        indptr, indices = csr_from_edges(src.astype(np.int32), dst.astype(np.int32), n, symmetric)
        ref_ptr, ref_ind, _ = coo_to_csr(src[keep], dst[keep], None, n, n)
        if symmetric:
            ref_ptr, ref_ind, _ = symmetrize(ref_ptr, ref_ind, None)
        np.testing.assert_array_equal(indptr, ref_ptr)
        np.testing.assert_array_equal(indices, ref_ind)
        assert indices.dtype == np.int32 and indptr.dtype == np.int64
    with pytest.raises(ValueError):
        csr_from_edges(np.array([0, 3]), np.array([1, 0]), 3, True)


@pytest.mark.parametrize(
    "make, args, kwargs",
    [
        (rmat_generated, (9, 6), dict(seed=4, num_features=5, num_classes=3)),
        (rmat_generated, (8, 4), dict(seed=1, symmetrize=False, num_features=0)),
        (sbm_generated, (700, 4), dict(num_features=9, seed=2)),
        (road_grid_generated, (17, 23), dict(seed=5, p_diagonal=0.2)),
    ],
    ids=["rmat", "rmat-directed-nofeatures", "sbm", "grid"],
)
def test_streamed_file_is_the_file_of_the_graph_in_memory(tmp_path, make, args, kwargs):
    """Written in small blocks and slices (so every array takes several), the file equals
    the one `write_graph` writes for the same graph: attributes, content hash, arrays."""
    from gcntrain.cli.convert_cmd import graph_summary
    from gcntrain.data.generators.write import write_generated
    from gcntrain.data.store import read_graph, read_meta, write_graph

    ref = make(*args, **kwargs).to_graph()
    write_graph(tmp_path / "ref.h5", ref)
    g = make(*args, **kwargs)
    written = write_generated(tmp_path / "s.h5", g, block_rows=37, slice_entries=101)
    assert read_meta(tmp_path / "s.h5") == read_meta(tmp_path / "ref.h5")
    g = read_graph(tmp_path / "s.h5")  # validates, checks the content hash
    assert _same(g, ref) and written["content_hash"] == ref.content_hash()
    summary = graph_summary(ref)
    for key in ("nodes", "nnz", "undirected_edges", "self_loops", "train", "val", "test"):
        assert written[key] == summary[key], key


def test_generated_node_data_are_drawn_once_and_bad_structure_is_refused(tmp_path):
    from gcntrain.data.generators.write import structure_counts, write_generated
    from gcntrain.errors import FormatError

    g = rmat_generated(6, 4, seed=0)
    g.to_graph()
    with pytest.raises(RuntimeError, match="already drawn"):
        g.to_graph()
    bad = rmat_generated(6, 4, seed=0)
    row = int(np.flatnonzero(np.diff(bad.indptr) >= 2)[0])
    lo = bad.indptr[row]
    bad.indices[lo], bad.indices[lo + 1] = bad.indices[lo + 1], bad.indices[lo]
    with pytest.raises(FormatError, match=f"row {row} "):
        structure_counts(bad)
    with pytest.raises(FormatError):
        write_generated(tmp_path / "bad.h5", bad)
    assert not (tmp_path / "bad.h5").exists()


def test_cli_generate_summary_is_convert_summary_of_the_file(tmp_path, capsys):
    from gcntrain.cli.convert_cmd import graph_summary
    from gcntrain.data.store import read_graph

    out = tmp_path / "d.h5"
    argv = ["generate", "rmat", "-o", str(out), "--scale", "8", "--directed", "--json"]
    assert run([*argv, "--edge-factor", "6", "--seed", "3"]) == 0
    summary = json.loads(capsys.readouterr().out)
    expected = graph_summary(read_graph(str(out)))
    assert list(summary)[: len(expected)] == list(expected)
    assert {k: summary[k] for k in expected} == expected
    assert summary["seed"] == 3 and summary["out"] == str(out)
    assert expected["undirected_edges"] < expected["nnz"]  # some pairs stored both ways
