"""The serial training loop on the host-emulated device (issue 37): one code path, the
array module chosen once.

On `EmulatedBackend(strict=True)` every array of the loop is a `StrictDeviceArray`, which,
like CuPy, refuses host operands and implicit host conversions; every copy between host
and device is counted.  The checks: (1) the emulated run equals the CPU run bit for bit
(weights, every epoch's losses and accuracies, predictions); (2) between epochs nothing
goes to the host but the scalars the loop reports and nothing comes to the device; (3) the
SpMM is the backend's product on the resident matrix, never the host kernel.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from gcntrain.device.emulated import EmulatedBackend, HostTransferError, StrictDeviceArray
from gcntrain.model import ops as ops_module
from gcntrain.model.compute import HOST, ArrayCompute
from gcntrain.model.ops import SerialOps
from gcntrain.model.trainer import TrainConfig, fit

N, F, C = 600, 48, 5


def problem(seed: int = 3, density: float = 0.5):
    """A non-symmetric support (so S^T is a matrix of its own), features, labels, masks."""
    rng = np.random.default_rng(seed)
    A = sp.random(N, N, density=8 / N, random_state=rng, format="csr")
    A = (A + sp.identity(N, format="csr")).tocsr()
    S = sp.diags(1.0 / np.asarray(A.sum(axis=1)).ravel()) @ A
    X = rng.random((N, F)) * (rng.random((N, F)) < density)
    labels = rng.integers(0, C, N)
    labels[::17] = -1
    part = rng.random(N)
    masks = {"train": part < 0.4, "val": (part >= 0.4) & (part < 0.7), "test": part >= 0.7}
    return sp.csr_matrix(S), X, labels, masks


class CountingOps(SerialOps):
    """SerialOps counting its graph products."""

    def __init__(self, S, backend=None):
        super().__init__(S, backend)
        self.products = 0

    def aggregate(self, X, *, phase):
        self.products += 1
        return super().aggregate(X, phase=phase)

    def aggregate_t(self, X, *, phase):
        self.products += 1
        return super().aggregate_t(X, phase=phase)


def decayed_params(config: TrainConfig) -> int:
    """Weights with weight decay (one ``param_sum_sq``, one scalar, each per evaluation)."""
    if config.weight_decay == 0:
        return 0
    per_layer = 2 if config.model == "sage" and config.aggregator == "mean" else 1
    layers = len(config.hidden) + 1 if config.weight_decay_all else 1
    return per_layer * layers


def run_emulated(config, compute_cls=ArrayCompute):
    """(result, backend, transfers per epoch, ops) of a strict emulated run."""
    S, X, labels, masks = problem()
    backend = EmulatedBackend(strict=True)
    ops = CountingOps(S, backend)
    ops.compute = compute_cls(backend)
    ops._product = backend.spmm
    marks: list[int] = []
    result = fit(
        ops, X, labels, masks, C, config, callback=lambda rec: marks.append(len(backend.transfers))
    )
    starts = [None, *marks[:-1]]
    per_epoch = [backend.transfers[a:b] for a, b in zip(starts, marks)]
    return result, backend, per_epoch, ops


def transfer_problems(config, per_epoch) -> list[str]:
    """What breaks check (2) in every epoch after the first (the first copies the labels,
    masks and row ids once)."""
    # the training loss (train mask) and the evaluation losses (val, test): one copy each;
    # the weight-decay sums of squares, training and evaluation
    want = 2 + 2 * decayed_params(config)
    problems = []
    for e, moves in enumerate(per_epoch[1:], start=2):
        to_dev = [m for m in moves if m[0] == "to_device"]
        to_host = [m for m in moves if m[0] == "to_host"]
        big = [m for m in to_host if int(np.prod(m[1])) > 4]
        if to_dev:
            problems.append(f"epoch {e}: {len(to_dev)} copies to the device")
        if big:
            problems.append(f"epoch {e}: arrays to the host {big}")
        if len(to_host) != want:
            problems.append(f"epoch {e}: {len(to_host)} copies to the host, not {want}")
    return problems


CONFIGS = {
    "gcn-f32-dense": TrainConfig(epochs=4, sparse_features=False, hidden=[32]),
    "gcn-f64-csr-bias-aggfirst": TrainConfig(
        epochs=3, dtype="float64", sparse_features=True, bias=True, order="agg_first"
    ),
    "sage-f32-adamw": TrainConfig(
        epochs=3, model="sage", optimizer="adamw", weight_decay_all=True, hidden=[16, 8]
    ),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_the_emulated_device_loop_equals_the_cpu_loop_and_stays_on_the_device(name, monkeypatch):
    config = CONFIGS[name]
    S, X, labels, masks = problem()
    cpu_ops = SerialOps(S)
    assert cpu_ops.compute is HOST
    cpu = fit(cpu_ops, X, labels, masks, C, config)

    def host_kernel(*args):
        raise AssertionError("the device run called the host SpMM")

    monkeypatch.setattr(ops_module, "csr_product", host_kernel)
    dev, backend, per_epoch, ops = run_emulated(config)
    # (1) bit for bit
    for a, b in zip(cpu.weights, dev.weights):
        assert a.keys() == b.keys()
        for k in a:
            assert type(b[k]) is np.ndarray and a[k].dtype == b[k].dtype
            assert np.array_equal(a[k], b[k]), (name, k)
    assert [r.loss for r in cpu.history] == [r.loss for r in dev.history]
    for key in ("train_acc", "val_loss", "val_acc", "test_acc"):
        assert [getattr(r, key) for r in cpu.history] == [getattr(r, key) for r in dev.history]
    assert cpu.final == dev.final
    assert type(dev.predictions) is np.ndarray
    assert np.array_equal(cpu.predictions, dev.predictions)
    # (2) nothing but the reported scalars leaves the device between epochs
    assert len(per_epoch) == config.epochs
    assert transfer_problems(config, per_epoch) == []
    # (3) every graph product went through the backend's sparse product
    assert ops.products > 0 and backend.calls["spmm"] == ops.products
    assert backend.calls["gemm"] > 0


def test_a_loop_that_copies_an_activation_to_the_host_is_caught():
    """Check (2) can fail: a compute whose ReLU gradient takes a trip through the host."""

    class Leaky(ArrayCompute):
        def relu_backward(self, dH, Z, out=None):
            host = self.backend.fetch(Z)
            return super().relu_backward(dH, self.backend.to_device(host), out)

    config = TrainConfig(epochs=2, sparse_features=False)
    _, _, per_epoch, _ = run_emulated(config, Leaky)
    problems = transfer_problems(config, per_epoch)
    assert any("to the device" in p for p in problems)
    assert any("arrays to the host" in p for p in problems)


def test_strict_device_arrays_refuse_host_operands_and_implicit_copies():
    backend = EmulatedBackend(strict=True)
    d = backend.to_device(np.arange(6.0).reshape(2, 3))
    assert type(d + 1) is StrictDeviceArray
    assert type(np.sum(d)) is StrictDeviceArray  # a 0-d device array, as CuPy's
    assert type(backend.xp.zeros(3)) is StrictDeviceArray
    with pytest.raises(TypeError, match="host array"):
        d + np.ones((2, 3))
    with pytest.raises(HostTransferError):
        float(np.sum(d))
    assert float(backend.fetch(np.sum(d))) == 15.0
    assert backend.copies == {"to_device": 1, "to_host": 1}
