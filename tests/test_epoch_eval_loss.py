"""The evaluation's float32 loss (issue 52 part 2): ``exp`` in float32 where no gradient is
taken, the losses within 1e-6 relative of the float64 formula, the hits the same, and the
training pass untouched (its loss and gradient keep the float64 ``exp``)."""

from __future__ import annotations

import numpy as np
import pytest

from gcntrain.data.generate import rmat
from gcntrain.kernels import softmax
from gcntrain.model.normalize import support_matrix
from gcntrain.model.ops import SerialOps
from gcntrain.model.trainer import TrainConfig, fit

#: the stated tolerance of an evaluation loss (a row's, and a mask's mean)
RTOL = 1e-6


def _float64_rows(logits, labels, active):
    """Per-row losses and hits by the float64 kernel (no gradient)."""
    n, c = logits.shape
    loss, hits = np.zeros(n), np.zeros(n, dtype=bool)
    empty = np.empty((0, c), dtype=logits.dtype)
    softmax.softmax_xent_masked(logits, labels, active, active, 1.0, loss, hits, empty)
    return loss, hits


@pytest.mark.parametrize("scale", [0.1, 5.0, 60.0])
@pytest.mark.parametrize("c", [1, 2, 7, 16, 47])
def test_float32_exp_losses_agree_to_1e_6(scale, c):
    rng = np.random.default_rng(int(scale * 10) + c)
    n = 4000
    logits = (rng.standard_normal((n, c)) * scale).astype(np.float32)
    logits[:40] = logits[:40, :1]  # ties: the first maximum is the hit
    logits[40:80, 0] = 88.0  # exp(z - max) of the others underflows in float32
    labels = rng.integers(-1, c, n)
    active = (labels >= 0) & (rng.random(n) < 0.7)
    want, want_hits = _float64_rows(logits, labels, active)
    got, hits = np.zeros(n), np.zeros(n, dtype=bool)
    softmax.softmax_xent_eval32(logits, labels, active, got, hits)
    assert np.array_equal(hits, want_hits)
    assert not got[~active].any()
    err = np.abs(got - want)[active]
    assert np.all(err <= RTOL * np.maximum(want[active], 1.0))  # a row: 1e-6 (of 1 near 0)
    mean, want_mean = got[active].mean(), want[active].mean()
    assert mean == pytest.approx(want_mean, rel=RTOL, abs=0)


def test_the_float32_evaluation_changes_no_training_value_and_agrees_to_1e_6(monkeypatch):
    """A float32 run equals, in weights and training losses, the run whose evaluation takes
    the float64 exp; its validation and test losses agree to 1e-6 relative."""
    g = rmat(10, edge_factor=8, seed=2, num_features=32, num_classes=8)
    masks = {"train": g.train_mask, "val": g.val_mask, "test": g.test_mask}
    cfg = TrainConfig(epochs=6, early_stopping=0)
    S = support_matrix(g, "gcn")
    got = fit(SerialOps(S), g.features, g.labels, masks, g.num_classes, cfg)

    def float64_eval(logits, labels, active, loss_out, hit_out):
        loss, hits = _float64_rows(logits, labels, active)
        loss_out[active], hit_out[active] = loss[active], hits[active]
        return loss_out

    monkeypatch.setattr(softmax, "softmax_xent_eval32", float64_eval)
    want = fit(SerialOps(S), g.features, g.labels, masks, g.num_classes, cfg)
    for a, b in zip(got.weights, want.weights):
        assert all(np.array_equal(a[k], b[k]) for k in a)
    assert [(r.loss, r.train_acc) for r in got.history] == [
        (r.loss, r.train_acc) for r in want.history
    ]
    assert [(r.val_acc, r.test_acc) for r in got.history] == [
        (r.val_acc, r.test_acc) for r in want.history
    ]
    for a, b in zip(got.history, want.history):
        assert a.val_loss == pytest.approx(b.val_loss, rel=RTOL, abs=0)
    for k in ("val_loss", "test_loss", "eval_train_loss"):
        assert got.final[k] == pytest.approx(want.final[k], rel=RTOL, abs=0)
