"""The evaluation's first layer from a cached S @ X (``--eval-cache``, issue 52 part 2).

The training pass never reads the cache: weights, training losses and training accuracies
are bit for bit those of a run without it.  An aggregation-first layer evaluates ``(S X) W``
either way: everything is bit for bit.  A multiplication-first layer's evaluation becomes
``(S X) W`` instead of ``S (X W)``: the same sums in another order, so the validation and
test losses may differ by rounding; the stated tolerance is 1e-6 relative (float32
logits: a few units in the last place per entry, averaged over the mask's nodes).
"""

from __future__ import annotations

import numpy as np
import pytest

from gcntrain import api
from gcntrain.data.generate import rmat
from gcntrain.errors import InputError
from gcntrain.model.evalcache import decide
from gcntrain.model.normalize import support_kind, support_matrix
from gcntrain.model.ops import SerialOps
from gcntrain.model.trainer import TrainConfig, fit, make_network
from gcntrain.model.wrappers import OpsProxy, RecordingOps

#: relative tolerance of the evaluation losses where the first layer multiplies first
EVAL_RTOL = 1e-6
EVAL_KEYS = ("val_loss", "test_loss", "val_acc", "test_acc")


@pytest.fixture(scope="module")
def graph():
    return rmat(10, edge_factor=8, seed=11, num_features=48, num_classes=6)


def _masks(g):
    return {"train": g.train_mask, "val": g.val_mask, "test": g.test_mask}


def _fit(g, config, ops=None, **kw):
    ops = ops or SerialOps(support_matrix(g, support_kind(config.model, config.aggregator)))
    return fit(ops, g.features, g.labels, _masks(g), g.num_classes, config, **kw)


def _pair(g, **kw):
    base = TrainConfig(epochs=5, early_stopping=0, **kw)
    on = TrainConfig(epochs=5, early_stopping=0, eval_cache=True, **kw)
    return _fit(g, base), _fit(g, on)


def _training_equal(a, b) -> bool:
    same_w = all(
        np.array_equal(x[k].view(np.uint8), y[k].view(np.uint8))
        for x, y in zip(a.weights, b.weights)
        for k in x
    )
    hist = [(r.loss, r.train_acc) for r in a.history] == [(r.loss, r.train_acc) for r in b.history]
    return same_w and hist


@pytest.mark.parametrize(
    "kw",
    [{}, {"dtype": "float64", "sparse_features": True, "bias": True}, {"model": "sage"}],
    ids=["gcn-f32", "gcn-f64-csr-bias", "sage-f32"],
)
def test_multiplication_first_evaluation_agrees_to_rounding(graph, kw):
    off, on = _pair(graph, **kw)
    itemsize = np.dtype(kw.get("dtype", "float32")).itemsize
    assert on.eval_cache.on and on.eval_cache.nbytes == graph.n * 48 * itemsize
    assert off.eval_cache is None
    assert _training_equal(off, on)
    for a, b in zip(off.history, on.history):
        assert a.val_acc == b.val_acc and a.test_acc == b.test_acc
        assert b.val_loss == pytest.approx(a.val_loss, rel=EVAL_RTOL, abs=0)
    for k in ("val_loss", "test_loss", "eval_train_loss"):
        assert on.final[k] == pytest.approx(off.final[k], rel=EVAL_RTOL, abs=0)
    assert on.final["val_acc"] == off.final["val_acc"]
    assert np.array_equal(on.predictions, off.predictions)


@pytest.mark.parametrize("model", ["gcn", "sage"])
def test_aggregation_first_evaluation_is_bit_for_bit(graph, model):
    off, on = _pair(graph, model=model, order="agg_first", hidden=[64])
    assert on.eval_cache.on
    assert _training_equal(off, on)
    assert [_metrics(r) for r in off.history] == [_metrics(r) for r in on.history]
    assert off.final == on.final and np.array_equal(off.predictions, on.predictions)


def _metrics(rec) -> tuple:
    return rec.loss, rec.train_acc, rec.val_loss, rec.val_acc, rec.test_acc


def test_the_evaluations_make_no_graph_product_at_the_first_layer(graph):
    """One S @ X before the first epoch; no evaluation aggregates at layer 0 afterwards,
    training passes aggregate as before (the calls `RecordingOps` sees)."""
    cfg = TrainConfig(epochs=3, early_stopping=0)
    S = support_matrix(graph, "gcn")
    calls = {}
    for on in (False, True):
        ops = RecordingOps(SerialOps(S))
        _fit(graph, TrainConfig(**{**cfg.to_dict(), "eval_cache": on}), ops)
        calls[on] = [
            (c.method, c.phase.key, c.phase.epoch, c.args[0][1][1])
            for c in ops.calls
            if c.method.startswith("aggregate")
        ]
    first = "eval.L0.fwd.agg"
    cached = [c for c in calls[True] if c[1] == first]
    assert cached == [("aggregate", first, -1, graph.num_features)]
    each = [c for c in calls[False] if c[1] == first]
    assert each == [("aggregate", first, e, 16) for e in (0, 1, 2, -1)]
    rest = [c for c in calls[True] if c[1] != first]
    assert rest == [c for c in calls[False] if c[1] != first]


@pytest.mark.parametrize(
    "kw, why",
    [
        ({"label_prop": 0.3}, "label propagation"),
        ({"norm": "layer"}, "LayerNorm"),
        ({"norm": "batch"}, "BatchNorm"),
    ],
)
def test_off_where_the_model_changes_the_first_layers_input(graph, kw, why):
    off, on = _pair(graph, **kw)
    assert not on.eval_cache.on and why in on.eval_cache.why
    assert [r.val_loss for r in off.history] == [r.val_loss for r in on.history]
    assert off.final == on.final


def test_off_where_it_does_not_fit(graph):
    cfg = TrainConfig(epochs=3, early_stopping=0, eval_cache=True)
    got = _fit(graph, cfg, max_memory=1)  # less than the process holds already
    assert not got.eval_cache.on and "left" in got.eval_cache.why
    want = _fit(graph, TrainConfig(epochs=3, early_stopping=0))
    assert [r.val_loss for r in got.history] == [r.val_loss for r in want.history]
    ops = SerialOps(support_matrix(graph, "gcn"))
    net = make_network(cfg, graph.num_features, graph.num_classes, ops)
    X = np.asarray(graph.features, dtype=np.float32)
    assert decide(ops, net, X, cfg, max_memory=1 << 50).on


class _Distributed(OpsProxy):
    """SerialOps dressed as Ops whose products cannot be cached."""

    fixed_products = False


def test_refused_by_ops_that_cannot_cache(graph):
    cfg = TrainConfig(epochs=2, early_stopping=0, eval_cache=True)
    with pytest.raises(InputError, match="--eval-cache needs a scheme"):
        _fit(graph, cfg, _Distributed(SerialOps(support_matrix(graph, "gcn"))))
    with pytest.raises(InputError, match="--eval-cache needs a scheme"):
        api.train(graph, scheme="1d", epochs=2, eval_cache=True)
    res = api.train(graph, scheme="serial", epochs=2, eval_cache=True)
    assert res.summary["epochs"] == 2


def test_the_emulated_device_evaluates_from_the_cache_as_the_cpu(monkeypatch):
    """``--device gpu``'s code path (strict host emulation) with the cache equals the CPU
    run with it bit for bit, and computes S @ X with the device's product."""
    from tests.test_device_loop import C, problem, run_emulated

    config = TrainConfig(epochs=3, sparse_features=False, eval_cache=True)
    S, X, labels, masks = problem()
    cpu = fit(SerialOps(S), X, labels, masks, C, config)
    dev, _, _, ops = run_emulated(config)
    assert cpu.eval_cache.on and dev.eval_cache.on
    for a, b in zip(cpu.weights, dev.weights):
        for k in a:
            assert np.array_equal(a[k], b[k])
    for key in ("loss", "val_loss", "val_acc", "test_acc"):
        assert [getattr(r, key) for r in cpu.history] == [getattr(r, key) for r in dev.history]
    assert cpu.final == dev.final
    # 4 products per training pass, 1 per evaluation (layer 2), S @ X once
    assert ops.products == 3 * 4 + 4 * 1 + 1
