"""`convert --features F --classes C`: synthetic node data for a graph without any (a SNAP
edge list), deterministic by seed; refused where the graph has node data already."""

from __future__ import annotations

import json

import numpy as np

from gcntrain.cli.main import run
from gcntrain.data.store import read_graph


def _edges(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("# FromNodeId\tToNodeId\n0\t1\n1\t2\n2\t0\n2\t3\n3\t4\n4\t5\n5\t3\n")
    return path


def test_snap_graph_gets_seeded_node_data_and_trains(tmp_path, capsys):
    src = _edges(tmp_path)
    outs = []
    for i, seed in enumerate((1, 1, 2)):
        out = tmp_path / f"g{i}.h5"
        argv = ["convert", str(src), "-o", str(out), "--symmetrize", "--features", "5"]
        assert run([*argv, "--classes", "3", "--seed", str(seed), "--json"]) == 0
        d = json.loads(capsys.readouterr().out)
        assert (d["features"], d["classes"]) == (5, 3)
        outs.append(read_graph(out))
    a, b, c = outs
    assert a.features.shape == (6, 5) and a.features.dtype == np.float32
    assert set(np.unique(a.labels)) <= {0, 1, 2}
    assert (a.train_mask.sum(), a.val_mask.sum(), a.test_mask.sum()) == (4, 1, 1)
    assert not (a.train_mask & a.val_mask).any() and not (a.val_mask & a.test_mask).any()
    assert np.array_equal(a.features, b.features) and np.array_equal(a.labels, b.labels)
    assert not np.array_equal(a.features, c.features)
    argv = ["train", str(tmp_path / "g0.h5"), "--epochs", "2", "--quiet", "--json"]
    assert run(argv) == 0
    assert json.loads(capsys.readouterr().out)["num_features"] == 5


def test_refused_without_classes_or_on_a_graph_with_node_data(tmp_path, capsys):
    src = _edges(tmp_path)
    assert run(["convert", str(src), "-o", str(tmp_path / "x.h5"), "--features", "5"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--features and --classes go together" in err[0]
    assert not (tmp_path / "x.h5").exists()
    from tests.mpi.worker import shared_dir

    cora = str(shared_dir() / "datasets" / "planetoid" / "ind.cora")
    argv = ["convert", cora, "-o", str(tmp_path / "c.h5"), "--features", "4", "--classes", "2"]
    assert run(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "already has node features or labels" in err[0]
