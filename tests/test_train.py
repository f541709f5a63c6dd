"""Trainer, optimizer, outputs and the `train` command.

The central checks: serial training equals an independent dense numpy implementation, and a
2-"rank" row distribution (threads taking turns, exchanging blocks) equals serial training,
which shows the model touches the graph and global sums only through `ops`.
"""

from __future__ import annotations

import json
import threading

import h5py
import numba
import numpy as np
import pytest
import scipy.sparse as sp

from gcntrain.cli.main import run
from gcntrain.data.generate import default_dataset
from gcntrain.data.graph import Graph
from gcntrain.data.store import write_graph
from gcntrain.errors import InputError
from gcntrain.job.runner import run_job
from gcntrain.job.spec import JobSpec
from gcntrain.kernels.dropout import dropout_mask_rows
from gcntrain.model.functional import row_normalize
from gcntrain.model.normalize import support_matrix
from gcntrain.model.ops import Ops, SerialOps
from gcntrain.model.optim import Adam
from gcntrain.model.output import FILES
from gcntrain.model.trainer import TrainConfig, fit, should_stop


@pytest.fixture(scope="module")
def small():
    """A random labelled graph (60 nodes, 12 features, 3 classes) with splits."""
    rng = np.random.default_rng(0)
    n, f, c = 60, 12, 3
    y = rng.integers(0, c, n)
    P = np.where(y[:, None] == y[None, :], 0.25, 0.03)
    A = np.triu(rng.random((n, n)) < P, 1).astype(np.float64)
    A = A + A.T
    A[0, 0] = 1.0  # one self-loop
    X = (rng.random((n, f)) < 0.3) * 1.0 + 0.5 * np.eye(c)[y] @ rng.random((c, f))
    X[5] = 0.0  # a zero feature row
    M = sp.csr_matrix(A)
    perm = rng.permutation(n)
    train = np.zeros(n, bool)
    val = np.zeros(n, bool)
    test = np.zeros(n, bool)
    train[perm[:20]] = True
    val[perm[20:35]] = True
    test[perm[35:]] = True
    labels = y.astype(np.int64)
    labels[perm[40]] = -1  # an unlabeled test node
    return Graph(
        indptr=M.indptr.astype(np.int64),
        indices=M.indices.astype(np.int32),
        features=X.astype(np.float32),
        labels=labels,
        train_mask=train,
        val_mask=val,
        test_mask=test,
        name="small",
        num_classes=c,
    )


def masks_of(g: Graph) -> dict[str, np.ndarray]:
    return {"train": g.train_mask, "val": g.val_mask, "test": g.test_mask}


# ------------------------------------------------------ independent dense implementation
def dense_reference_gcn(
    g: Graph, seed: int, epochs: int, p: float, lr: float, wd: float, hidden: int
) -> tuple[list[np.ndarray], list[float]]:
    """Plain-numpy 2-layer GCN training with the reference recipe (dense matrices)."""
    A = g.adjacency().toarray().astype(np.float64)
    n = g.n
    Ahat = A + np.eye(n)
    d = Ahat.sum(axis=1)
    S = Ahat / np.sqrt(np.outer(d, d))
    X = g.features.astype(np.float64)
    s = X.sum(axis=1, keepdims=True)
    X = np.divide(X, s, out=np.zeros_like(X), where=s > 0)
    f, c = X.shape[1], g.num_classes
    rng = np.random.default_rng(seed)
    W0 = rng.uniform(-np.sqrt(6 / (f + hidden)), np.sqrt(6 / (f + hidden)), (f, hidden))
    W1 = rng.uniform(-np.sqrt(6 / (hidden + c)), np.sqrt(6 / (hidden + c)), (hidden, c))
    Ws = [W0, W1]
    ms = [np.zeros_like(W0), np.zeros_like(W1)]
    vs = [np.zeros_like(W0), np.zeros_like(W1)]
    tr = g.train_mask & (g.labels >= 0)
    Y = np.zeros((n, c))
    Y[np.flatnonzero(tr), g.labels[tr]] = 1.0
    rows = np.arange(n, dtype=np.int64)
    losses = []
    for e in range(epochs):
        M0 = np.empty((n, f), bool)
        M1 = np.empty((n, hidden), bool)
        dropout_mask_rows(rows, f, seed, e * 1024, p, M0)
        dropout_mask_rows(rows, hidden, seed, e * 1024 + 1, p, M1)
        X0 = X * M0 / (1 - p)
        Z0 = S @ X0 @ Ws[0]
        H1 = np.maximum(Z0, 0) * M1 / (1 - p)
        Z1 = S @ H1 @ Ws[1]
        E = np.exp(Z1 - Z1.max(axis=1, keepdims=True))
        P = E / E.sum(axis=1, keepdims=True)
        losses.append(-np.sum(Y * np.log(P)) / tr.sum() + wd * np.sum(Ws[0] ** 2) / 2)
        G1 = (P - Y) * tr[:, None] / tr.sum()
        dW1 = (S @ H1).T @ G1
        dZ0 = (S.T @ G1 @ Ws[1].T) * M1 / (1 - p) * (Z0 > 0)
        dW0 = (S @ X0).T @ dZ0 + wd * Ws[0]
        t = e + 1
        for k, gk in enumerate((dW0, dW1)):  # Adam, bias-corrected moments form
            ms[k] = 0.9 * ms[k] + 0.1 * gk
            vs[k] = 0.999 * vs[k] + 0.001 * gk * gk
            mhat = ms[k] / (1 - 0.9**t)
            vhat = vs[k] / (1 - 0.999**t)
            Ws[k] = Ws[k] - lr * mhat / (np.sqrt(vhat) + 1e-8 / np.sqrt(1 - 0.999**t))
    return Ws, losses


@pytest.mark.parametrize("sparse_features", [False, True])
def test_serial_training_equals_dense_numpy(small, sparse_features):
    cfg = TrainConfig(
        dtype="float64", epochs=6, early_stopping=0, seed=4, sparse_features=sparse_features
    )
    ops = SerialOps(support_matrix(small, "gcn"))
    res = fit(ops, small.features, small.labels, masks_of(small), 3, cfg)
    Ws, losses = dense_reference_gcn(small, seed=4, epochs=6, p=0.5, lr=0.01, wd=5e-4, hidden=16)
    assert res.epochs == 6
    np.testing.assert_allclose([r.loss for r in res.history], losses, rtol=1e-12)
    for got, want in zip(res.weights, Ws):
        assert np.max(np.abs(got["W"] - want)) < 1e-10


# --------------------------------------------------- 2 ranks (threads) versus serial
class _World:
    """Ranks as threads that take turns (one runs at a time) and meet in `exchange`."""

    def __init__(self, size: int):
        self.size = size
        self.turn = threading.Lock()
        self.barrier = threading.Barrier(size, timeout=120)
        self.slots: list = [None] * size

    def _wait(self) -> None:
        self.turn.release()
        self.barrier.wait()
        self.turn.acquire()

    def exchange(self, rank: int, obj) -> list:
        self.slots[rank] = obj
        self._wait()
        got = list(self.slots)
        self._wait()
        return got


class RowBlockOps(Ops):
    """1D row distribution for the test: each rank owns `rows` (any order); only the
    protocol's communication hooks and the two products are defined here."""

    def __init__(self, world: _World, rank: int, rows: np.ndarray, S: sp.csr_matrix):
        self.world, self.rank, self.size = world, rank, world.size
        self.rows = rows
        self.n_global = S.shape[0]
        self.S_rows = S[rows]
        self.T_rows = S.T.tocsr()[rows]

    def _gather(self, X: np.ndarray) -> np.ndarray:
        full = np.zeros((self.n_global, X.shape[1]), dtype=X.dtype)
        for rows, part in self.world.exchange(self.rank, (self.rows, X)):
            full[rows] = part
        return full

    def aggregate(self, X, *, phase):
        return self.S_rows @ self._gather(X)

    def aggregate_t(self, X, *, phase):
        return self.T_rows @ self._gather(X)

    def _sum(self, a, phase):
        parts = self.world.exchange(self.rank, np.asarray(a))
        return sum(parts[1:], parts[0].copy())

    _sum_nodes = _sum
    _sum_params = _sum

    def _decide(self, flag, phase):
        return any(self.world.exchange(self.rank, bool(flag)))


@pytest.mark.parametrize("model,agg,kind", [("gcn", "mean", "gcn"), ("sage", "mean", "sage-mean")])
def test_row_distributed_training_equals_serial(small, model, agg, kind):
    cfg = TrainConfig(
        model=model,
        aggregator=agg,
        dtype="float64",
        epochs=5,
        early_stopping=0,
        seed=2,
        hidden=[8, 5],
    )
    S = support_matrix(small, kind)
    serial = fit(SerialOps(S), small.features, small.labels, masks_of(small), 3, cfg)
    perm = np.random.default_rng(1).permutation(small.n).astype(np.int64)
    blocks = [perm[:23], perm[23:]]
    world = _World(2)
    results: list = [None, None]
    errors: list = []

    def rank_main(r: int) -> None:
        numba.set_num_threads(1)
        world.turn.acquire()
        try:
            rows = blocks[r]
            ops = RowBlockOps(world, r, rows, S)
            masks = {k: m[rows] for k, m in masks_of(small).items()}
            results[r] = fit(ops, small.features[rows], small.labels[rows], masks, 3, cfg)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)
            world.barrier.abort()
        finally:
            world.turn.release()

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for r, res in enumerate(results):
        for a, b in zip(res.history, serial.history):
            assert abs(a.loss - b.loss) < 1e-12 and abs(a.val_loss - b.val_loss) < 1e-12
            assert a.test_acc == b.test_acc
        for lw, sw in zip(res.weights, serial.weights):
            for k in sw:
                assert np.max(np.abs(lw[k] - sw[k])) < 1e-10
        np.testing.assert_array_equal(res.predictions, serial.predictions[blocks[r]])
        np.testing.assert_array_equal(res.rows, blocks[r])


# ------------------------------------------------------------------ pieces of the loop
def test_adam_matches_bias_corrected_form_and_adamw():
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((4, 3))
    grads = [rng.standard_normal((4, 3)) for _ in range(5)]
    for decay in (0.0, 0.1):
        w = w0.copy()
        opt = Adam([{"W": w}], lr=0.05, decoupled_decay=decay)
        ref = w0.copy()
        m = np.zeros_like(ref)
        v = np.zeros_like(ref)
        for t, g in enumerate(grads, start=1):
            opt.step([{"W": g}])
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            mhat, vhat = m / (1 - 0.9**t), v / (1 - 0.999**t)
            ref = ref * (1 - 0.05 * decay) - 0.05 * mhat / (
                np.sqrt(vhat) + 1e-8 / np.sqrt(1 - 0.999**t)
            )
        np.testing.assert_allclose(w, ref, rtol=1e-13)


def test_row_normalize_dense_and_sparse():
    X = np.array([[1.0, 3.0, 0.0], [0.0, 0.0, 0.0], [2.0, 0.0, 2.0]], dtype=np.float32)
    want = np.array([[0.25, 0.75, 0.0], [0.0, 0.0, 0.0], [0.5, 0.0, 0.5]])
    np.testing.assert_allclose(row_normalize(X), want, rtol=1e-7)
    got = row_normalize(sp.csr_matrix(X))
    assert sp.issparse(got) and got.dtype == np.float32
    np.testing.assert_allclose(got.toarray(), want, rtol=1e-7)


def test_should_stop_reference_rule_and_patience():
    # reference: stop when more than window+1 losses and the last > mean of the previous window
    losses = [1.0, 0.9, 0.8]
    assert not should_stop(losses, window=2, patience=None)  # only 3 = window + 1
    assert should_stop(losses + [0.86], window=2, patience=None)  # 0.86 > (0.9 + 0.8) / 2
    assert not should_stop(losses + [0.84], window=2, patience=None)
    assert not should_stop(losses + [5.0], window=0, patience=None)  # window 0: off
    assert not should_stop([1.0, 0.5, 0.6, 0.7], window=10, patience=3)
    assert should_stop([1.0, 0.5, 0.6, 0.7, 0.55], window=10, patience=3)


def test_early_stopping_and_patience_end_training(small):
    ops = SerialOps(support_matrix(small, "gcn"))
    cfg = TrainConfig(epochs=300, patience=5, lr=0.05, seed=1, dtype="float64")
    res = fit(ops, small.features, small.labels, masks_of(small), 3, cfg)
    vals = [r.val_loss for r in res.history]
    assert res.stopped_early and res.epochs < 300
    assert int(np.argmin(vals)) == len(vals) - 1 - 5  # exactly 5 without a gain
    cfg = TrainConfig(epochs=300, early_stopping=10, lr=0.05, seed=1, dtype="float64")
    res = fit(ops, small.features, small.labels, masks_of(small), 3, cfg)
    vals = [r.val_loss for r in res.history]
    assert res.stopped_early and vals[-1] > np.mean(vals[-11:-1])
    assert all(vals[i] <= np.mean(vals[i - 10 : i]) for i in range(11, len(vals) - 1))


def test_fit_rejects_bad_input(small):
    ops = SerialOps(support_matrix(small, "gcn"))
    with pytest.raises(InputError, match="dropout"):
        fit(ops, small.features, small.labels, masks_of(small), 3, TrainConfig(dropout=1.0))
    with pytest.raises(InputError, match="train mask"):
        fit(ops, small.features, small.labels, {"train": np.zeros(small.n, bool)}, 3, TrainConfig())
    with pytest.raises(InputError, match="number of classes"):
        fit(ops, small.features, small.labels, masks_of(small), 2, TrainConfig())


def test_training_without_val_and_test_masks(small):
    ops = SerialOps(support_matrix(small, "gcn"))
    res = fit(
        ops,
        small.features,
        small.labels,
        {"train": small.train_mask},
        3,
        TrainConfig(epochs=15, seed=0),
    )
    assert res.epochs == 15 and not res.stopped_early
    assert all(r.val_loss is None and r.test_acc is None for r in res.history)
    assert res.final["val_acc"] is None and 0 <= res.final["eval_train_acc"] <= 1


def test_float32_close_to_float64(small):
    cfg = {"epochs": 30, "early_stopping": 0, "seed": 5, "hidden": [16, 8]}
    r32, _ = run_job(JobSpec(small, TrainConfig(dtype="float32", **cfg)))
    r64, _ = run_job(JobSpec(small, TrainConfig(dtype="float64", **cfg)))
    assert r32.weights[0]["W"].dtype == np.float32 and r64.weights[0]["W"].dtype == np.float64
    l32 = np.array([r.loss for r in r32.history])
    l64 = np.array([r.loss for r in r64.history])
    np.testing.assert_allclose(l32, l64, rtol=2e-4)
    for a, b in zip(r32.weights, r64.weights):
        np.testing.assert_allclose(a["W"], b["W"], atol=2e-4)


# ------------------------------------------------------------- the embedded default data
def test_default_dataset_gcn_reaches_high_accuracy():
    res, summary = run_job(JobSpec(None, TrainConfig(seed=0)))
    classes = default_dataset().num_classes
    assert summary["num_nodes"] == default_dataset().n
    assert summary["test_acc"] > 0.8 > 3.0 / classes
    assert res.final["val_acc"] > 0.8


def test_graphsage_beats_chance_on_default_dataset():
    g = default_dataset()
    for agg in ("mean", "gcn"):
        res, summary = run_job(JobSpec(g, TrainConfig(model="sage", aggregator=agg, seed=1)))
        assert summary["test_acc"] > 3.0 / g.num_classes, agg
        assert res.layers[0]["bias"] is True


# ------------------------------------------------------------------------ the command
def test_cli_json_keys_and_ranges(capsys):
    assert run(["train", "--json", "--epochs", "25", "--seed", "3", "--hidden", "16,8"]) == 0
    out = json.loads(capsys.readouterr().out)
    for k in (
        "final_loss",
        "train_acc",
        "val_acc",
        "test_acc",
        "epochs",
        "epoch_seconds",
        "t_aggregation",
        "t_dense",
        "t_other",
        "stopped_early",
        "model",
        "dtype",
        "seed",
        "num_nodes",
    ):
        assert k in out, k
    for k in ("train_acc", "val_acc", "test_acc"):
        assert 0.0 <= out[k] <= 1.0
    assert out["final_loss"] > 0 and np.isfinite(out["final_loss"])
    assert 1 <= out["epochs"] <= 25 and isinstance(out["stopped_early"], bool)
    for k in ("epoch_seconds", "t_aggregation", "t_dense", "t_other"):
        assert out[k] >= 0
    assert out["t_aggregation"] + out["t_dense"] <= out["epoch_seconds"] * 1.5 + 1e-3
    assert (out["model"], out["dtype"], out["seed"]) == ("gcn", "float32", 3)
    assert out["num_nodes"] == default_dataset().n and out["hidden"] == [16, 8]


def test_cli_human_output_and_progress(capsys):
    assert run(["train", "--epochs", "20", "--model", "sage", "--dtype", "float64"]) == 0
    cap = capsys.readouterr()
    assert "test acc" in cap.out and "sage" in cap.out
    shown = [ln.split()[1] for ln in cap.err.splitlines() if ln.startswith("epoch")]
    assert shown[0] == "1/20" and shown[-1] == "20/20"  # the rate: tests/test_progress.py


def test_cli_out_writes_the_four_files(tmp_path, capsys, small):
    path = tmp_path / "small.h5"
    write_graph(path, small)
    out = tmp_path / "run" / "a"
    assert (
        run(
            [
                "train",
                str(path),
                "--epochs",
                "7",
                "--early-stopping",
                "0",
                "--seed",
                "9",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    assert sorted(p.name for p in out.iterdir()) == sorted(FILES)  # no temp files left
    lines = (out / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["epoch"] for x in lines] == list(range(1, 8))
    cfg = json.loads((out / "config.json").read_text())
    assert cfg["seed"] == 9 and cfg["epochs"] == 7 and cfg["hidden"] == [16]
    with h5py.File(out / "weights.h5") as f:
        assert sorted(f) == ["layer0", "layer1"]
        assert f["layer0/W"].shape == (12, 16) and f["layer1/W"].shape == (16, 3)
    with h5py.File(out / "predictions.h5") as f:
        np.testing.assert_array_equal(f["node_ids"][:], np.arange(small.n))
        np.testing.assert_array_equal(f["label"][:], small.labels)
        assert set(np.unique(f["predicted"][:])) <= {0, 1, 2}
    assert "outputs" in capsys.readouterr().out


def test_cli_graph_without_labels_is_input_error(tmp_path, capsys, small):
    path = tmp_path / "unlabeled.h5"
    g = Graph(indptr=small.indptr, indices=small.indices, features=small.features, name="unlabeled")
    write_graph(path, g)
    assert run(["train", str(path), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(path) in err[0] and "labels" in err[0]
    assert run(["train", str(tmp_path / "missing.h5")]) == 2
    assert run(["train", "--hidden", "0"]) == 2
    assert run(["train", "--dropout", "1.5"]) == 2


def test_counts_read_in_the_right_number():
    from gcntrain.cli.display import count

    assert count(1, "rank") == "1 rank" and count(4, "rank") == "4 ranks"
    assert count(0, "node") == "0 nodes"
