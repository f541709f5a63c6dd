"""BatchNorm (``--norm batch``, issue 53 part 2) in one process: the math of
`gcntrain.model.batchnorm` against the textbook formulas and finite differences, its split
over row blocks and copies (what the schemes rely on), the network's gradients, the
evaluation's own statistics, the option and the API, a resumed run, and the plan's
BatchNorm phases.  Every scheme against serial under MPI: tests/test_batchnorm_schemes.py."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from gcntrain.data.generate import rmat
from gcntrain.errors import InputError
from gcntrain.model import batchnorm as bn
from gcntrain.model.network import build_network
from gcntrain.model.normalize import support_kind, support_matrix
from gcntrain.model.ops import SerialOps
from gcntrain.model.phase import Phase
from gcntrain.model.trainer import TrainConfig, fit
from gcntrain.schemes.protocol import check_model_support
from gcntrain.schemes.registry import SCHEMES
from tests.test_model_grad import fd_grad, network_grad_errors, random_graph, rel_err

TOL = 1e-5


def textbook(X, gamma, beta, eps=bn.EPS):
    """PyTorch's BatchNorm1d in training mode (biased variance), two-pass, float64."""
    mean = X.mean(axis=0)
    var = ((X - mean) ** 2).mean(axis=0)
    return (X - mean) / np.sqrt(var + eps) * gamma + beta


def normalise(X, gamma, beta, counted=None):
    tot = bn.column_partials(X, counted)
    mean, rstd = bn.column_stats(tot, X.shape[0] if counted is None else counted)
    return bn.forward(X, mean, rstd, gamma, beta)


@pytest.fixture
def data():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((37, 6)) * rng.uniform(0.1, 3.0, 6) + rng.uniform(-2, 2, 6)
    gamma, beta = rng.uniform(0.5, 1.5, 6), rng.uniform(-0.5, 0.5, 6)
    return X, gamma, beta


def test_forward_equals_the_textbook_formula(data):
    X, gamma, beta = data
    Y, x_hat = normalise(X, gamma, beta)
    np.testing.assert_allclose(Y, textbook(X, gamma, beta), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x_hat.mean(axis=0), 0.0, atol=1e-12)
    # float32 in, float32 out (statistics in float64)
    Y32, _ = normalise(X.astype(np.float32), gamma, beta)
    assert Y32.dtype == np.float32
    np.testing.assert_allclose(Y32, textbook(X, gamma, beta), rtol=1e-5, atol=1e-5)


def test_backward_equals_finite_differences(data):
    X, gamma, beta = data
    rng = np.random.default_rng(6)
    C = rng.standard_normal(X.shape)  # loss = sum(C * Y)

    def loss() -> float:
        return float((C * textbook(X, gamma, beta)).sum())

    Y, x_hat = normalise(X, gamma, beta)
    mean, rstd = bn.column_stats(bn.column_partials(X), X.shape[0])
    tot = bn.backward_partials(C, x_hat)
    dX = bn.backward_finish(C, x_hat, rstd, gamma, tot, X.shape[0])
    assert rel_err(dX, fd_grad(loss, X)) < TOL
    assert rel_err(tot[1], fd_grad(loss, gamma)) < TOL  # dgamma
    assert rel_err(tot[0], fd_grad(loss, beta)) < TOL  # dbeta


def test_row_blocks_and_copies_add_up_to_the_whole(data):
    """What a distributed run does: per-block partial sums added (``column_sum``) give the
    whole's statistics; a vertex cut's clones (copies after the `counted` rows, forward
    values whole, backward gradients partial) are left out of the statistics, and the term
    shared by a node's copies goes on its counted copy only, so the copies' dX add up to
    the node's."""
    X, gamma, beta = data
    n = X.shape[0]
    rng = np.random.default_rng(7)
    C = rng.standard_normal(X.shape)
    Y, x_hat = normalise(X, gamma, beta)
    _, rstd = bn.column_stats(bn.column_partials(X), n)
    dX = bn.backward_finish(C, x_hat, rstd, gamma, bn.backward_partials(C, x_hat), n)
    # two "ranks": rows [0, 20) and [20, n); rank 1 also holds clones of rows 3 and 5,
    # whose gradients it holds a share of (w of it; the root keeps the rest)
    clones, w = np.array([3, 5]), 0.25
    blocks = [np.arange(0, 20), np.concatenate([np.arange(20, n), clones])]
    counted = [20, n - 20]
    grads = [C[blocks[0]].copy(), C[blocks[1]].copy()]
    grads[0][clones] *= 1 - w
    grads[1][counted[1] :] *= w
    tot = sum(bn.column_partials(X[b], k) for b, k in zip(blocks, counted))
    mean, rstd_d = bn.column_stats(tot, n)
    outs = [bn.forward(X[b], mean, rstd_d, gamma, beta) for b in blocks]
    for b, (Yb, _) in zip(blocks, outs):
        np.testing.assert_allclose(Yb, Y[b], rtol=1e-12, atol=1e-12)
    btot = sum(bn.backward_partials(gk, xh) for gk, (_, xh) in zip(grads, outs))
    got = np.zeros_like(dX)
    for b, k, gk, (_, xh) in zip(blocks, counted, grads, outs):
        np.add.at(got, b, bn.backward_finish(gk, xh, rstd_d, gamma, btot, n, k))
    np.testing.assert_allclose(got, dX, rtol=1e-10, atol=1e-12)
    # the clones' share counted with the roots' term too would be wrong (the test can fail)
    wrong = np.zeros_like(dX)
    for b, gk, (_, xh) in zip(blocks, grads, outs):
        np.add.at(wrong, b, bn.backward_finish(gk, xh, rstd_d, gamma, btot, n))
    assert not np.allclose(wrong, dX, rtol=1e-6)


class _Formulas(np.ndarray):
    """A NumPy block that is not plain: `gcntrain.model.batchnorm` takes its array-module
    formulas for it (as for a device's arrays) instead of the host kernels."""


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("f", [2, 40])
def test_host_kernels_equal_the_formulas_bit_for_bit(dtype, f):
    """The host kernels (`gcntrain.kernels.batchnorm`) give the bits of the formulas the
    device path computes (column sums down the rows in order, float64 element-wise)."""
    rng = np.random.default_rng(9)
    m, k = 301, 257
    X = (rng.standard_normal((m, f)) * 3 + 1).astype(dtype)
    dY = rng.standard_normal((m, f)).astype(dtype)
    gamma, beta = (rng.uniform(0.5, 1.5, f).astype(dtype) for _ in range(2))

    def run(wrap):
        part = bn.column_partials(wrap(X), k)
        mean, rstd = bn.column_stats(np.asarray(part), m)
        Y, xh = bn.forward(wrap(X), mean, rstd, wrap(gamma), wrap(beta))
        tot = bn.backward_partials(wrap(dY), xh)
        dX = bn.backward_finish(wrap(dY), xh, rstd, gamma, np.asarray(tot), m, k)
        return [np.asarray(a) for a in (part, Y, xh, tot, dX)]

    for a, b in zip(run(lambda a: a), run(lambda a: a.view(_Formulas))):
        assert a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.parametrize(
    "model,agg,kind,hidden",
    [
        ("gcn", "mean", "gcn", [5, 4]),  # multiplies first (6 -> 5 -> 4 -> 3)
        ("gcn", "mean", "gcn", [9, 4]),  # aggregates first in layer 0
        ("sage", "mean", "sage-mean", [5, 7]),
    ],
)
@pytest.mark.parametrize("embed", [False, True])
def test_network_gradients_with_batchnorm(model, agg, kind, hidden, embed):
    """BatchNorm before every layer (bn_g, bn_b), with dropout and, optionally, the label
    embedding: every parameter's gradient equals central finite differences."""
    g = random_graph(n=14, seed=1, directed=True, weighted=True)
    ops = SerialOps(support_matrix(g, kind))
    net = build_network(
        model, 6, hidden, 3, aggregator=agg, dropout=0.3, norm="batch", label_embedding=embed
    )
    errors = network_grad_errors(net, ops, g.n, ("bn_g", "bn_b"), embed)
    for lw in net.weights():
        assert {"bn_g", "bn_b"} <= set(lw)
    for i, k, err in errors:
        assert err < TOL, f"{model} {hidden} layer {i} d{k}: rel err {err:.2e}"


def test_evaluation_uses_its_own_statistics():
    """An evaluation pass normalises with the statistics of its own input (no running
    averages): every layer's normalised input has column mean beta and variance
    gamma^2 var / (var + eps) over all nodes, and the pass keeps nothing for a backward."""
    g = rmat(7, edge_factor=6, seed=2, num_features=10, num_classes=3)
    ops = SerialOps(support_matrix(g, "gcn"))
    net = build_network("gcn", 10, [8], 3, dropout=0.5, norm="batch")
    net.init_params(ops, 1, np.float64)
    rng = np.random.default_rng(3)
    for lw in net.weights():
        lw["bn_g"][:] = rng.uniform(0.5, 2.0, lw["bn_g"].shape)
        lw["bn_b"][:] = rng.uniform(-1.0, 1.0, lw["bn_b"].shape)
    X = np.asarray(g.features, dtype=np.float64)
    ctx = Phase("epoch", training=False, epoch=0)
    H = X
    for layer in net.layers:
        Y = layer.normalize_input(ops, H, ctx)
        assert layer._ln == {}
        var = H.var(axis=0)
        p = layer.params
        np.testing.assert_allclose(Y.mean(axis=0), p["bn_b"], atol=1e-10)
        want = p["bn_g"] ** 2 * var / (var + bn.EPS)
        np.testing.assert_allclose(Y.var(axis=0), want, rtol=1e-8, atol=1e-12)
        H = np.maximum(layer.forward(ops, Y, None, ctx), 0.0)


def test_the_option_and_every_scheme_accept_it():
    """``--norm batch`` validates, no registered scheme refuses it (LayerNorm stays
    refused where feature columns are split), and a bad value names the choices."""
    cfg = TrainConfig(norm="batch").validate()
    for sch in SCHEMES.values():
        check_model_support(sch, cfg)
    split = [s for s in SCHEMES.values() if not s.whole_rows]
    assert split
    with pytest.raises(InputError, match="--norm layer"):
        check_model_support(split[0], TrainConfig(norm="layer"))
    with pytest.raises(InputError, match="none, layer or batch"):
        TrainConfig(norm="group").validate()


def test_api_trains_with_batchnorm():
    from gcntrain import api

    g = rmat(7, edge_factor=6, seed=2, num_features=10, num_classes=3)
    res = api.train(g, epochs=3, norm="batch", dtype="float64")
    names = [set(lw) for lw in res.weights]
    assert all({"bn_g", "bn_b"} <= s for s in names)
    assert not np.allclose(res.weights[0]["bn_g"], 1.0)  # trained


def _fit(g, cfg, **kw):
    S = support_matrix(g, support_kind(cfg.model, cfg.aggregator))
    masks = {"train": g.train_mask, "val": g.val_mask, "test": g.test_mask}
    return fit(SerialOps(S), g.features, g.labels, masks, g.num_classes, cfg, **kw)


def test_resumed_run_ends_as_the_uninterrupted_one():
    """The checkpoint carries the BatchNorm parameters (and their Adam moments) like any
    other; there are no running statistics to carry: a run resumed after epoch 3 ends with
    the uninterrupted run's weights, bit for bit."""
    g = rmat(7, edge_factor=6, seed=2, num_features=10, num_classes=3)
    cfg = TrainConfig(epochs=6, seed=4, norm="batch", early_stopping=0)

    class At3:
        state = None

        def due(self, done, last):
            return done == 3

        def save(self, state):  # as written to disk then: the live arrays move on
            self.state = copy.deepcopy(state)

    keep = At3()
    whole = _fit(g, cfg, checkpoint=keep)
    assert {"bn_g", "bn_b"} <= set(keep.state.weights[0])
    resumed = _fit(g, cfg, resume=keep.state)
    for a, b in zip(whole.weights, resumed.weights):
        assert a.keys() == b.keys()
        for k in a:
            np.testing.assert_array_equal(a[k], b[k])


def test_the_plan_prices_the_batchnorm_reductions():
    """The recorded schedule has BatchNorm's column sums (training forward and backward,
    evaluation forward, per layer), and a row scheme's plan prices each as an Allreduce of
    (2, f_in) float64 over the ranks: 1d on 4 ranks sends bytes in every such phase."""
    from gcntrain.simulate.run import plan_training
    from gcntrain.simulate.schedule import record_schedule
    from gcntrain.simulate.target import PlanTarget

    cfg = TrainConfig(epochs=2, norm="batch", hidden=[8])
    calls = record_schedule(cfg, 10, 3, 2)
    keys = {c.phase.key for c in calls if c.method == "column_sum"}
    want = {f"{p}L{i}.{d}.norm" for i in (0, 1) for p, d in (("", "fwd"), ("", "bwd"))}
    want |= {f"eval.L{i}.fwd.norm" for i in (0, 1)}
    assert keys == want
    g = rmat(7, edge_factor=6, seed=2, num_features=10, num_classes=3)
    phases = plan_training(PlanTarget(g, cfg, "1d", 4)).table.phases()
    for k in want:
        assert (phases[k][:, 0] > 0).all(), k
    plain = plan_training(PlanTarget(g, TrainConfig(epochs=2, hidden=[8]), "1d", 4))
    assert not any(k.endswith(".norm") for k in plain.table.phases())


@pytest.mark.parametrize(
    "config",
    [
        TrainConfig(epochs=3, norm="batch", sparse_features=False),
        TrainConfig(epochs=3, model="sage", norm="batch", label_prop=0.3, dtype="float64"),
    ],
    ids=["gcn-f32", "sage-lp-f64"],
)
def test_on_the_emulated_device_equals_the_cpu_and_stays_there(config):
    """The statistics and their sums run on the run's array module: on the host emulation
    of a device the run equals the CPU run bit for bit, with no per-epoch transfers."""
    from tests.test_device_loop import C, problem, run_emulated, transfer_problems
    from tests.test_device_model import same_run

    S, X, labels, masks = problem()
    cpu = fit(SerialOps(S), X, labels, masks, C, config)
    dev, _, per_epoch, _ = run_emulated(config)
    assert same_run(cpu, dev) == []
    assert transfer_problems(config, per_epoch) == []
