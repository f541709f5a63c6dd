"""The model's loss (`local_xent`, one fused Numba pass) equals the NumPy formula
(`softmax_xent_sums`) mask by mask: loss sums, hit counts and the gradient."""

from __future__ import annotations

import numpy as np
import pytest

from gcntrain.model.loss import local_xent, softmax_xent_sums


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n,c", [(1000, 7), (300, 16), (5, 1), (0, 3)])
@pytest.mark.parametrize("grad_index", [None, 0, 1])
def test_fused_loss_equals_the_numpy_formula(dtype, n, c, grad_index):
    rng = np.random.default_rng(n * 31 + c)
    logits = (rng.standard_normal((n, c)) * 5).astype(dtype)
    logits[: n // 10] = 1000.0 * np.sign(logits[: n // 10])  # huge logits and ties
    labels = rng.integers(-1, c, n)
    masks = [rng.random(n) < 0.5, rng.random(n) < 0.2, np.zeros(n, dtype=bool)]
    sums, grad = local_xent(logits, labels, masks, grad_index, 37.0)
    ref, ref_grad = [], None
    for k, m in enumerate(masks):
        loss, hits, g = softmax_xent_sums(logits, labels, m & (labels >= 0), k == grad_index)
        ref += [loss, hits]
        if g is not None:
            ref_grad = g / g.dtype.type(37)
    # without a gradient (an evaluation) float32 logits take exp in float32: 1e-6 relative
    # (`gcntrain.kernels.softmax.softmax_xent_eval32`); else the float64 formula's rounding
    rtol = 1e-6 if grad_index is None and dtype == np.float32 else 1e-12
    np.testing.assert_allclose(sums, ref, rtol=rtol, atol=1e-12)
    assert sums[1::2].tolist() == ref[1::2]  # hit counts exactly
    if grad_index is None:
        assert grad is None
    else:
        assert grad.dtype == dtype and grad.shape == logits.shape
        tol = 1e-6 if dtype == np.float32 else 1e-13
        np.testing.assert_allclose(grad, ref_grad, rtol=tol, atol=1e-15)
        outside = ~(masks[grad_index] & (labels >= 0))
        assert not grad[outside].any()
