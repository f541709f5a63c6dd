"""`gcntrain.api`: graphs built in Python equal each other and the converters' result, and
`api.train` / `api.simulate` give what `gcntrain train --json` / `simulate --json` give for
the same graph saved to HDF5; the examples of docs/api.md run."""

from __future__ import annotations

import inspect
import json
import re
import sys
import textwrap
from pathlib import Path

import click
import h5py
import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

from gcntrain import api
from gcntrain.cli.main import run
from gcntrain.comm.communicator import SelfComm
from gcntrain.data.generate import rmat
from gcntrain.errors import InputError
from gcntrain.simulate.summary import TRAFFIC_KEYS
from tests.mpi.launch import REPO, run_mpi

#: settings of the small training runs (float64: a distributed run matches to rounding)
TRAIN = dict(epochs=4, seed=3, hidden=8, early_stopping=0, dtype="float64")
TRAIN_ARGV = ["--epochs", "4", "--seed", "3", "--hidden", "8", "--early-stopping", "0"]
TRAIN_ARGV += ["--dtype", "float64"]


@pytest.fixture(scope="module")
def parts():
    """Node data and a directed edge list with duplicates (the generator's graph, one
    direction of each edge plus some repeats)."""
    g = rmat(7, edge_factor=4, seed=5, num_features=10, num_classes=3)
    A = sp.triu(g.adjacency(), k=1).tocoo()
    rng = np.random.default_rng(1)
    extra = rng.integers(0, A.nnz, 20)
    src = np.concatenate([A.row, A.col[extra]]).astype(np.int64)
    dst = np.concatenate([A.col, A.row[extra]]).astype(np.int64)
    return dict(
        n=g.n,
        src=src,
        dst=dst,
        features=g.features,
        labels=g.labels,
        train=np.flatnonzero(g.train_mask),
        val=g.val_mask,
        test=np.flatnonzero(g.test_mask),
    )


@pytest.fixture(scope="module")
def graph(parts):
    p = parts
    adj = sp.coo_matrix((np.ones(p["src"].size), (p["src"], p["dst"])), shape=(p["n"], p["n"]))
    return api.graph_from_scipy(
        adj,
        p["features"],
        p["labels"],
        train=p["train"],
        val=p["val"],
        test=p["test"],
        symmetrize=True,
        self_loops="add",
        name="apitoy",
    )


@pytest.fixture(scope="module")
def graph_file(graph, tmp_path_factory):
    path = tmp_path_factory.mktemp("api") / "apitoy.h5"
    api.save_graph(graph, path)
    return path


def _cli_json(capsys, argv: list[str]) -> dict:
    capsys.readouterr()
    assert run(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


# ------------------------------------------------------------------------------- graphs


def test_small_graph_by_hand():
    g = api.graph_from_arrays(
        [0, 1, 0], [1, 2, 1], 4, labels=[0, 1, 1, -1], symmetrize=True, self_loops="add"
    )
    want = np.array([[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 0], [0, 0, 0, 1]], dtype=np.float32)
    assert np.array_equal(g.adjacency().toarray(), want)
    assert g.directed is False and g.num_classes == 2 and g.data is None
    d = api.graph_from_arrays([0, 1], [1, 2], 3, values=[2.0, 5.0])
    assert d.directed is True
    assert np.array_equal(d.adjacency().toarray(), [[0, 2, 0], [0, 0, 5], [0, 0, 0]])


def test_constructors_give_the_same_graph(parts, graph):
    p = parts
    n = p["n"]
    masks = {"train": p["train"], "val": p["val"], "test": p["test"]}
    arrays = api.graph_from_arrays(
        p["src"],
        p["dst"],
        n,
        features=p["features"],
        labels=p["labels"],
        masks=masks,
        symmetrize=True,
        self_loops="add",
        name="apitoy",
    )
    G = nx.Graph(name="apitoy")
    for v in range(n):
        G.add_node(v, x=p["features"][v], y=int(p["labels"][v]))
    G.add_edges_from(zip(p["src"].tolist(), p["dst"].tolist()))
    bool_masks = [np.isin(np.arange(n), p["train"]), p["val"], np.isin(np.arange(n), p["test"])]
    from_nx = api.graph_from_networkx(G, masks=bool_masks, self_loops="add")
    for g in (arrays, from_nx):
        assert g.content_hash() == graph.content_hash()
        assert (g.n, g.nnz, g.directed, g.num_classes, g.name) == (
            graph.n,
            graph.nnz,
            graph.directed,
            graph.num_classes,
            graph.name,
        )
    assert graph.directed is False and graph.self_loop_count() == n
    # the converters' symmetrize: every stored entry has its transpose
    A = graph.adjacency()
    assert (A != A.T).nnz == 0
    # without symmetrize the scipy matrix keeps its directions
    adj = sp.coo_matrix((np.ones(p["src"].size), (p["src"], p["dst"])), shape=(n, n))
    directed = api.graph_from_scipy(adj, p["features"], p["labels"], train=p["train"])
    assert directed.directed is True and directed.nnz == sp.csr_matrix(adj).nnz


def test_graph_file_round_trip(graph, graph_file):
    back = api.load_graph(graph_file)
    assert back.content_hash() == graph.content_hash() and back.name == graph.name


def test_bad_graph_inputs_raise_input_error():
    with pytest.raises(InputError, match="out of range"):
        api.graph_from_arrays([0, 5], [1, 2], 4)
    with pytest.raises(InputError, match="train index 9"):
        api.graph_from_arrays([0], [1], 4, train=[1, 9])
    with pytest.raises(InputError, match="overlap"):
        api.graph_from_arrays([0], [1], 4, labels=[0, 1, 0, 1], train=[0, 1], val=[1, 2])
    with pytest.raises(InputError, match="labels has 3 entries"):
        api.graph_from_arrays([0], [1], 4, labels=[0, 1, 0])
    with pytest.raises(InputError, match="square"):
        api.graph_from_scipy(sp.coo_matrix((3, 4)))
    with pytest.raises(InputError, match="self-loop mode"):
        api.graph_from_arrays([0], [1], 2, self_loops="twice")


# ----------------------------------------------------------------------------- training


def test_train_equals_the_cli_on_the_saved_graph(graph, graph_file, tmp_path, capsys):
    res = api.train(graph, **TRAIN)
    out = tmp_path / "run"
    cli = _cli_json(
        capsys,
        ["train", str(graph_file), "--scheme", "serial", *TRAIN_ARGV, "--json", "-o", str(out)],
    )
    assert set(res.summary) == set(cli) - {"out"}
    for key in ("final_loss", "train_acc", "val_loss", "val_acc", "test_acc", "test_loss"):
        assert res.summary[key] == cli[key], key
    for key in ("epochs", "graph", "num_nodes", "num_classes", "hidden", "seed", "scheme"):
        assert res.summary[key] == cli[key], key
    with h5py.File(out / "predictions.h5", "r") as f:
        ids, predicted = f["node_ids"][()], f["predicted"][()]
    assert np.array_equal(res.rows, np.arange(graph.n))
    assert np.array_equal(res.predictions[ids], predicted) and ids.size == graph.n
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert len(res.history) == len(records) == 4
    for mine, theirs in zip(res.history, records):
        assert set(mine) == set(theirs)
        for key in ("epoch", "loss", "train_acc", "val_loss", "val_acc", "test_acc"):
            assert mine[key] == theirs[key], key
    with h5py.File(out / "weights.h5", "r") as f:
        for i, layer in enumerate(res.weights):
            for name, w in layer.items():
                assert np.array_equal(w, f[f"layer{i}"][name][()]), (i, name)
    table = res.history_table()
    assert np.array_equal(table["epoch"], [1, 2, 3, 4])
    assert table["loss"].dtype == np.float64
    assert np.array_equal(table["loss"], [r["loss"] for r in records])


def test_history_table_marks_epochs_without_evaluation(graph):
    seen = []
    res = api.train(graph, epochs=3, eval_every=2, early_stopping=0, callback=seen.append)
    assert [r["epoch"] for r in seen] == [1, 2, 3]
    assert [r["loss"] for r in seen] == [r["loss"] for r in res.history]
    table = res.history_table()
    # evaluated after epoch 2 and at the last one
    assert np.isnan(table["val_acc"][0]) and not np.isnan(table["val_acc"][1:]).any()


def test_keywords_follow_the_cli_options(graph):
    with pytest.raises(TypeError, match="'epoch'.*epochs"):
        api.train(graph, epoch=3)
    with pytest.raises(TypeError, match="'weight_decays'.*weight_decay"):
        api.train(graph, epochs=1, weight_decays=0.1)
    with pytest.raises(TypeError, match="'grd'.*grid"):
        api.simulate(graph, 4, grd="2x2")
    with pytest.raises(InputError, match="model"):
        api.train(graph, epochs=1, model="gat")
    with pytest.raises(InputError, match="hidden"):
        api.train(graph, epochs=1, hidden="16,x")
    # the explicit keyword defaults are the commands' defaults
    from gcntrain.cli.simulate_cmd import simulate as sim_cmd
    from gcntrain.cli.train_cmd import train as train_cmd

    def default(command, name):
        ctx = click.Context(command)
        return next(p for p in command.params if p.name == name).get_default(ctx)

    sig = inspect.signature(api.train).parameters
    assert sig["epochs"].default == default(train_cmd, "epochs")
    assert inspect.signature(api.simulate).parameters["scheme"].default == default(
        sim_cmd, "scheme"
    )
    # a keyword of a CLI option changes the run as the option does
    a = api.train(graph, epochs=2, hidden=[4, 6], no_normalize_features=True)
    assert a.summary["hidden"] == [4, 6] and len(a.weights) == 3
    assert a.weights[0]["W"].shape[1] == 4


def test_other_schemes_on_one_process(graph):
    serial = api.train(graph, **TRAIN)
    one_d = api.train(graph, **{**TRAIN, "scheme": "1d"}, comm=SelfComm())
    assert one_d.summary["scheme"] == "1d" and one_d.summary["ranks"] == 1
    assert one_d.summary["final_loss"] == pytest.approx(serial.summary["final_loss"], rel=1e-12)
    assert np.array_equal(one_d.predictions, serial.predictions)
    with pytest.raises(InputError, match="replication 2"):
        api.train(graph, epochs=1, scheme="1.5d", replication=2, comm=SelfComm())


_MPI_SCRIPT = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    from mpi4py import MPI
    from gcntrain import api
    g = api.load_graph(sys.argv[1])
    res = api.train(g, scheme="1d", comm=MPI.COMM_WORLD, **json.loads(sys.argv[2]))
    rank = MPI.COMM_WORLD.rank
    with open(f"{sys.argv[3]}/rank{rank}.json", "w") as f:
        json.dump({"rank": rank, "summary": res.summary, "rows": res.rows.tolist(),
                   "predictions": res.predictions.tolist()}, f)
    """
)


@pytest.mark.mpi
def test_train_passes_the_communicator(graph, graph_file, tmp_path):
    serial = api.train(graph, **TRAIN)
    argv = [sys.executable, "-c", _MPI_SCRIPT, str(graph_file), json.dumps(TRAIN), str(tmp_path)]
    res = run_mpi(2, argv, timeout=300, env={"PYTHONPATH": str(REPO)})
    assert res.returncode == 0, res.stderr[-3000:]
    out = [json.loads(p.read_text()) for p in sorted(tmp_path.glob("rank*.json"))]
    assert sorted(o["rank"] for o in out) == [0, 1]
    covered = np.zeros(graph.n, dtype=bool)
    for o in out:
        assert o["summary"]["ranks"] == 2 and o["summary"]["scheme"] == "1d"
        assert o["summary"]["bytes_sent_max"] > 0
        assert o["summary"]["final_loss"] == pytest.approx(serial.summary["final_loss"], rel=1e-9)
        rows = np.asarray(o["rows"])
        assert np.array_equal(np.asarray(o["predictions"]), serial.predictions[rows])
        covered[rows] = True
    assert covered.all()


# ---------------------------------------------------------------------------- simulate


@pytest.mark.parametrize(
    "kw, argv",
    [
        (dict(scheme="2d", grid="2x2"), ["--scheme", "2d", "--grid", "2x2"]),
        (
            dict(scheme="1d", machine="fugaku", hidden=[8, 8]),
            ["--scheme", "1d", "--machine", "fugaku", "--hidden", "8,8"],
        ),
    ],
)
def test_simulate_equals_the_cli(graph, graph_file, capsys, kw, argv):
    mine = api.simulate(graph, 4, epochs=3, **kw)
    cli = _cli_json(
        capsys, ["simulate", str(graph_file), "--ranks", "4", "--epochs", "3", *argv, "--json"]
    )
    assert set(mine) == set(cli)
    for key in TRAFFIC_KEYS:
        assert mine[key] == cli[key], key
    assert mine["bytes_sent_max"] > 0
    for key in ("phases_per_epoch", "memory_bytes_max", "spmm_nnz_max", "scheme_options"):
        assert mine[key] == cli[key], key
    if "machine" in kw:
        assert mine["epoch_seconds"] == cli["epoch_seconds"] > 0


def test_simulate_sweep_equals_the_cli(graph, graph_file, capsys):
    mine = api.simulate(graph, 4, sweep=True, scheme="2d", machine="local", epochs=3)
    argv = ["--ranks", "4", "--sweep", "--scheme", "2d", "--machine", "local", "--epochs", "3"]
    cli = _cli_json(capsys, ["simulate", str(graph_file), *argv, "--json"])
    assert set(mine) == set(cli)

    def rows(d):
        keys = ("label", "bytes_sent_max", "messages_max", "epoch_seconds", "memory_bytes_max")
        return [tuple(r[k] for k in keys) for r in d["ranking"]]

    assert len(rows(mine)) > 1 and rows(mine) == rows(cli)
    assert mine["recommended"]["label"] == cli["recommended"]["label"]


# -------------------------------------------------------------------------------- docs


def test_docs_examples_run(capsys):
    text = (Path(REPO) / "docs" / "api.md").read_text()
    blocks = re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)
    assert len(blocks) >= 3
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, "docs/api.md", "exec"), namespace)
    assert namespace["plan"]["ranks"] == 1024
    assert "test accuracy" in capsys.readouterr().out
