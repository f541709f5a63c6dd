"""Converters (Planetoid, SNAP, MTX, npz, CSV), preprocessing options and `gcntrain convert`."""

from __future__ import annotations

import gzip
import os
import pickle
import warnings
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from gcntrain.cli.main import run
from gcntrain.data import preprocess
from gcntrain.data.convert import convert_source, infer_format, load_planetoid
from gcntrain.errors import FormatError, InputError


def _shared() -> Path:
    p = Path(__file__).resolve().parents[1].parent / "shared"
    return p if p.is_dir() else Path("/work/shared")


DATA = _shared() / "datasets"
PLANETOID = DATA / "planetoid"


def _pickle(part: str, name: str = "cora"):
    with open(PLANETOID / f"ind.{name}.{part}", "rb") as f, warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # scipy.sparse.csr module path
        return pickle.load(f, encoding="latin1")


def _test_index(name: str) -> np.ndarray:
    return np.array([int(s) for s in (PLANETOID / f"ind.{name}.test.index").read_text().split()])


def _entries(g) -> set[tuple[int, int]]:
    A = g.adjacency().tocoo()
    return set(zip(A.row.tolist(), A.col.tolist(), strict=True))


def _assert_canonical(g) -> None:
    """Sorted column indices within rows and no duplicates."""
    for i in range(g.n):
        row = g.indices[g.indptr[i] : g.indptr[i + 1]]
        assert np.all(np.diff(row) > 0), f"row {i} not strictly increasing"


# --------------------------------------------------------------------------------------
# Planetoid


@pytest.fixture(scope="module")
def cora():
    return load_planetoid(str(PLANETOID / "ind.cora"))


@pytest.fixture(scope="module")
def citeseer():
    return convert_source(str(PLANETOID / "ind.citeseer"))


def test_cora_counts(cora):
    assert cora.n == 2708
    assert cora.nnz == 10556
    assert cora.num_undirected_edges() == 5278
    assert cora.num_features == 1433 and cora.features.dtype == np.float32
    assert cora.num_classes == 7
    assert [int(m.sum()) for m in (cora.train_mask, cora.val_mask, cora.test_mask)] == [
        140,
        500,
        1000,
    ]
    assert not cora.directed and cora.data is None
    _assert_canonical(cora)


def test_cora_adjacency_equals_networkx(cora):
    graph = _pickle("graph")
    G = nx.from_dict_of_lists(graph)
    ref = nx.adjacency_matrix(G, nodelist=range(len(graph))).tocsr()
    assert ref.shape == (cora.n, cora.n)
    diff = ref - cora.adjacency()
    assert diff.count_nonzero() == 0
    assert np.all(ref.data == 1)


def test_citeseer_adjacency_equals_networkx_with_self_loops(citeseer):
    graph = _pickle("graph", "citeseer")
    G = nx.from_dict_of_lists(graph)
    ref = nx.adjacency_matrix(G, nodelist=range(citeseer.n)).tocsr()
    assert (ref - citeseer.adjacency()).count_nonzero() == 0
    assert ref.diagonal().sum() == citeseer.self_loop_count() == 124


def test_cora_features_labels_and_test_reordering(cora):
    allx, ally = _pickle("allx"), _pickle("ally")
    tx, ty = _pickle("tx"), _pickle("ty")
    idx = _test_index("cora")
    L = allx.shape[0]
    np.testing.assert_array_equal(cora.features[:L], allx.toarray())
    txd = tx.toarray()
    for i in (0, 1, 17, 999):  # tx row i ends at node test.index[i]
        np.testing.assert_array_equal(cora.features[idx[i]], txd[i])
    # and not (in general) at its unsorted position L + i
    assert idx[0] != L and not np.array_equal(cora.features[L], txd[0])
    np.testing.assert_array_equal(cora.labels[:L], ally.argmax(1))
    np.testing.assert_array_equal(cora.labels[idx], ty.argmax(1))
    assert set(np.flatnonzero(cora.test_mask).tolist()) == set(idx.tolist())
    y = _pickle("y")
    np.testing.assert_array_equal(np.flatnonzero(cora.train_mask), np.arange(y.shape[0]))
    np.testing.assert_array_equal(
        np.flatnonzero(cora.val_mask), np.arange(y.shape[0], y.shape[0] + 500)
    )
    # the train rows are the x rows
    np.testing.assert_array_equal(cora.features[: y.shape[0]], _pickle("x").toarray())


def test_citeseer_counts_and_padding(citeseer):
    g = citeseer
    assert g.n == 3327
    assert g.nnz == 9228 and g.self_loop_count() == 124
    assert g.num_undirected_edges() == 4552
    assert g.num_classes == 6 and g.num_features == 3703
    assert [int(m.sum()) for m in (g.train_mask, g.val_mask, g.test_mask)] == [120, 500, 1000]
    idx = _test_index("citeseer")
    missing = sorted(set(range(idx.min(), idx.max() + 1)) - set(idx.tolist()))
    assert len(missing) == 15
    assert int((g.labels == -1).sum()) == 15
    np.testing.assert_array_equal(np.flatnonzero(g.labels == -1), missing)
    assert not g.features[missing].any()
    tx = _pickle("tx", "citeseer").toarray()
    ty = _pickle("ty", "citeseer")
    np.testing.assert_array_equal(g.features[idx], tx)
    np.testing.assert_array_equal(g.labels[idx], ty.argmax(1))
    assert not g.test_mask[missing].any()


def test_planetoid_prefix_without_ind_and_inference():
    assert infer_format(str(PLANETOID / "ind.cora")) == "planetoid"
    g = convert_source(str(PLANETOID / "cora"))
    assert g.n == 2708 and g.name == "cora"


def test_pubmed_missing_allx_names_the_file():
    with pytest.raises(InputError) as e:
        convert_source(str(PLANETOID / "ind.pubmed"))
    assert "ind.pubmed.allx" in str(e.value) and "\n" not in str(e.value)


def test_planetoid_refuses_foreign_pickle_globals(tmp_path):
    for part in ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index"):
        (tmp_path / f"ind.evil.{part}").write_bytes((PLANETOID / f"ind.cora.{part}").read_bytes())
    (tmp_path / "ind.evil.graph").write_bytes(pickle.dumps(os.getcwd, protocol=2))
    with pytest.raises(FormatError, match="ind.evil.graph"):
        load_planetoid(str(tmp_path / "ind.evil"))


# --------------------------------------------------------------------------------------
# SNAP, MTX, npz on the shared data


def test_slashdot_symmetrized_without_loops():
    g = convert_source(
        str(DATA / "snap" / "soc-Slashdot0902.txt.gz"), symmetrize=True, self_loops="drop"
    )
    assert g.n == 82168
    assert g.num_undirected_edges() == 504230
    assert g.nnz == 1008460
    assert g.self_loop_count() == 0 and not g.directed
    A = g.adjacency()
    assert (A - A.T).count_nonzero() == 0


def test_tolokers_counts_and_splits():
    path = str(DATA / "npz" / "tolokers.npz")
    g = convert_source(path, symmetrize=True)
    assert g.n == 11758 and g.num_undirected_edges() == 519000 and g.nnz == 2 * 519000
    assert g.num_features == 10 and g.num_classes == 2
    assert [int(m.sum()) for m in (g.train_mask, g.val_mask, g.test_mask)] == [5879, 2939, 2940]
    with np.load(path) as z:
        np.testing.assert_array_equal(g.train_mask, z["train_masks"][0])
        g3 = convert_source(path, split=3)
        np.testing.assert_array_equal(g3.test_mask, z["test_masks"][3])
        np.testing.assert_array_equal(g.features, z["node_features"])
        np.testing.assert_array_equal(g.labels, z["node_labels"])
    assert g3.directed  # one entry per undirected edge without --symmetrize
    with pytest.raises(InputError, match="split 10"):
        convert_source(path, split=10)


def test_gemat11_matches_scipy():
    path = str(DATA / "suitesparse" / "gemat11.mtx")
    g = convert_source(path)
    assert g.n == 4929 and g.nnz == 33185 and g.directed
    assert g.data.dtype == np.float32
    ref = scipy.io.mmread(path).tocsr()
    ref.sort_indices()
    np.testing.assert_array_equal(g.indptr, ref.indptr)
    np.testing.assert_array_equal(g.indices, ref.indices)
    np.testing.assert_array_equal(g.data, ref.data.astype(np.float32))


# --------------------------------------------------------------------------------------
# Small synthetic files


def _write_gz(path: Path, text: str) -> None:
    with gzip.open(path, "wb") as f:
        f.write(text.encode())


def test_snap_gz_crlf_comments_tabs_duplicates(tmp_path):
    lines = [
        "# Directed graph: toy",
        "# FromNodeId\tToNodeId",
        "0\t1",
        "1\t2",
        "0\t1",
        "  3 0",
        "",
        "# trailing comment",
        "2\t2",
        "4\t1",
    ]
    path = tmp_path / "toy.txt.gz"
    _write_gz(path, "\r\n".join(lines) + "\r\n")
    g = convert_source(str(path))
    expected = set()
    for s in lines:  # independent parse
        if s.strip() and not s.startswith("#"):
            u, v = s.split()
            expected.add((int(u), int(v)))
    assert _entries(g) == expected
    assert g.n == 5 and g.directed and g.data is None
    _assert_canonical(g)
    gs = convert_source(str(path), symmetrize=True, self_loops="drop")
    assert _entries(gs) == {(u, v) for u, v in expected | {(v, u) for u, v in expected} if u != v}


def test_snap_relabel_sparse_ids(tmp_path):
    path = tmp_path / "sparse.txt"
    path.write_text("10 30\n30 7\n7 10\n")
    g = convert_source(str(path))
    assert g.n == 3
    original = g.extra["original_ids"]
    np.testing.assert_array_equal(original, [7, 10, 30])
    got = {(int(original[u]), int(original[v])) for u, v in _entries(g)}
    assert got == {(10, 30), (30, 7), (7, 10)}
    g2 = convert_source(str(path), relabel=False)
    assert g2.n == 31 and _entries(g2) == {(10, 30), (30, 7), (7, 10)}


@pytest.mark.parametrize(
    "body, line, what",
    [
        ("0 1\n1 2\n2 x\n", 3, "unparsable"),
        ("# c\n0 1\n3 -4\n", 3, "negative"),
        ("0 1\n1\n", 2, "columns"),
        ("0 1\n1 2 0.5 9\n", 2, "columns"),
    ],
)
def test_snap_bad_lines_name_file_and_line(tmp_path, body, line, what):
    path = tmp_path / "bad.txt"
    path.write_text(body)
    with pytest.raises(FormatError) as e:
        convert_source(str(path))
    msg = str(e.value)
    assert str(path) in msg and f"line {line}" in msg and what in msg and "\n" not in msg


def test_empty_edge_list(tmp_path):
    path = tmp_path / "empty.txt"
    path.write_text("# only a comment\r\n\r\n")
    with pytest.raises(FormatError, match="no edges"):
        convert_source(str(path))


def test_missing_file_is_input_error(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        convert_source(str(tmp_path / "nothere.txt"))


def test_csv_with_header_and_weights(tmp_path):
    path = tmp_path / "w.csv"
    path.write_text("src,dst,weight\n0,1,0.5\n1,2,2e0\n0,1,1.5\n2,0,-1.25\n")
    g = convert_source(str(path))
    A = g.adjacency().toarray()
    ref = np.zeros((3, 3), dtype=np.float32)
    ref[0, 1], ref[1, 2], ref[2, 0] = 1.5, 2.0, -1.25  # duplicate (0,1): the larger value
    np.testing.assert_array_equal(A, ref)
    gs = convert_source(str(path), "csv", symmetrize=True)
    sym = np.zeros((3, 3), dtype=np.float32)  # each stored direction, larger value wins
    for (u, v), w in {(0, 1): 1.5, (1, 2): 2.0, (2, 0): -1.25}.items():
        for a, b in ((u, v), (v, u)):
            sym[a, b] = w if sym[a, b] == 0 else max(sym[a, b], w)
    np.testing.assert_array_equal(gs.adjacency().toarray(), sym)
    assert not gs.directed


def test_csv_without_header_and_bad_row(tmp_path):
    path = tmp_path / "e.csv"
    path.write_text("0,1\n1,2\n")
    assert _entries(convert_source(str(path))) == {(0, 1), (1, 2)}
    path.write_text("a,b\n0,1\n1;2\n")
    with pytest.raises(FormatError, match="line 3"):
        convert_source(str(path))


def test_mtx_pattern_symmetric(tmp_path):
    path = tmp_path / "p.mtx"
    path.write_text(
        "%%MatrixMarket matrix coordinate pattern symmetric\n% c\n3 3 3\n2 1\n3 2\n3 3\n"
    )
    g = convert_source(str(path))
    assert g.data is None and not g.directed
    assert _entries(g) == {(1, 0), (0, 1), (2, 1), (1, 2), (2, 2)}
    gd = convert_source(str(path), self_loops="drop")
    assert gd.self_loop_count() == 0 and gd.nnz == 4


def test_mtx_not_square_and_garbage(tmp_path):
    path = tmp_path / "r.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n2 3 1\n1 3 1.0\n")
    with pytest.raises(FormatError, match="not square"):
        convert_source(str(path))
    path.write_text("hello\n")
    with pytest.raises(FormatError, match="r.mtx"):
        convert_source(str(path))


def test_npz_mismatched_arrays(tmp_path):
    path = tmp_path / "m.npz"
    np.savez(
        path,
        edges=np.array([[0, 1], [1, 2]]),
        node_features=np.zeros((3, 2)),
        node_labels=np.zeros(4, dtype=np.int64),
    )
    with pytest.raises(FormatError, match="node_labels"):
        convert_source(str(path))
    np.savez(path, edges=np.array([[0, 5]]), node_features=np.zeros((3, 2)))
    with pytest.raises(FormatError, match="node id 5"):
        convert_source(str(path))
    np.savez(
        path,
        edges=np.array([[0, 1]]),
        node_features=np.zeros((3, 2)),
        train_masks=np.ones(2, dtype=bool),
    )
    with pytest.raises(FormatError, match="train_masks"):
        convert_source(str(path))
    np.savez(
        path,
        edges=np.array([[0, 1]]),
        node_features=np.zeros((3, 2)),
        train_masks=np.array([True, False, True]),
    )
    g = convert_source(str(path))
    np.testing.assert_array_equal(g.train_mask, [True, False, True])
    assert g.val_mask is None and g.labels is None


def test_format_inference_and_unknown():
    assert infer_format("a/b.txt.gz") == "snap"
    assert infer_format("a/b.edges") == "snap"
    assert infer_format("a/b.mtx.gz") == "mtx"
    assert infer_format("a/b.csv") == "csv"
    assert infer_format("a/b.npz") == "npz"
    with pytest.raises(InputError, match="unknown converter format 'xyz'"):
        convert_source(str(DATA / "npz" / "tolokers.npz"), "xyz")
    with pytest.raises(InputError, match="known: planetoid, snap, mtx, npz, csv"):
        convert_source(str(DATA / "README.md"))


# --------------------------------------------------------------------------------------
# preprocess helpers against scipy


def _random_coo(rng, n, m):
    return rng.integers(0, n, m), rng.integers(0, n, m), rng.random(m).astype(np.float32)


def test_coo_to_csr_against_scipy():
    rng = np.random.default_rng(5)
    r, c, d = _random_coo(rng, 40, 500)
    ip, ix, dv = preprocess.coo_to_csr(r, c, d, 40, duplicates="sum")
    ref = sp.coo_matrix((d.astype(np.float64), (r, c)), shape=(40, 40)).tocsr()
    ref.sum_duplicates()
    ref.sort_indices()
    np.testing.assert_array_equal(ip, ref.indptr)
    np.testing.assert_array_equal(ix, ref.indices)
    np.testing.assert_allclose(dv, ref.data, rtol=1e-6)
    _, _, dmax = preprocess.coo_to_csr(r, c, d, 40, duplicates="max")
    best: dict = {}
    for a, b, v in zip(r.tolist(), c.tolist(), d.tolist(), strict=True):
        best[(a, b)] = max(best.get((a, b), -np.inf), v)
    np.testing.assert_array_equal(dmax, [best[k] for k in sorted(best)])


def test_symmetrize_and_self_loops_against_dense():
    rng = np.random.default_rng(7)
    n = 30
    r, c, d = _random_coo(rng, n, 120)
    ip, ix, dv = preprocess.coo_to_csr(r, c, d, n)
    A = sp.csr_matrix((dv, ix, ip), shape=(n, n)).toarray()
    sip, six, sdv = preprocess.symmetrize(ip, ix, dv)
    S = sp.csr_matrix((sdv, six, sip), shape=(n, n)).toarray()
    np.testing.assert_array_equal(S, np.maximum(A, A.T))
    assert preprocess.is_symmetric(sip, six, sdv) and not preprocess.is_symmetric(ip, ix, dv)
    # pattern symmetrize
    pip, pix, pdv = preprocess.symmetrize(ip, ix, None)
    assert pdv is None
    P = sp.csr_matrix((np.ones(pix.size), pix, pip), shape=(n, n)).toarray()
    np.testing.assert_array_equal(P, ((A != 0) | (A.T != 0)).astype(float))
    # drop / add / keep
    dip, dix, ddv = preprocess.set_self_loops(sip, six, sdv, "drop")
    D = sp.csr_matrix((ddv, dix, dip), shape=(n, n)).toarray()
    np.testing.assert_array_equal(D, S - np.diag(np.diag(S)))
    aip, aix, adv = preprocess.set_self_loops(sip, six, sdv, "add")
    Ad = sp.csr_matrix((adv, aix, aip), shape=(n, n)).toarray()
    expect = S.copy()
    diag = np.diag(S).copy()
    present = np.zeros(n, dtype=bool)
    rows = preprocess.csr_rows(sip)
    present[rows[rows == six]] = True
    diag[~present] = 1.0
    np.fill_diagonal(expect, diag)
    np.testing.assert_array_equal(Ad, expect)
    assert preprocess.set_self_loops(sip, six, sdv, "keep")[1] is six
    with pytest.raises(InputError, match="self-loop mode"):
        preprocess.set_self_loops(sip, six, sdv, "twice")


def test_relabel_compact_keeps_order():
    r, c, orig = preprocess.relabel_compact(np.array([100, 5]), np.array([5, 42]))
    np.testing.assert_array_equal(orig, [5, 42, 100])
    np.testing.assert_array_equal(orig[r], [100, 5])
    np.testing.assert_array_equal(orig[c], [5, 42])


# --------------------------------------------------------------------------------------
# CLI


def test_cli_unknown_format_exit_2(tmp_path, capsys):
    code = run(
        [
            "convert",
            str(DATA / "npz" / "tolokers.npz"),
            "-o",
            str(tmp_path / "o.h5"),
            "--format",
            "xyz",
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("gcntrain: error: ")
    assert "unknown converter format 'xyz'" in err
    assert not (tmp_path / "o.h5").exists()


def test_cli_missing_source_exit_2(tmp_path, capsys):
    code = run(["convert", str(tmp_path / "none.txt"), "-o", str(tmp_path / "o.h5")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "none.txt" in err


def test_cli_convert_writes_readable_graph(tmp_path, capsys):
    import json

    from gcntrain.data.store import read_graph

    out = tmp_path / "cora.h5"
    code = run(
        [
            "convert",
            str(PLANETOID / "ind.cora"),
            "-o",
            str(out),
            "--json",
            "--self-loops",
            "add",
            "--name",
            "cora-loops",
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["nodes"] == 2708 and summary["nnz"] == 10556 + 2708
    assert summary["undirected_edges"] == 5278 and summary["classes"] == 7
    g = read_graph(str(out))
    ref = convert_source(str(PLANETOID / "ind.cora"), self_loops="add")
    assert g.name == "cora-loops"
    np.testing.assert_array_equal(g.indptr, ref.indptr)
    np.testing.assert_array_equal(g.indices, ref.indices)
    np.testing.assert_array_equal(g.features, ref.features)
    np.testing.assert_array_equal(g.labels, ref.labels)
    np.testing.assert_array_equal(g.test_mask, ref.test_mask)
    assert [p.name for p in tmp_path.iterdir()] == ["cora.h5"]  # no temporary left over
