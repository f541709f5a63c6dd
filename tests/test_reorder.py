"""--reorder: locality orders inside each part (`gcntrain.partition.reorder`), their use by the
numbering, rows read out of order from a graph file, runs that equal the unordered run, and
the default ``auto`` (rcm above a part size, none below it and on a store).
(Distributed runs with --reorder: tests/test_mpi_cli.py and tests/test_simulate.py cases.)"""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

from gcntrain.cli.main import run
from gcntrain.data.generate import rmat
from gcntrain.data.rows import read_graph_rows
from gcntrain.data.store import write_graph
from gcntrain.partition import reorder
from gcntrain.partition.reorder import auto_order, order_key, reorder_within_parts
from gcntrain.schemes.layout import renumber
from gcntrain.schemes.loading import _rows_in_order
from tests.shared_runs import h5_arrays

#: a run's output files compared array by array
OUTPUTS = ("predictions.h5", "weights.h5")


@pytest.fixture(scope="module")
def graph():
    return rmat(8, edge_factor=6, seed=2, num_features=8, num_classes=3)


@pytest.fixture(scope="module")
def graph_file(graph, tmp_path_factory):
    path = tmp_path_factory.mktemp("reorder") / "g.h5"
    write_graph(path, graph)
    return path


def test_order_keys_are_permutations_in_the_named_order(graph):
    n = graph.indptr.shape[0] - 1
    assert order_key(graph.indptr, graph.indices, "none") is None
    deg = np.diff(graph.indptr)
    key = order_key(graph.indptr, graph.indices, "degree")
    assert sorted(key.tolist()) == list(range(n))
    seq = np.argsort(key)
    assert np.all(np.diff(deg[seq]) <= 0)  # most entries first
    ties = deg[seq][:-1] == deg[seq][1:]
    assert np.all(seq[:-1][ties] < seq[1:][ties])  # ties by id
    A = sp.csr_matrix((np.ones(graph.indices.shape[0]), graph.indices, graph.indptr), (n, n))
    rcm = reverse_cuthill_mckee((A + A.T).tocsr(), symmetric_mode=True)
    assert np.array_equal(np.argsort(order_key(graph.indptr, graph.indices, "rcm")), rcm)
    with pytest.raises(ValueError, match="unknown order"):
        order_key(graph.indptr, graph.indices, "random")


def test_reordering_keeps_every_part_and_sorts_inside_it():
    rng = np.random.default_rng(0)
    part = rng.integers(0, 4, 50)
    perm, _, offsets = renumber(part, 4)
    key = rng.permutation(50)
    new, inv = reorder_within_parts(perm, offsets, key)
    assert np.array_equal(inv[new], np.arange(50))
    for p in range(4):
        block = new[offsets[p] : offsets[p + 1]]
        assert set(block) == set(perm[offsets[p] : offsets[p + 1]])
        assert np.all(np.diff(key[block]) > 0)


def test_rows_read_out_of_order_equal_rows_read_one_by_one(graph_file):
    ids = np.array([40, 3, 255, 0, 17, 16])
    got = _rows_in_order(read_graph_rows, graph_file, ids)
    for k, i in enumerate(ids):
        one = read_graph_rows(graph_file, np.array([i]))
        row = got["indices"][got["indptr"][k] : got["indptr"][k + 1]]
        assert np.array_equal(row, one["indices"])
        assert np.array_equal(got["features"][k], one["features"][0])
        assert got["labels"][k] == one["labels"][0]
        for m in ("train_mask", "val_mask", "test_mask"):
            assert got[m] is None or got[m][k] == one[m][0]


def _train(argv, capsys) -> dict:
    assert run(["train", *map(str, argv), "--json", "--quiet"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("order", ["degree", "rcm"])
def test_serial_run_equals_the_unordered_run_and_outputs_stay_in_original_ids(
    graph_file, tmp_path, capsys, order
):
    base = [graph_file, "--epochs", "4", "--dtype", "float64", "--seed", "2"]
    plain = _train([*base, "-o", tmp_path / "plain"], capsys)
    ordered = _train([*base, "--reorder", order, "-o", tmp_path / order], capsys)
    assert ordered["scheme_options"] == {"reorder": order} and plain["scheme_options"] == {}
    assert ordered["final_loss"] == pytest.approx(plain["final_loss"], rel=1e-12)
    assert ordered["test_acc"] == plain["test_acc"]
    a, b = (h5_arrays(tmp_path / d / "predictions.h5") for d in ("plain", order))
    for k in a:
        assert np.array_equal(a[k], b[k]), k
    a, b = (h5_arrays(tmp_path / d / "weights.h5") for d in ("plain", order))
    assert a
    for k in a:
        np.testing.assert_allclose(b[k], a[k], rtol=1e-10, atol=1e-14)


def test_reorder_refusals_are_one_line_exit_2(graph_file, tmp_path, capsys):
    assert run(["train", str(graph_file), "--reorder", "random", "--epochs", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--reorder must be one of auto, none, degree, rcm" in err[0]
    store = tmp_path / "store"
    assert run(["shard", str(graph_file), "-o", str(store), "--parts", "1"]) == 0
    capsys.readouterr()
    assert run(["train", str(store), "--reorder", "rcm", "--epochs", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--reorder applies to graph files" in err[0]
    argv = ["simulate", str(graph_file), "--ranks", "2", "--scheme", "vertexcut"]
    assert run([*argv, "--reorder", "rcm"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--reorder" in err[0]


def test_auto_is_rcm_above_the_part_size_and_none_at_or_below_it():
    assert auto_order(reorder.AUTO_RCM_ROWS) == "none"
    assert auto_order(reorder.AUTO_RCM_ROWS + 1) == "rcm"
    assert auto_order(0) == "none"


def _outputs(run_dir) -> dict:
    """Every array of a run's output files (`OUTPUTS`), by file and path in it."""
    return {f"{n}/{k}": v for n in OUTPUTS for k, v in h5_arrays(run_dir / n).items()}


def test_the_default_orders_like_rcm_where_a_part_is_large_and_times_it(
    graph_file, tmp_path, capsys, monkeypatch
):
    """With the part size lowered below the test graph's 256 rows, the default run is the
    explicit ``--reorder rcm`` run bit for bit, and its setup has a ``reorder`` phase; at
    the real part size it is the unordered run (no phase)."""
    base = [graph_file, "--epochs", "3", "--seed", "2"]
    small = _train([*base, "-o", tmp_path / "small"], capsys)
    plain = _train([*base, "--reorder", "none", "-o", tmp_path / "none"], capsys)
    assert "reorder" not in small["setup_phases"] and small["scheme_options"] == {}
    assert small["final_loss"] == plain["final_loss"]
    monkeypatch.setattr(reorder, "AUTO_RCM_ROWS", 100)
    auto = _train([*base, "-o", tmp_path / "auto"], capsys)
    rcm = _train([*base, "--reorder", "rcm", "-o", tmp_path / "rcm"], capsys)
    assert auto["setup_phases"]["reorder"] > 0 and rcm["setup_phases"]["reorder"] > 0
    assert auto["final_loss"] == rcm["final_loss"] and auto["scheme_options"] == {}
    a, r = _outputs(tmp_path / "auto"), _outputs(tmp_path / "rcm")
    assert a.keys() == r.keys() and len(a) > 2
    for k in a:
        assert np.array_equal(a[k], r[k]), k


def test_the_default_leaves_a_store_in_its_own_order(graph_file, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(reorder, "AUTO_RCM_ROWS", 100)
    store = tmp_path / "store"
    assert run(["shard", str(graph_file), "-o", str(store), "--parts", "1"]) == 0
    capsys.readouterr()
    got = _train([store, "--epochs", "2"], capsys)
    assert "reorder" not in got["setup_phases"]
