"""Vertex-cut ("edges") stores: `gcntrain shard -m libra`, shard contents against the cut,
exact reassembly, refusals, and `EdgeStoreSource`."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from gcntrain.cli.main import run
from gcntrain.data import shards as S
from gcntrain.data.generate import rmat
from gcntrain.data.partition_file import read_partition
from gcntrain.data.store import write_graph
from gcntrain.errors import FormatError, InputError
from gcntrain.partition.cut_layout import EdgeCut, fill_roots, root_numbering, root_of
from gcntrain.partition.libra import libra_partition
from gcntrain.schemes.loading import EdgeStoreSource, RowStoreSource, open_source
from gcntrain.schemes.protocol import LoadRequest
from tests.test_shards import assert_equal_graphs, make_graph

P = 3


def _run_json(capsys, argv: list[str]) -> dict:
    code = run(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _one_error(capsys, argv: list[str]) -> str:
    code = run(argv)
    err = capsys.readouterr().err
    assert code == 2, argv
    assert err.count("\n") == 1 and err.startswith("gcntrain: error: "), err
    return err


def _expected_cut(g, edge_part, root) -> tuple[EdgeCut, np.ndarray]:
    """The cut and perm a store of (edge_part, root) must follow, computed independently."""
    perm, inv, offsets = root_numbering(fill_roots(root, P), P)
    ip, ix = g.indptr.astype(np.int64), g.indices.astype(np.int64)
    return EdgeCut.from_csr(ip, ix, edge_part, inv, offsets), perm


def _check_store(store, g, edge_part, root) -> None:
    """Every entry in exactly one shard (its part's), clones and node data as the cut says."""
    cut, perm = _expected_cut(g, edge_part, root)
    m = S.open_manifest(store)
    assert m.kind == "edges" and m.num_parts == P and m.n == g.n and m.nnz == g.nnz
    assert m.content_hash == m.source_content_hash == g.content_hash()
    assert np.array_equal(m.offsets, cut.offsets)
    seen = []
    replica_parts, replica_verts = cut.replicas()
    for p in range(P):
        sh = S.read_edge_shard(m, p)
        ids = cut.clones_of(p)
        assert np.array_equal(sh.ids, ids)
        assert (sh.row_start, sh.row_stop) == (int(cut.offsets[p]), int(cut.offsets[p + 1]))
        assert np.array_equal(sh.orig_ids, perm[ids])
        assert np.array_equal(sh.root, root_of(ids, cut.offsets))
        rows = sh.ids[np.repeat(np.arange(sh.clones), np.diff(sh.indptr))]
        cols = sh.indices.astype(np.int64)
        for r in range(sh.clones):  # sorted within rows
            seg = cols[sh.indptr[r] : sh.indptr[r + 1]]
            assert np.all(np.diff(seg) >= 0)
        sel = cut.part == p
        want = np.sort(cut.row[sel] * g.n + cut.col[sel])
        assert np.array_equal(np.sort(rows * g.n + cols), want)
        seen.append(rows * g.n + cols)
        for name in ("features", "labels", "train_mask", "val_mask", "test_mask"):
            assert np.array_equal(getattr(sh, name), getattr(g, name)[perm[ids]]), name
        for i, v in enumerate(range(sh.row_start, sh.row_stop)):
            mine = replica_parts[replica_verts == v]
            assert sh.replica_parts[sh.replica_ptr[i] : sh.replica_ptr[i + 1]].tolist() == sorted(
                mine.tolist()
            )
    assert np.array_equal(np.sort(np.concatenate(seen)), np.sort(cut.row * g.n + cut.col))
    assert sum(e["nnz"] for e in m.shards) == g.nnz
    perms = S.read_perm(m)
    assert np.array_equal(perms["edge_part"], cut.part)  # lines up with the source's entries
    assert np.array_equal(perms["perm"], perm)
    assert_equal_graphs(S.assemble(m), g)


@pytest.mark.parametrize("shuffled", [False, True])
def test_cli_shard_libra_round_trip(tmp_path, capsys, shuffled):
    g = make_graph(seed=21, shuffled=shuffled)
    write_graph(tmp_path / "g.h5", g)
    argv = ["shard", str(tmp_path / "g.h5"), "-m", "libra", "--parts", str(P), "--seed", "4"]
    out = _run_json(capsys, [*argv, "-o", str(tmp_path / "s"), "--json"])
    assert out["kind"] == "edges" and out["parts"] == P
    clones = sum(s["clones"] for s in out["shards"])
    assert out["replication_factor"] == round(clones / g.n, 4) and clones >= g.n
    vc = libra_partition(g.indptr.astype(np.int64), g.indices.astype(np.int64), P, seed=4)
    _check_store(tmp_path / "s", g, vc.edge_part, vc.root)
    perms = S.read_perm(tmp_path / "s")
    assert ("entry_order" in perms) == shuffled
    assert np.array_equal(perms["root"], fill_roots(vc.root, P))

    info = _run_json(capsys, ["inspect", str(tmp_path / "s"), "--json"])
    assert info["kind"] == "edges" and info["content_hash"] == g.content_hash()
    assert info["replication_factor"] == out["replication_factor"]
    assert [s["clones"] for s in info["shards"]] == [s["clones"] for s in out["shards"]]
    assert run(["inspect", str(tmp_path / "s")]) == 0
    assert "clones" in capsys.readouterr().out


def test_edge_store_of_graph_with_isolated_vertices(tmp_path):
    g = rmat(7, edge_factor=4, seed=5, num_features=4, num_classes=3)
    vc = libra_partition(g.indptr.astype(np.int64), g.indices.astype(np.int64), P, seed=1)
    assert np.any(vc.root < 0)  # rooted at v mod P
    S.write_edge_shards(g, vc.edge_part, vc.root, tmp_path / "s", num_parts=P)
    _check_store(tmp_path / "s", g, vc.edge_part, vc.root)


def test_cli_shard_libra_from_partition_file(tmp_path, capsys):
    g = make_graph(seed=22, weighted=False)
    write_graph(tmp_path / "g.h5", g)
    part = tmp_path / "cut.h5"
    argv = ["partition", str(tmp_path / "g.h5"), "-m", "libra", "-p", str(P), "-o", str(part)]
    assert run(argv) == 0
    capsys.readouterr()
    res = read_partition(part, g.content_hash())
    shard = ["shard", str(tmp_path / "g.h5"), "-m", "libra", "--partition", str(part)]
    out = _run_json(capsys, [*shard, "-o", str(tmp_path / "s"), "--json"])
    assert out["parts"] == P and out["partition"] == str(part)
    _check_store(tmp_path / "s", g, res.edge_part, res.root)
    # --parts agreeing with the file is accepted
    _run_json(capsys, [*shard, "--parts", str(P), "-o", str(tmp_path / "s2"), "--json"])


def test_cli_shard_libra_refusals(tmp_path, capsys):
    g = make_graph(seed=23)
    write_graph(tmp_path / "g.h5", g)
    gh5 = str(tmp_path / "g.h5")
    out = str(tmp_path / "x")
    assert run(["partition", gh5, "-m", "metis", "-p", "2", "-o", str(tmp_path / "v.h5")]) == 0
    assert run(["partition", gh5, "-m", "libra", "-p", "2", "-o", str(tmp_path / "c.h5")]) == 0
    capsys.readouterr()
    base = ["shard", gh5, "-m", "libra", "-o", out]
    err = _one_error(capsys, [*base, "--partition", str(tmp_path / "v.h5")])
    assert "v.h5" in err and "not a vertex cut" in err
    err = _one_error(capsys, [*base, "--partition", str(tmp_path / "c.h5"), "--parts", "3"])
    assert "vertex cut has 2 parts but --parts is 3" in err
    for extra in (
        ["--parts", "2", "--grid", "2x2"],
        ["--parts", "2", "--permute", "random"],
        ["--parts", "2", "--partition", "random"],
        [],
    ):
        _one_error(capsys, [*base, *extra])
    with h5py.File(tmp_path / "c.h5", "r+") as f:  # a cut of fewer entries than the graph's
        ep = f["edge_part"][...]
        del f["edge_part"]
        f.create_dataset("edge_part", data=ep[:-1])
    err = _one_error(capsys, [*base, "--partition", str(tmp_path / "c.h5")])
    assert f"assigns {g.nnz - 1} entries but the graph stores {g.nnz}" in err
    assert not (tmp_path / "x").exists()


def test_edge_shard_validation(tmp_path):
    g = make_graph(seed=24)
    vc = libra_partition(g.indptr.astype(np.int64), g.indices.astype(np.int64), P, seed=0)
    S.write_edge_shards(g, vc.edge_part, vc.root, tmp_path / "s", num_parts=P)
    m = S.open_manifest(tmp_path / "s")
    with pytest.raises(InputError, match="not rows"):
        S.read_row_shard(m, 0)
    with pytest.raises(InputError, match="not edges"):
        S.read_edge_shard(S.write_row_shards(g, np.arange(g.n) % 2, tmp_path / "r"), 0)
    with h5py.File(tmp_path / "s" / "shard-00001.h5", "r+") as f:
        ids = f["ids"][...]
        ids[[0, -1]] = ids[[-1, 0]]
        f["ids"][...] = ids
    with pytest.raises(FormatError, match="first .* ids are not the roots"):
        S.read_edge_shard(m, 1)
    with pytest.raises(InputError, match="edge_part has 3 entries"):
        S.write_edge_shards(g, vc.edge_part[:3], vc.root, tmp_path / "t", num_parts=P)


def test_edge_store_source(tmp_path):
    g = make_graph(seed=25, shuffled=True)
    vc = libra_partition(g.indptr.astype(np.int64), g.indices.astype(np.int64), P, seed=2)
    S.write_edge_shards(g, vc.edge_part, vc.root, tmp_path / "s", num_parts=P)
    src = open_source(str(tmp_path / "s"))
    assert isinstance(src, EdgeStoreSource) and src.kind == "store" and src.cut_store
    assert RowStoreSource.cut_store is False
    with pytest.raises(InputError, match="store has 3 vertex-cut shards but this run has 4"):
        src.numbering(4, None, 0)
    with pytest.raises(InputError, match="--partition does not apply"):
        src.numbering(P, "random", 0)
    num = src.numbering(P, None, 0)
    assert num.perm is None and num.inv is None
    cut, perm = _expected_cut(g, vc.edge_part, vc.root)
    assert np.array_equal(num.offsets, cut.offsets)

    whole, wnum = src.whole(num)
    assert_equal_graphs(whole, g)
    assert np.array_equal(wnum.perm, perm) and np.array_equal(wnum.offsets, cut.offsets)
    for name in ("row", "col", "part"):
        assert np.array_equal(getattr(wnum.cut, name), getattr(cut, name)), name

    for p in range(P):
        lo, hi = int(num.offsets[p]), int(num.offsets[p + 1])
        ids = cut.clones_of(p)
        local = src.load(LoadRequest((lo, hi), ids=ids, part=p), num)
        m = ids.size
        assert local.rows == (0, m) and local.node_rows == (0, m)
        assert np.array_equal(local.ids, ids) and np.array_equal(local.orig_ids, perm[ids])
        assert local.indptr.shape == (m + 1,) and local.indices.dtype == np.int64
        assert local.nnz == g.nnz and local.n == g.n and local.num_classes == 4
        keys = np.repeat(ids, np.diff(local.indptr)) * g.n + local.indices
        assert np.array_equal(np.sort(keys), cut.entries_of(p))
        assert local.data.dtype == np.float32 and local.data.shape == local.indices.shape
        assert local.features.shape == (m, g.num_features)
        assert np.array_equal(local.labels, g.labels[perm[ids]])
        assert np.array_equal(local.masks["train"], g.train_mask[perm[ids]])
    sub = src.load(LoadRequest((lo, hi), features=(1, 3), part=P - 1), num)
    assert sub.features.shape == (ids.size, 2)
    with pytest.raises(InputError, match="no vertex-cut shard"):
        src.load(LoadRequest((lo, hi)), num)
