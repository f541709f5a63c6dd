"""The epoch without waste (issue 52, part 2): the run's workspace and the in-place ReLU.

A training run through the workspace and the in-place ReLU equals, bit for bit, the same run
with every block allocated afresh (the code before them); the dropped input a layer keeps
comes from one buffer every epoch; an aggregation-first layer's dropped input, freed at
once, does not (holding it would raise the peak, tests/test_train_memory.py).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from gcntrain.data.generate import rmat
from gcntrain.model import compute, functional, trainer
from gcntrain.model.normalize import support_kind, support_matrix
from gcntrain.model.ops import SerialOps
from gcntrain.model.trainer import TrainConfig, fit
from gcntrain.model.workspace import Workspace
from gcntrain.model.wrappers import OpsProxy

CONFIGS = {
    "gcn-f32": TrainConfig(epochs=4, early_stopping=0),
    "gcn-f64-csr-bias": TrainConfig(
        epochs=3, early_stopping=0, dtype="float64", sparse_features=True, bias=True
    ),
    "gcn-agg-first-2-hidden": TrainConfig(
        epochs=3, early_stopping=0, order="agg_first", hidden=[16, 8]
    ),
    "sage": TrainConfig(epochs=3, early_stopping=0, model="sage", hidden=[16, 8]),
    "label-prop-norm": TrainConfig(
        epochs=3, early_stopping=0, label_prop=0.4, norm="layer", hidden=[16, 8]
    ),
    "batch-norm": TrainConfig(epochs=3, early_stopping=0, norm="batch", hidden=[16, 8]),
}


@pytest.fixture(scope="module")
def graph():
    return rmat(9, edge_factor=8, seed=5, num_features=40, num_classes=5)


def _run(g, config, ops=None):
    ops = ops or SerialOps(support_matrix(g, support_kind(config.model, config.aggregator)))
    masks = {"train": g.train_mask, "val": g.val_mask, "test": g.test_mask}
    return fit(ops, g.features, g.labels, masks, g.num_classes, config)


def _allocating(monkeypatch) -> None:
    """Every block afresh, as before the workspace: no buffer served, ReLU and its
    gradient into new arrays."""
    monkeypatch.setattr(Workspace, "serves", lambda self, name: False)
    monkeypatch.setattr(compute.HostCompute, "relu", staticmethod(functional.relu))
    plain = functional.relu_backward
    monkeypatch.setattr(
        compute.HostCompute, "relu_backward", staticmethod(lambda dH, Z, out=None: plain(dH, Z))
    )


def _same(a, b) -> list[str]:
    diffs = [
        f"w{i}.{k}"
        for i, (x, y) in enumerate(zip(a.weights, b.weights))
        for k in x
        if not np.array_equal(x[k], y[k])
    ]
    for key in ("loss", "train_acc", "val_loss", "val_acc", "test_acc"):
        if [getattr(r, key) for r in a.history] != [getattr(r, key) for r in b.history]:
            diffs.append(key)
    if a.final != b.final or not np.array_equal(a.predictions, b.predictions):
        diffs.append("final")
    return diffs


@pytest.mark.parametrize("name", list(CONFIGS))
def test_the_workspace_and_in_place_relu_equal_fresh_blocks_bit_for_bit(graph, name, monkeypatch):
    got = _run(graph, CONFIGS[name])
    with monkeypatch.context() as m:
        _allocating(m)
        want = _run(graph, CONFIGS[name])
    assert _same(got, want) == []


class _Drops(OpsProxy):
    """Records the result of every forward dropout, by phase key."""

    def __init__(self, inner):
        super().__init__(inner)
        self.results: dict[str, list] = {}

    def _call(self, name, fn, args, kwargs):
        out = fn(*args, **kwargs)
        if name == "dropout" and args[1] is not None:  # a training pass's (with a mask key)
            self.results.setdefault(kwargs["phase"].key, []).append(out)
        return out


def _workspaces(monkeypatch) -> list[Workspace]:
    made: list[Workspace] = []

    class Kept(Workspace):
        def __init__(self):
            super().__init__()
            made.append(self)

    monkeypatch.setattr(trainer, "Workspace", Kept)
    return made


def test_a_kept_dropped_input_is_one_buffer_every_epoch(graph, monkeypatch):
    """GCN 40 -> 16 -> 5: both layers multiply first and keep drop(H) for dW: each layer's
    dropout writes into one buffer, made in the first epoch (two buffers in all)."""
    made = _workspaces(monkeypatch)
    config = TrainConfig(epochs=4, early_stopping=0, hidden=[16])
    ops = _Drops(SerialOps(support_matrix(graph, "gcn")))
    _run(graph, config, ops)
    assert sorted(ops.results) == ["L0.fwd.dropout", "L1.fwd.dropout"]
    for key, outs in ops.results.items():
        assert len(outs) == 4
        assert all(np.shares_memory(o, outs[0]) for o in outs[1:]), key
    (ws,) = made
    assert ws.names() == ["L0.fwd.dropout", "L1.fwd.dropout"] and ws.allocations == 2
    assert ops.workspace is None  # the run's buffers are let go after it


def test_an_aggregation_first_layer_allocates_its_dropped_input_as_before(graph, monkeypatch):
    """agg_first frees drop(H) right after S drop(H): not served, a new block every epoch;
    a CSR input's kept values come from one buffer (mm_first)."""
    made = _workspaces(monkeypatch)
    config = TrainConfig(epochs=3, early_stopping=0, order="agg_first")
    ops = _Drops(SerialOps(support_matrix(graph, "gcn")))
    _run(graph, config, ops)
    outs = ops.results["L0.fwd.dropout"]
    assert not any(np.shares_memory(a, b) for a in outs for b in outs if a is not b)
    assert made[0].names() == []
    made.clear()
    config = TrainConfig(epochs=3, early_stopping=0, sparse_features=True, hidden=[16])
    ops = _Drops(SerialOps(support_matrix(graph, "gcn")))
    _run(graph, config, ops)
    outs = ops.results["L0.fwd.dropout"]
    assert all(sp.issparse(o) and np.shares_memory(o.data, outs[0].data) for o in outs)
    assert made[0].names() == ["L0.fwd.dropout", "L1.fwd.dropout"]


def test_workspace_buffers_follow_shape_and_dtype():
    ws = Workspace()
    a = ws.take("x", (3, 4), np.float32)
    assert ws.take("x", (3, 4), np.float32) is a and ws.allocations == 1
    b = ws.take("x", (3, 4), np.float64)
    assert b.dtype == np.float64 and ws.allocations == 2 and ws.nbytes == 96
    ws.take("y", (2,), np.float32)
    assert ws.names() == ["x", "y"] and not ws.serves("x")
    ws.serve("x")
    assert ws.serves("x")
    ws.clear()
    assert ws.nbytes == 0


SPECIALS = [0.0, -0.0, 1.5, -2.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("layout", ["c", "f", "1d"])
def test_in_place_relu_gives_the_bits_of_np_maximum(dtype, layout):
    rng = np.random.default_rng(3)
    Z = rng.standard_normal((37, 9)).astype(dtype)
    Z.flat[: len(SPECIALS)] = SPECIALS
    Z = {"c": Z, "f": np.asfortranarray(Z), "1d": Z.ravel()}[layout]
    want = functional.relu(Z)
    got = functional.relu_inplace(Z)
    assert got is Z

    def bits(a):
        return np.ascontiguousarray(a).view(np.uint8)

    assert np.array_equal(bits(got), bits(want))  # NaN kept, -0.0 made +0.0 as NumPy does


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_relu_gradient_in_place_equals_a_new_array(dtype):
    rng = np.random.default_rng(4)
    Z = rng.standard_normal((41, 7)).astype(dtype)
    Z.flat[: len(SPECIALS)] = SPECIALS
    H = functional.relu(Z)
    dH = rng.standard_normal(Z.shape).astype(dtype)
    want = functional.relu_backward(dH, Z)
    assert np.array_equal(functional.relu_backward(dH, H), want)  # H works as Z does
    got = functional.relu_backward(dH, H, out=dH)
    assert got is dH and np.array_equal(got, want)
    # an out that cannot take the result: a new array
    bad = np.empty((41, 7), dtype=np.float32 if dtype == np.float64 else np.float64)
    other = functional.relu_backward(want.copy(), H, out=bad)
    assert other is not bad and np.array_equal(other, want)


def test_dropout_into_a_buffer_equals_a_new_array():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((50, 6)).astype(np.float32)
    rows = np.arange(100, 150)
    want = functional.dropout_forward(X, rows, 7, 3, 0.4, col0=2)
    buf = np.full_like(X, np.nan)
    got = functional.dropout_forward(X, rows, 7, 3, 0.4, col0=2, out=buf)
    assert got is buf and np.array_equal(got, want)
    Xs = sp.random(50, 6, density=0.3, random_state=1, format="csr", dtype=np.float64)
    want_s = functional.dropout_forward(Xs, rows, 7, 3, 0.4)
    vals = np.empty(Xs.nnz)
    got_s = functional.dropout_forward(Xs, rows, 7, 3, 0.4, out=vals)
    assert np.shares_memory(got_s.data, vals) and np.array_equal(got_s.toarray(), want_s.toarray())
    small = np.empty((49, 6), dtype=np.float32)  # does not fit: ignored
    assert functional.dropout_forward(X, rows, 7, 3, 0.4, out=small) is not small
    dG = rng.standard_normal((50, 6)).astype(np.float32)
    want_g = functional.dropout_backward(dG, rows, 7, 3, 0.4)
    assert np.array_equal(functional.dropout_backward(dG, rows, 7, 3, 0.4, out=dG), want_g)
