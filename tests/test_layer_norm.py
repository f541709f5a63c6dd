"""LayerNorm math (`gcntrain.model.norm`): forward equals the textbook formula, the
hand-written backward equals central finite differences, and a row split into column blocks
(partial sums added) gives the whole row's results."""

from __future__ import annotations

import numpy as np
import pytest

from gcntrain.model import norm
from tests.test_model_grad import fd_grad


def whole(X, gamma, beta):
    mean, rstd = norm.row_stats(norm.row_sums(X), X.shape[1])
    return norm.forward(X, mean, rstd, gamma, beta), rstd


def test_forward_equals_formula():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((9, 6)) * 3 + 1
    gamma, beta = rng.standard_normal(6), rng.standard_normal(6)
    (Y, _), _ = whole(X, gamma, beta)
    ref = (X - X.mean(1, keepdims=True)) / np.sqrt(X.var(1, keepdims=True) + norm.EPS)
    assert np.allclose(Y, ref * gamma + beta, rtol=1e-12, atol=1e-12)


def test_backward_equals_finite_differences():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((5, 7))
    gamma, beta = rng.standard_normal(7), rng.standard_normal(7)
    C = rng.standard_normal((5, 7))  # loss = sum(C * Y)

    def loss():
        return float(np.sum(C * whole(X, gamma, beta)[0][0]))

    (Y, x_hat), rstd = whole(X, gamma, beta)
    sums = norm.backward_sums(C, x_hat, gamma)
    dX = norm.backward_finish(C, x_hat, rstd, gamma, sums, 7)
    dgamma, dbeta = norm.param_grads(C, x_hat)
    for got, arr in ((dX, X), (dgamma, gamma), (dbeta, beta)):
        want = fd_grad(loss, arr, eps=1e-6)
        assert np.abs(got - want).max() <= 1e-7 * max(1.0, np.abs(want).max())


@pytest.mark.parametrize("cut", [1, 3, 6])
def test_column_blocks_with_summed_partials_equal_the_whole_row(cut):
    rng = np.random.default_rng(2)
    X = rng.standard_normal((4, 7))
    gamma, beta, dY = rng.standard_normal(7), rng.standard_normal(7), rng.standard_normal((4, 7))
    (Y, x_hat), rstd = whole(X, gamma, beta)
    dX = norm.backward_finish(dY, x_hat, rstd, gamma, norm.backward_sums(dY, x_hat, gamma), 7)
    blocks = [slice(0, cut), slice(cut, 7)]
    mean, rstd_b = norm.row_stats(sum(norm.row_sums(X[:, b]) for b in blocks), 7)
    parts = [norm.forward(X[:, b], mean, rstd_b, gamma[b], beta[b]) for b in blocks]
    assert np.allclose(np.hstack([p[0] for p in parts]), Y, rtol=1e-13, atol=1e-13)
    sums = sum(norm.backward_sums(dY[:, b], p[1], gamma[b]) for b, p in zip(blocks, parts))
    dX_b = [
        norm.backward_finish(dY[:, b], p[1], rstd_b, gamma[b], sums, 7)
        for b, p in zip(blocks, parts)
    ]
    assert np.allclose(np.hstack(dX_b), dX, rtol=1e-12, atol=1e-12)


def test_constant_rows_are_finite():
    X = np.full((2, 4), 3.0)
    (Y, _), rstd = whole(X, np.ones(4), np.zeros(4))
    assert np.all(np.isfinite(Y)) and np.allclose(Y, 0) and np.all(rstd == 1 / np.sqrt(norm.EPS))
