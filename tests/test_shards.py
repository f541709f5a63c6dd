"""Sharded stores: exact reassembly, shard contents vs scipy, per-shard file access, CLI."""

from __future__ import annotations

import json
import shutil

import h5py
import numpy as np
import pytest
import scipy.sparse as sp

from gcntrain.cli.main import run
from gcntrain.data import shards as S
from gcntrain.data.graph import Graph
from gcntrain.data.store import write_graph
from gcntrain.errors import FormatError, InputError

ARRAYS = ("indptr", "indices", "data", "features", "labels", "train_mask", "val_mask", "test_mask")


def make_graph(
    n: int = 61, seed: int = 0, *, weighted: bool = True, shuffled: bool = False
) -> Graph:
    """Random graph with node data; `shuffled` scrambles each row's entry order and adds a
    duplicate entry, so that exactness of the entry order is tested."""
    rng = np.random.default_rng(seed)
    a = sp.random(n, n, density=0.12, random_state=seed, format="csr", dtype=np.float64)
    a = (a + a.T + sp.eye(n, format="csr")).tocsr()
    a.sort_indices()
    indptr, indices, data = a.indptr.astype(np.int64), a.indices.copy(), a.data.copy()
    if shuffled:
        for i in range(n):
            s, e = indptr[i], indptr[i + 1]
            p = rng.permutation(e - s) + s
            indices[s:e], data[s:e] = indices[p], data[p]
        # duplicate the first entry of row 0 (CSR allows it; order must survive)
        indices = np.insert(indices, 1, indices[0])
        data = np.insert(data, 1, 7.0)
        indptr[1:] += 1
    mask = rng.permutation(n)
    train, val, test = (np.zeros(n, bool) for _ in range(3))
    train[mask[:12]] = True
    val[mask[12:20]] = True
    test[mask[20:35]] = True
    labels = rng.integers(0, 4, n)
    labels[rng.random(n) < 0.1] = -1
    return Graph(
        indptr=indptr,
        indices=indices.astype(np.int32),
        data=data.astype(np.float32) if weighted else None,
        features=rng.standard_normal((n, 5)).astype(np.float32),
        labels=labels,
        train_mask=train,
        val_mask=val,
        test_mask=test,
        name="shards-test",
        num_classes=4,
    )


def assert_equal_graphs(a: Graph, b: Graph) -> None:
    for name in ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert x.shape == y.shape and np.array_equal(x, y), name
    assert (a.name, a.directed, a.num_classes) == (b.name, b.directed, b.num_classes)


def canonical(g: Graph) -> tuple[list[int], list[int], list[float]]:
    """Each row's entries sorted by column with Python's stable sort (duplicates kept)."""
    indptr, indices, data = [0], [], []
    vals = g.values()
    for i in range(g.n):
        s, e = int(g.indptr[i]), int(g.indptr[i + 1])
        entries = sorted(zip(g.indices[s:e].tolist(), vals[s:e].tolist()), key=lambda t: t[0])
        indices += [c for c, _ in entries]
        data += [v for _, v in entries]
        indptr.append(len(indices))
    return indptr, indices, data


@pytest.mark.parametrize("shuffled", [False, True])
def test_row_shards_random_partition_reassemble_exactly(tmp_path, shuffled):
    g = make_graph(seed=1, shuffled=shuffled)
    part = np.random.default_rng(7).integers(0, 4, g.n)
    manifest = S.write_row_shards(g, part, tmp_path / "store")
    m = S.open_manifest(manifest)
    assert m.kind == "rows" and m.num_parts == 4 and m.n == g.n and m.nnz == g.nnz
    assert m.source_content_hash == g.content_hash() == m.content_hash
    assert_equal_graphs(S.assemble_rows(m), g)
    assert_equal_graphs(S.assemble(tmp_path / "store"), g)


def test_row_shard_contents_match_scipy_renumbering(tmp_path):
    g = make_graph(seed=2)
    part = np.random.default_rng(3).integers(0, 4, g.n)
    S.write_row_shards(g, part, tmp_path / "store")
    # independent renumbering: part 0's nodes ascending, then part 1's, ...
    perm = np.concatenate([np.flatnonzero(part == k) for k in range(4)])
    b = g.adjacency()[perm][:, perm].toarray()
    start = 0
    for k in range(4):
        sh = S.read_row_shard(tmp_path / "store", k)
        rows = int(np.count_nonzero(part == k))
        assert (sh.row_start, sh.row_stop) == (start, start + rows)
        assert np.array_equal(sh.orig_ids, np.flatnonzero(part == k))
        assert np.array_equal(sh.adjacency().toarray(), b[start : start + rows])
        assert np.array_equal(sh.features, g.features[part == k])
        assert np.array_equal(sh.labels, g.labels[part == k])
        assert np.array_equal(sh.test_mask, g.test_mask[part == k])
        start += rows
    perms = S.read_perm(tmp_path / "store")
    assert np.array_equal(perms["perm"], perm)
    assert np.array_equal(perms["iperm"][perm], np.arange(g.n))


def test_row_shards_with_empty_part(tmp_path):
    g = make_graph(seed=4, weighted=False)
    part = np.random.default_rng(0).integers(0, 3, g.n)
    S.write_row_shards(g, part, tmp_path / "s", num_parts=5)
    m = S.open_manifest(tmp_path / "s")
    assert [e["row_stop"] - e["row_start"] for e in m.shards][3:] == [0, 0]
    assert S.read_row_shard(m, 4).indptr.tolist() == [0]
    assert_equal_graphs(S.assemble_rows(m), g)


@pytest.mark.parametrize(
    "grid,perm_mode", [((2, 2), "none"), ((2, 2), "double"), ((3, 2), "same"), ((1, 3), "rows")]
)
def test_block_shards_reassemble_exactly(tmp_path, grid, perm_mode):
    g = make_graph(seed=5)
    rng = np.random.default_rng(11)
    rp = cp = None
    if perm_mode == "double":
        rp, cp = rng.permutation(g.n), rng.permutation(g.n)
    elif perm_mode == "same":
        rp = cp = rng.permutation(g.n)
    elif perm_mode == "rows":
        rp = rng.permutation(g.n)
    r, c = grid
    S.write_block_shards(g, r, c, tmp_path / "b", rp, cp)
    m = S.open_manifest(tmp_path / "b")
    assert m.kind == "blocks2d" and m.grid == (r, c)
    assert m.content_hash == m.source_content_hash == g.content_hash()  # source rows sorted
    assert_equal_graphs(S.assemble_blocks(m), g)
    # each block equals the scipy slice of A[row_perm][:, col_perm]
    rp_ = np.arange(g.n) if rp is None else rp
    cp_ = np.arange(g.n) if cp is None else cp
    b = g.adjacency()[rp_][:, cp_].toarray()
    rb = [(i * g.n) // r for i in range(r + 1)]
    cb = [(j * g.n) // c for j in range(c + 1)]
    for i in range(r):
        for j in range(c):
            blk = S.read_block_shard(m, i, j)
            assert (blk.row_start, blk.row_stop, blk.col_start, blk.col_stop) == (
                rb[i],
                rb[i + 1],
                cb[j],
                cb[j + 1],
            )
            assert np.array_equal(
                blk.adjacency().toarray(), b[rb[i] : rb[i + 1], cb[j] : cb[j + 1]]
            )
            for row in range(blk.indptr.shape[0] - 1):  # columns sorted within rows
                cols = blk.indices[blk.indptr[row] : blk.indptr[row + 1]]
                assert np.all(np.diff(cols) >= 0)
        nodes = S.read_block_nodes(m, i)
        assert np.array_equal(nodes.orig_ids, rp_[rb[i] : rb[i + 1]])
        assert np.array_equal(nodes.features, g.features[rp_[rb[i] : rb[i + 1]]])


def test_block_shards_of_unsorted_source_reassemble_to_canonical_form(tmp_path):
    g = make_graph(seed=6, shuffled=True)
    rng = np.random.default_rng(2)
    S.write_block_shards(g, 2, 2, tmp_path / "b", rng.permutation(g.n), rng.permutation(g.n))
    m = S.open_manifest(tmp_path / "b")
    back = S.assemble_blocks(m)
    indptr, indices, data = canonical(g)
    assert back.indptr.tolist() == indptr and back.indices.tolist() == indices
    assert back.data.tolist() == data
    assert np.array_equal(back.features, g.features)
    assert m.source_content_hash == g.content_hash() != m.content_hash


def _record_h5_opens(monkeypatch) -> list[str]:
    opened: list[str] = []
    real = h5py.File

    def recording(name, *args, **kwargs):
        opened.append(str(name))
        return real(name, *args, **kwargs)

    monkeypatch.setattr(h5py, "File", recording)
    return opened


def test_read_row_shard_opens_only_its_own_file(tmp_path, monkeypatch):
    g = make_graph(seed=8)
    S.write_row_shards(g, np.random.default_rng(1).integers(0, 4, g.n), tmp_path / "s")
    opened = _record_h5_opens(monkeypatch)
    sh = S.read_row_shard(tmp_path / "s", 2)
    assert [p.rsplit("/", 1)[-1] for p in opened] == ["shard-00002.h5"]
    assert sh.k == 2 and sh.rows == len(sh.orig_ids)


def test_read_row_shard_works_with_every_other_file_deleted(tmp_path):
    g = make_graph(seed=9)
    S.write_row_shards(g, np.random.default_rng(2).integers(0, 4, g.n), tmp_path / "full")
    expected = S.read_row_shard(tmp_path / "full", 1)
    shutil.copytree(tmp_path / "full", tmp_path / "one")
    for p in (tmp_path / "one").iterdir():
        if p.name not in ("manifest.json", "shard-00001.h5"):
            p.unlink()
    got = S.read_row_shard(tmp_path / "one", 1)
    for name in ("indptr", "indices", "data", "orig_ids", "features", "labels", "train_mask"):
        assert np.array_equal(getattr(got, name), getattr(expected, name)), name
    with pytest.raises(FormatError, match="shard 0 file 'shard-00000.h5' listed in manifest"):
        S.read_row_shard(tmp_path / "one", 0)
    with pytest.raises(FormatError, match="missing"):
        S.open_manifest(tmp_path / "one")  # the full check notices the missing files
    assert S.open_manifest(tmp_path / "one", check_files=False).num_parts == 4


def test_read_block_shard_opens_only_its_own_file(tmp_path, monkeypatch):
    g = make_graph(seed=10)
    rng = np.random.default_rng(4)
    S.write_block_shards(g, 2, 3, tmp_path / "b", rng.permutation(g.n), rng.permutation(g.n))
    expected = S.read_block_shard(tmp_path / "b", 1, 2)
    for p in (tmp_path / "b").iterdir():
        if p.name not in ("manifest.json", "block-001-002.h5"):
            p.unlink()
    opened = _record_h5_opens(monkeypatch)
    got = S.read_block_shard(tmp_path / "b", 1, 2)
    assert [p.rsplit("/", 1)[-1] for p in opened] == ["block-001-002.h5"]
    assert np.array_equal(got.indices, expected.indices)
    with pytest.raises(FormatError, match=r"shard \(0, 0\) file 'block-000-000.h5'"):
        S.read_block_shard(tmp_path / "b", 0, 0)


def test_overwrite_rules(tmp_path):
    g = make_graph(seed=12)
    part = np.zeros(g.n, np.int64)
    S.write_row_shards(g, part, tmp_path / "s")
    with pytest.raises(InputError, match="not empty"):
        S.write_row_shards(g, part, tmp_path / "s")
    S.write_block_shards(g, 2, 2, tmp_path / "s", overwrite=True)
    assert S.open_manifest(tmp_path / "s").kind == "blocks2d"
    other = tmp_path / "other"
    other.mkdir()
    (other / "keep.txt").write_text("x")
    with pytest.raises(InputError, match="not a shard store"):
        S.write_row_shards(g, part, other, overwrite=True)
    assert (other / "keep.txt").exists()
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_pure_helpers_against_scipy():
    g = make_graph(seed=13, shuffled=True)
    rng = np.random.default_rng(5)
    rows, cols = rng.permutation(g.n), rng.permutation(g.n)
    col_map = np.empty(g.n, np.int64)
    col_map[cols] = np.arange(g.n)
    ptr, idx, dat = S.permute_csr(g.indptr, g.indices, g.data, rows, col_map)
    got = sp.csr_matrix((dat, idx, ptr), shape=(g.n, g.n)).toarray()
    assert np.array_equal(got, g.adjacency()[rows][:, cols].toarray())
    assert S.even_ranges(10, 3).tolist() == [[0, 3], [3, 6], [6, 10]]
    perm, ranges = S.part_row_ranges(np.array([2, 0, 2, 1, 0]), 4)
    assert perm.tolist() == [1, 4, 3, 0, 2]
    assert ranges.tolist() == [[0, 2], [2, 3], [3, 5], [5, 5]]


# --------------------------------------------------------------------------- CLI


def _run_json(capsys, argv: list[str]) -> dict:
    code = run(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_cli_shard_and_inspect(tmp_path, capsys):
    g = make_graph(seed=14)
    write_graph(tmp_path / "g.h5", g)
    out = _run_json(
        capsys,
        [
            "shard",
            str(tmp_path / "g.h5"),
            "-o",
            str(tmp_path / "rows"),
            "--parts",
            "3",
            "--partition",
            "random",
            "--seed",
            "5",
            "--json",
        ],
    )
    assert out["kind"] == "rows" and out["parts"] == 3
    sizes = [s["rows"] for s in out["shards"]]
    assert sum(sizes) == g.n and max(sizes) - min(sizes) <= 1  # balanced random
    assert_equal_graphs(S.assemble(tmp_path / "rows"), g)

    info = _run_json(capsys, ["inspect", str(tmp_path / "rows"), "--json"])
    adj = g.adjacency()
    upper = sp.triu(adj + adj.T, k=1)
    assert info["num_nodes"] == g.n and info["nnz"] == adj.nnz
    assert info["num_edges"] == upper.nnz
    assert info["self_loops"] == int(np.count_nonzero(adj.diagonal()))
    assert info["num_features"] == 5 and info["num_classes"] == 4
    assert info["train"] == 12 and info["val"] == 8 and info["test"] == 15
    deg = np.diff(adj.indptr)
    assert info["degree"] == {
        "min": int(deg.min()),
        "mean": float(deg.mean()),
        "max": int(deg.max()),
    }
    assert [s["nnz"] for s in info["shards"]] == [s["nnz"] for s in out["shards"]]

    graph_info = _run_json(capsys, ["inspect", str(tmp_path / "g.h5"), "--json"])
    for key in ("num_nodes", "nnz", "num_edges", "content_hash", "degree", "labeled"):
        assert graph_info[key] == info[key], key

    out = _run_json(
        capsys,
        [
            "shard",
            str(tmp_path / "g.h5"),
            "-o",
            str(tmp_path / "grid"),
            "--grid",
            "2x3",
            "--permute",
            "double",
            "--json",
        ],
    )
    assert out["grid"] == [2, 3] and len(out["shards"]) == 6
    m = S.open_manifest(tmp_path / "grid")
    assert m.row_perm and m.col_perm
    assert_equal_graphs(S.assemble(m), g)


def _write_part_file(path, part, graph_hash, num_parts=None):
    with h5py.File(path, "w") as f:
        f.create_dataset("part", data=part)
        f.attrs["graph_content_hash"] = graph_hash
        if num_parts is not None:
            f.attrs["num_parts"] = num_parts


def test_cli_shard_with_partition_file(tmp_path, capsys):
    g = make_graph(seed=15)
    write_graph(tmp_path / "g.h5", g)
    part = np.random.default_rng(0).integers(0, 3, g.n).astype(np.int32)
    _write_part_file(tmp_path / "p.h5", part, g.content_hash(), num_parts=3)
    out = _run_json(
        capsys,
        [
            "shard",
            str(tmp_path / "g.h5"),
            "-o",
            str(tmp_path / "s"),
            "--partition",
            str(tmp_path / "p.h5"),
            "--json",
        ],
    )
    assert out["parts"] == 3
    for k in range(3):
        assert np.array_equal(
            S.read_row_shard(tmp_path / "s", k).orig_ids, np.flatnonzero(part == k)
        )

    _write_part_file(tmp_path / "bad.h5", part, "f" * 64)
    code = run(
        [
            "shard",
            str(tmp_path / "g.h5"),
            "-o",
            str(tmp_path / "s2"),
            "--parts",
            "3",
            "--partition",
            str(tmp_path / "bad.h5"),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("gcntrain: error: ")
    assert "bad.h5" in err and "partition was computed for a different graph" in err
    assert not (tmp_path / "s2").exists()


def test_cli_shard_usage_errors(tmp_path, capsys):
    write_graph(tmp_path / "g.h5", make_graph(seed=16))
    for argv in (
        ["--parts", "2", "--grid", "2x2"],
        ["--grid", "2y2"],
        ["--parts", "0"],
        ["--parts", "2", "--permute", "random"],
        [],
    ):
        code = run(["shard", str(tmp_path / "g.h5"), "-o", str(tmp_path / "x"), *argv])
        err = capsys.readouterr().err
        assert code == 2, argv
        assert err.count("\n") == 1 and err.startswith("gcntrain: error: "), argv
