"""Row-selective reading of a graph file (what each MPI rank reads)."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from gcntrain.cli.main import run
from gcntrain.data.generate import rmat
from gcntrain.data.rows import read_graph_rows, windows
from gcntrain.data.store import write_graph
from gcntrain.errors import FormatError


@pytest.fixture(scope="module")
def graph_path(tmp_path_factory):
    g = rmat(10, edge_factor=8, seed=2, num_features=5, num_classes=3)
    p = tmp_path_factory.mktemp("rows") / "g.h5"
    write_graph(p, g)
    return g, p


@pytest.mark.parametrize("frac", [0.0, 0.02, 0.3, 1.0])
def test_rows_equal_whole_graph_rows(graph_path, frac):
    g, p = graph_path
    rng = np.random.default_rng(int(frac * 100))
    rows = np.sort(rng.choice(g.n, int(g.n * frac), replace=False)).astype(np.int64)
    r = read_graph_rows(p, rows)
    A = g.adjacency()[rows]
    assert np.array_equal(r["indptr"], A.indptr)
    for i in range(rows.size):  # same entries per row (order as stored)
        lo, hi = r["indptr"][i], r["indptr"][i + 1]
        assert np.array_equal(np.sort(r["indices"][lo:hi]), np.sort(A.indices[lo:hi]))
    assert np.array_equal(r["features"], g.features[rows])
    assert np.array_equal(r["labels"], g.labels[rows])
    for m in ("train_mask", "val_mask", "test_mask"):
        assert np.array_equal(r[m], getattr(g, m)[rows])


def test_windows_bound_the_rows_read():
    rng = np.random.default_rng(0)
    for P in (2, 16, 64):
        rows = np.flatnonzero(rng.integers(0, P, 200_000) == 0)
        w = windows(rows, 8)
        covered = np.zeros(200_000, bool)
        for a, b in w:
            assert not covered[a:b].any()
            covered[a:b] = True
        assert covered[rows].all()
        # each window holds at most (wanted + 8) unwanted rows: total <= 2 * wanted + 8 * |w|
        assert covered.sum() <= 2 * rows.size + 8 * len(w)
    assert windows(np.arange(50, 90), 8) == [(50, 90)]


def test_corrupt_indptr_is_a_format_error(graph_path, tmp_path):
    g, p = graph_path
    bad = tmp_path / "bad.h5"
    bad.write_bytes(p.read_bytes())
    with h5py.File(bad, "r+") as f:
        ip = f["indptr"][:]
        ip[-1] += 10
        f["indptr"][...] = ip
    with pytest.raises(FormatError, match="indptr runs from 0 to"):
        read_graph_rows(bad, np.arange(5))
    assert run(["train", str(bad), "--scheme", "1d", "--epochs", "1", "--quiet"]) == 2
