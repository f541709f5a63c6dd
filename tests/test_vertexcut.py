"""The vertex-cut layout (`gcntrain.partition.cut_layout`) against brute force, the scheme's
refusals (one line, exit 2), and its plans: cd-R moves, over R steady epochs, the bytes cd-0
moves in one; 0c moves nothing in training.  (The soc-Slashdot0902 table of cd-0 against p2p
on METIS and hypergraph partitions is docs/measurements/vertexcut-volume-2026-11-23.md.)"""

from __future__ import annotations

import json

import numpy as np
import pytest

from gcntrain.cli.main import run
from gcntrain.data.generate import rmat
from gcntrain.data.store import write_graph
from gcntrain.model.trainer import TrainConfig
from gcntrain.partition.cut_layout import EdgeCut, bucket_of, fill_roots, root_numbering, root_of
from gcntrain.partition.libra import libra_partition
from gcntrain.simulate.run import plan_training
from gcntrain.simulate.target import PlanTarget


@pytest.fixture(scope="module")
def graph():
    return rmat(8, edge_factor=6, seed=3, num_features=8, num_classes=3)


def cut_of(g, P, seed=0):
    vc = libra_partition(g.indptr.astype(np.int64), g.indices.astype(np.int64), P, seed=seed)
    perm, inv, offsets = root_numbering(fill_roots(vc.root, P), P)
    return vc, perm, inv, EdgeCut.from_csr(g.indptr, g.indices, vc.edge_part, inv, offsets)


@pytest.mark.parametrize("P", [1, 3, 4])
def test_clones_roots_and_tree_pairs_equal_brute_force(graph, P):
    g = graph
    vc, perm, inv, cut = cut_of(g, P)
    rows = np.repeat(np.arange(g.n), np.diff(g.indptr))
    holders = [set() for _ in range(g.n)]
    for e, (u, v) in enumerate(zip(rows, g.indices)):
        holders[u].add(int(vc.edge_part[e]))
        holders[v].add(int(vc.edge_part[e]))
    root = fill_roots(vc.root, P)
    for v in range(g.n):
        holders[v].add(int(root[v]))
        # roots are the parts holding most of a vertex's entries
        if vc.root[v] >= 0:
            assert vc.root[v] in holders[v]
    # new ids sorted by root: part p roots offsets[p]:offsets[p+1]
    assert np.array_equal(root_of(inv, cut.offsets), root)
    pairs = {}
    for p in range(P):
        want = sorted(int(inv[v]) for v in range(g.n) if p in holders[v])
        got = cut.clones_of(p)
        k = int(cut.offsets[p + 1] - cut.offsets[p])
        assert sorted(got.tolist()) == want
        assert np.array_equal(got[:k], np.arange(cut.offsets[p], cut.offsets[p + 1]))
        assert np.all(np.diff(got[k:]) > 0)
        for v in got[k:]:
            key = (p, int(root_of(np.array([v]), cut.offsets)[0]))
            pairs[key] = pairs.get(key, 0) + 1
    src, dst, cnt = cut.leaf_pairs()
    assert dict(zip(zip(src.tolist(), dst.tolist()), cnt.tolist())) == pairs
    assert cut.replication_factor() == pytest.approx(sum(map(len, holders)) / g.n)
    # every entry is kept by exactly one part
    keys = np.sort(np.concatenate([cut.entries_of(p) for p in range(P)]))
    assert np.array_equal(keys, np.sort(cut.row * g.n + cut.col))


@pytest.mark.parametrize("r", [1, 2, 5])
def test_buckets_are_contiguous_ranges_of_each_root_and_partition_the_pairs(graph, r):
    _, _, _, cut = cut_of(graph, 4)
    ids = np.arange(cut.n)
    b = bucket_of(ids, cut.offsets, r)
    for p in range(4):
        bp = b[cut.offsets[p] : cut.offsets[p + 1]]
        assert np.all(np.diff(bp) >= 0) and bp.min() >= 0 and bp.max() < r
        sizes = np.bincount(bp, minlength=r)
        assert sizes.max() - sizes.min() <= 1
    src, dst, full = cut.leaf_pairs()
    s2, d2, per = cut.leaf_pairs(r)
    assert np.array_equal(src, s2) and np.array_equal(dst, d2)
    assert per.shape == (r, src.size) and np.array_equal(per.sum(axis=0), full)


def test_duplicate_entries_go_to_one_part():
    indptr = np.array([0, 3, 4, 5])
    indices = np.array([1, 1, 2, 0, 0])
    cut = EdgeCut.from_csr(indptr, indices, np.array([0, 1, 1, 0, 1]), np.arange(3), [0, 1, 2, 3])
    assert cut.part[0] == cut.part[1] == 0


@pytest.fixture(scope="module")
def graph_file(graph, tmp_path_factory):
    path = tmp_path_factory.mktemp("vc") / "g.h5"
    write_graph(path, graph)
    return path


def _err(capsys, argv):
    rc = run(argv)
    err = capsys.readouterr().err.strip().splitlines()
    return rc, err


@pytest.mark.parametrize(
    "extra,needle",
    [
        (["--delay", "4"], "--delay 4 needs more than 4 epochs"),
        (["--delay", "x"], "--delay must be 0"),
        (["--partition", "block"], "is a vertex partition"),
        (["--partition", "random"], "is a vertex partition"),
        (["--partition", "nope.h5"], "no such file"),
    ],
)
def test_bad_options_one_line_exit_2(graph_file, capsys, extra, needle):
    rc, err = _err(
        capsys,
        ["train", str(graph_file), "--scheme", "vertexcut", "--epochs", "4", "--quiet", *extra],
    )
    assert rc == 2 and len(err) == 1 and needle in err[0], err


def test_partition_files_refused_unless_a_vertex_cut_of_this_graph(graph_file, tmp_path, capsys):
    metis, libra, other = tmp_path / "metis.h5", tmp_path / "libra.h5", tmp_path / "other.h5"
    g2 = tmp_path / "g2.h5"
    write_graph(g2, rmat(7, edge_factor=4, seed=9, num_features=8, num_classes=3))
    for path, src, method in ((metis, graph_file, "metis"), (libra, graph_file, "libra")):
        assert run(["partition", str(src), "-m", method, "--parts", "1", "-o", str(path)]) == 0
    assert run(["partition", str(g2), "-m", "libra", "--parts", "1", "-o", str(other)]) == 0
    capsys.readouterr()
    base = ["train", str(graph_file), "--scheme", "vertexcut", "--epochs", "2", "--quiet"]
    rc, err = _err(capsys, [*base, "--partition", str(metis)])
    assert rc == 2 and len(err) == 1 and "not a vertex cut" in err[0]
    rc, err = _err(capsys, [*base, "--partition", str(other)])
    assert rc == 2 and len(err) == 1 and "different graph" in err[0]
    assert run([*base, "--partition", str(libra), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["partition"] == str(libra)
    # a vertex cut given to a vertex-partition scheme
    rc, err = _err(capsys, ["train", str(graph_file), "--partition", str(libra), "--quiet"])
    assert rc == 2 and len(err) == 1 and "vertex-cut" in err[0]


def _agg(table, e) -> np.ndarray:
    """(P, 4) training aggregation traffic of epoch e of a plan."""
    out = np.zeros((table.P, 4), dtype=np.int64)
    for k, v in table.epoch_phases(e).items():
        if k.startswith("L") and k.endswith(".agg"):
            out += v
    return out


def test_plans_of_the_three_modes(graph):
    cfg = TrainConfig(epochs=10, early_stopping=0, model="sage")
    plans = {
        d: plan_training(PlanTarget(graph, cfg, "vertexcut", 4, {"delay": d}, "libra")).table
        for d in ("0", "3", "none")
    }
    one = _agg(plans["0"], 5)
    assert one[:, 0].sum() > 0
    window = sum(_agg(plans["3"], e) for e in range(3, 6))
    assert np.array_equal(window[:, :2], one[:, :2])
    # before epoch 3 only the leaves' partials travel: half of it over those 3 epochs
    first = sum(_agg(plans["3"], e) for e in range(3))
    assert 2 * first[:, 0].sum() == one[:, 0].sum()
    assert all(not _agg(plans["none"], e).any() for e in range(10))
    # evaluation is exact in every mode
    ev = {d: plans[d].epoch_phases(5).get("eval.L0.fwd.agg") for d in plans}
    assert all(np.array_equal(ev[d], ev["0"]) for d in plans)
