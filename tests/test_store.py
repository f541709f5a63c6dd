"""Single-file HDF5 graph store: round trips, dtypes, metadata, atomic writes."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
import scipy.sparse as sp

from gcntrain.data.graph import Graph
from gcntrain.data.store import read_graph, read_meta, write_graph
from gcntrain.errors import FormatError, InputError


def make_graph(
    n: int = 40, seed: int = 0, *, weighted: bool = True, f: int = 6, classes: int = 3
) -> Graph:
    """Random symmetric graph with self loops, features, labels (some -1) and disjoint masks."""
    rng = np.random.default_rng(seed)
    a = sp.random(n, n, density=0.15, random_state=seed, format="csr", dtype=np.float64)
    a = (a + a.T + sp.diags(rng.random(n) < 0.3, dtype=np.float64)).tocsr()
    a.sort_indices()
    split = rng.permutation(n)
    train = np.zeros(n, bool)
    val = np.zeros(n, bool)
    test = np.zeros(n, bool)
    train[split[:10]] = True
    val[split[10:15]] = True
    test[split[15:25]] = True
    labels = rng.integers(0, classes, n)
    labels[rng.random(n) < 0.2] = -1
    return Graph(
        indptr=a.indptr.astype(np.int64),
        indices=a.indices.astype(np.int64),
        data=a.data.astype(np.float32) if weighted else None,
        features=rng.standard_normal((n, f)).astype(np.float32),
        labels=labels,
        train_mask=train,
        val_mask=val,
        test_mask=test,
        name="random-test",
        directed=False,
        num_classes=classes,
        extra={"source": "test", "seed": seed},
    )


ARRAYS = ("indptr", "indices", "data", "features", "labels", "train_mask", "val_mask", "test_mask")


def assert_same_graph(a: Graph, b: Graph) -> None:
    for name in ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert np.array_equal(x, y), name
    assert a.name == b.name and a.directed == b.directed and a.num_classes == b.num_classes


def test_round_trip_all_arrays_and_attributes(tmp_path):
    g = make_graph()
    path = tmp_path / "g.h5"
    write_graph(path, g)
    h = read_graph(path)
    assert_same_graph(g, h)
    assert h.extra == g.extra
    assert h.content_hash() == g.content_hash()
    # stored dtypes as specified in docs/format.md
    assert h.indptr.dtype == np.int64 and h.indices.dtype == np.int32
    assert h.data.dtype == np.float32 and h.features.dtype == np.float32
    assert h.labels.dtype == np.int64 and h.train_mask.dtype == np.bool_
    meta = read_meta(path)
    attrs = meta["attrs"]
    adj = g.adjacency()
    assert attrs["format"] == "gcntrain-graph" and attrs["format_version"] == 1
    assert attrs["n"] == adj.shape[0] and attrs["nnz"] == adj.nnz
    assert attrs["self_loops"] == int(np.count_nonzero(adj.diagonal()))
    assert attrs["content_hash"] == g.content_hash()
    assert attrs["num_classes"] == 3 and attrs["num_features"] == 6 and attrs["directed"] == 0
    assert meta["datasets"]["features"] == {"shape": [40, 6], "dtype": "float32"}
    assert meta["datasets"]["train_mask"]["dtype"] == "uint8"


def test_round_trip_minimal_graph(tmp_path):
    """Only the structure: optional arrays come back absent, num_classes None, directed kept."""
    g = Graph(
        indptr=np.array([0, 2, 3, 3], np.int64),
        indices=np.array([1, 2, 0], np.int32),
        name="tiny",
        directed=True,
    )
    write_graph(tmp_path / "t.h5", g)
    h = read_graph(tmp_path / "t.h5")
    assert_same_graph(g, h)
    assert h.num_classes is None and h.directed is True and h.extra == {}
    assert read_meta(tmp_path / "t.h5")["attrs"]["num_classes"] == -1


def test_gzip_round_trip_is_identical(tmp_path):
    g = make_graph(seed=3)
    write_graph(tmp_path / "z.h5", g, compression="gzip")
    assert_same_graph(g, read_graph(tmp_path / "z.h5"))
    with h5py.File(tmp_path / "z.h5", "r") as f:
        assert f["features"].compression == "gzip"
        assert f["indices"].compression == "gzip"


def test_int64_input_indices_keep_hash(tmp_path):
    g = make_graph(seed=4)
    assert g.indices.dtype == np.int64
    expected = g.content_hash()
    write_graph(tmp_path / "g.h5", g)
    assert read_meta(tmp_path / "g.h5")["attrs"]["content_hash"] == expected


def test_float64_features_are_stored_float32(tmp_path):
    g = make_graph(seed=5)
    g64 = Graph(indptr=g.indptr, indices=g.indices, features=g.features.astype(np.float64))
    write_graph(tmp_path / "g.h5", g64)
    h = read_graph(tmp_path / "g.h5")
    assert h.features.dtype == np.float32
    assert np.array_equal(h.features, g.features)


def test_read_meta_reads_no_array(tmp_path, monkeypatch):
    write_graph(tmp_path / "g.h5", make_graph())

    def forbidden(self, *args, **kwargs):
        raise AssertionError("read_meta read a dataset")

    monkeypatch.setattr(h5py.Dataset, "__getitem__", forbidden)
    monkeypatch.setattr(h5py.Dataset, "read_direct", forbidden)  # how read_graph reads
    meta = read_meta(tmp_path / "g.h5")
    assert meta["attrs"]["n"] == 40
    with pytest.raises(AssertionError):
        read_graph(tmp_path / "g.h5")


def test_write_is_atomic_and_leaves_no_temp_files(tmp_path):
    good = make_graph(seed=1)
    path = tmp_path / "g.h5"
    write_graph(path, good)
    bad = make_graph(seed=2)
    bad.features[3, 1] = np.nan
    with pytest.raises(FormatError, match="row 3"):
        write_graph(path, bad)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.h5"]
    assert_same_graph(good, read_graph(path))  # the old file is untouched


def test_write_into_missing_directory_is_input_error(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        write_graph(tmp_path / "nope" / "g.h5", make_graph())


def test_validate_false_skips_array_checks(tmp_path):
    path = tmp_path / "g.h5"
    write_graph(path, make_graph())
    with h5py.File(path, "a") as f:
        f.attrs["content_hash"] = "0" * 64
    with pytest.raises(FormatError, match="content hash mismatch"):
        read_graph(path)
    assert read_graph(path, validate=False).n == 40


def test_empty_graph_round_trip(tmp_path):
    g = Graph(
        indptr=np.zeros(1, np.int64),
        indices=np.zeros(0, np.int32),
        features=np.zeros((0, 3), np.float32),
    )
    write_graph(tmp_path / "e.h5", g)
    h = read_graph(tmp_path / "e.h5")
    assert h.n == 0 and h.nnz == 0 and h.features.shape == (0, 3)
