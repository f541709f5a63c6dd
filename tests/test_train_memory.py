"""What serial training holds at its peak (issue 36: peak RSS at most 1.3x the held data):
the numpy memory `fit` allocates beyond its inputs, traced, against the arrays it keeps by
design; and the blocked row normalisation equals the one-pass formula bit for bit."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from gcntrain.data.generate import rmat
from gcntrain.model import functional
from gcntrain.model.normalize import support_matrix
from gcntrain.model.trainer import TrainConfig, fit
from gcntrain.schemes.serial import SerialOps


def test_fit_holds_little_beyond_its_cached_blocks():
    """The traced peak of a 2-layer float32 GCN's `fit` (64 -> 16 -> 16) beyond the graph and
    raw features: at most 1.1x what it keeps by design (the prepared features, layer 1's
    dropped input, Z and H; layer 2's cached input and its two outputs).  Holding the logits,
    their gradient, the dropped input of an aggregation-first layer or the cached inputs
    through the passes that no longer need them, or normalising through whole-matrix
    float64 temporaries, each exceeds it."""
    g = rmat(13, edge_factor=4, seed=1, num_features=64, num_classes=16)
    ops = SerialOps(support_matrix(g, "gcn"))
    X = np.ascontiguousarray(g.features, dtype=np.float32)
    masks = {k: getattr(g, f"{k}_mask") for k in ("train", "val", "test")}
    cfg = TrainConfig(epochs=2, hidden=[16], dtype="float32")
    fit(ops, X.copy(), g.labels, masks, 16, cfg)  # kernels compiled
    m = X.shape[0]
    kept = m * (64 + 64 + 2 * 16 + 3 * 16) * 4  # features, layer 1 (X, Z, H), layer 2
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        fit(ops, X, g.labels, masks, 16, cfg)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak - before <= 1.1 * kept, (peak - before) / kept


@pytest.mark.parametrize("width", [1, 7, 64, 100])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_blocked_row_normalisation_equals_the_one_pass_formula(monkeypatch, width, dtype):
    rng = np.random.default_rng(width)
    X = rng.standard_normal((20011, width)) * np.exp(rng.uniform(-9, 9, (20011, width)))
    X = X.astype(dtype)
    X[3] = 0
    norms = np.abs(X).sum(axis=1, dtype=np.float64)
    inv = np.zeros_like(norms)
    inv[norms > 0] = 1.0 / norms[norms > 0]
    want = (X * inv[:, None]).astype(dtype)
    monkeypatch.setattr(functional, "NORM_BLOCK_ROWS", 8192)  # three blocks, the last short
    assert np.array_equal(functional.row_l1_norms(X), norms)
    got = functional.row_normalize(X)
    assert got.dtype == want.dtype and np.array_equal(got.view(np.uint8), want.view(np.uint8))
