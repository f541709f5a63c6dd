"""LayerNorm, label propagation and checkpoint / resume on the host-emulated device
(issue 37): results equal the CPU run's bit for bit, nothing but the reported scalars (and,
at a checkpoint, the state's one host copy) crosses between host and device per epoch.

In process (serial `fit` on `EmulatedBackend(strict=True)`), through the CLI under the test
hook ``GCNTRAIN_DEVICE=emulated`` (``--json`` results and checkpoint files equal
``--device cpu``), and at np 2 (1d with ``--norm layer`` and ``--label-prop``: run as a
script under ``mpiexec`` this file is the worker, reusing the checks of
``tests/test_device_schemes.py``: bit-equal results, measured = planned = the CPU tally,
no copies outside staging between epochs but the reported scalars).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from gcntrain.model.ops import SerialOps
from gcntrain.model.trainer import TrainConfig, fit

ROOT = Path(__file__).resolve().parents[1]

#: LayerNorm and label propagation together (two hidden layers: LayerNorm on a hidden input)
BOTH = TrainConfig(epochs=4, norm="layer", label_prop=0.4, hidden=[16, 8], label_scale=0.5)
CONFIGS = {
    "norm-f32": TrainConfig(epochs=3, norm="layer", sparse_features=False),
    "lp-f64-csr": TrainConfig(epochs=3, label_prop=0.5, dtype="float64", sparse_features=True),
    "both-sage": TrainConfig(epochs=3, model="sage", norm="layer", label_prop=0.3),
}


def same_run(cpu, dev) -> list[str]:
    """What differs between two `TrainResult`s (weights, every epoch's metrics, finals,
    predictions), bit for bit."""
    out = [
        f"{i}.{k}"
        for i, (a, b) in enumerate(zip(cpu.weights, dev.weights))
        for k in a
        if type(b[k]) is not np.ndarray or not np.array_equal(a[k], b[k])
    ]
    for key in ("loss", "train_acc", "val_loss", "val_acc", "test_acc"):
        if [getattr(r, key) for r in cpu.history] != [getattr(r, key) for r in dev.history]:
            out.append(key)
    if cpu.final != dev.final:
        out.append("final")
    if not np.array_equal(cpu.predictions, dev.predictions):
        out.append("predictions")
    return out


@pytest.mark.parametrize("name", list(CONFIGS))
def test_norm_and_label_prop_on_the_device_equal_the_cpu_and_stay_there(name):
    from tests.test_device_loop import C, problem, run_emulated, transfer_problems

    config = CONFIGS[name]
    S, X, labels, masks = problem()
    cpu = fit(SerialOps(S), X, labels, masks, C, config)
    dev, _, per_epoch, _ = run_emulated(config)
    assert same_run(cpu, dev) == []
    # the label draw is made on the device: no mask goes there per epoch
    assert transfer_problems(config, per_epoch) == []


#: an epoch record's values that do not depend on timing
METRICS = ("epoch", "loss", "train_acc", "val_loss", "val_acc", "test_acc")


def state_diffs(a, b) -> list[str]:
    """The arrays of two checkpointed states (`TrainState.to_arrays`, or an ``.npz``) that
    differ: every array bit for bit and host-side, the epoch records but their times."""
    if sorted(a) != sorted(b):
        return [f"names {sorted(a)} vs {sorted(b)}"]
    out = []
    for k in a:
        x, y = a[k], b[k]
        if k == "history":
            x, y = ([[r[m] for m in METRICS] for r in json.loads(bytes(z))] for z in (x, y))
            if x != y:
                out.append(k)
        elif type(y) is not np.ndarray or x.dtype != y.dtype or not np.array_equal(x, y):
            out.append(k)
    return out


class Keep:
    """A checkpoint hook keeping every state it is handed (`fit`'s ``checkpoint``)."""

    def __init__(self, backend=None):
        self.states: list = []
        self.backend = backend
        self.copies: list[int] = []

    def due(self, done: int, last: bool) -> bool:
        return True

    def save(self, state) -> None:
        # copies (a subclass kept): on the host the state's arrays are the live parameters
        self.states.append({k: a.copy() for k, a in state.to_arrays().items()})
        if self.backend is not None:
            self.copies.append(len(self.backend.transfers))


def test_checkpoint_copies_the_state_once_and_resume_is_bit_identical():
    """Every state a device run checkpoints equals the CPU run's (host arrays), costs one
    host copy per array, and a device run resumed from it ends where the CPU run ends."""
    from gcntrain.device.emulated import EmulatedBackend
    from gcntrain.model.state import TrainState
    from tests.test_device_loop import C, problem

    S, X, labels, masks = problem()
    host_ck = Keep()
    cpu = fit(SerialOps(S), X, labels, masks, C, BOTH, checkpoint=host_ck)
    backend = EmulatedBackend(strict=True)
    dev_ck = Keep(backend)
    ends: list[int] = []
    dev = fit(
        SerialOps(S, backend),
        X,
        labels,
        masks,
        C,
        BOTH,
        checkpoint=dev_ck,
        callback=lambda rec: ends.append(len(backend.transfers)),
    )
    assert same_run(cpu, dev) == []
    assert len(dev_ck.states) == BOTH.epochs
    for a, b in zip(host_ck.states, dev_ck.states):
        assert state_diffs(a, b) == []
    # between one epoch's end and its checkpoint: one copy to the host per state array
    arrays = sum(1 for k in dev_ck.states[0] if k[:2] in ("w.", "m.", "v."))
    for end, saved in zip(ends, dev_ck.copies):
        moved = backend.transfers[end:saved]
        assert len(moved) == arrays and all(m[0] == "to_host" for m in moved), moved
    # resumed on the device from the checkpoint of epoch 2: the uninterrupted run's end
    state = TrainState.from_arrays(dev_ck.states[1])
    back = EmulatedBackend(strict=True)
    res = fit(SerialOps(S, back), X, labels, masks, C, BOTH, resume=state)
    assert same_run(cpu, res) == []


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    from gcntrain.data.generate import rmat
    from gcntrain.data.store import write_graph

    path = tmp_path_factory.mktemp("devmodel") / "g.h5"
    write_graph(path, rmat(7, edge_factor=4, seed=2, num_features=8, num_classes=3))
    return str(path)


#: the summary's values that do not depend on timing or on where the arrays were held
RESULT = ("final_loss", "train_acc", "val_loss", "val_acc", "test_acc", "epochs", "scheme")


def cli_json(args, capsys) -> dict:
    from gcntrain.cli.main import run

    assert run(args) == 0, args
    return json.loads(capsys.readouterr().out)


def test_through_the_cli_the_device_equals_the_cpu(graph, tmp_path, capsys, monkeypatch):
    """Serially under the test hook: ``--norm layer``, ``--label-prop`` and a checkpoint
    then a resume give the CPU run's results bit for bit; the checkpoint files hold the
    same arrays."""
    monkeypatch.setenv("GCNTRAIN_DEVICE", "emulated")
    base = ["train", graph, "--seed", "3", "--json", "--quiet"]
    for extra in (["--norm", "layer"], ["--label-prop", "0.5", "--dtype", "float64"]):
        got = [
            cli_json([*base, "--epochs", "3", *extra, "--device", d], capsys)
            for d in ("cpu", "gpu")
        ]
        assert [got[0][k] for k in RESULT] == [got[1][k] for k in RESULT], extra
    both = [*base, "--norm", "layer", "--label-prop", "0.4"]
    got = {}
    for d in ("cpu", "gpu"):
        ck = tmp_path / f"ck-{d}"
        cli_json([*both, "--epochs", "2", "--checkpoint", str(ck), "--device", d], capsys)
        got[d] = cli_json([*both, "--epochs", "4", "--resume", str(ck), "--device", d], capsys)
        assert got[d]["resumed_from_epoch"] == 2 and got[d]["epochs"] == 4
    assert [got["cpu"][k] for k in RESULT] == [got["gpu"][k] for k in RESULT]
    files = [np.load(tmp_path / f"ck-{d}" / "epoch-000002" / "rank-00000.npz") for d in got]
    assert state_diffs(*({k: f[k] for k in f.files} for f in files)) == []


def worker() -> None:
    """Under ``mpiexec``: the CPU and the emulated device run of 1d with LayerNorm and
    label propagation, checked by `tests.test_device_schemes.check_case`; rank 0 prints a
    JSON verdict."""
    sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "mpi")]
    import worker as W  # tests/mpi/worker.py

    from gcntrain.comm.communicator import Comm
    from gcntrain.comm.mpi import load_mpi
    from tests.test_device_schemes import check_case

    world = Comm(load_mpi().COMM_WORLD)
    g = W.rmat_odd(8, keep=251, edge_factor=6, seed=5, num_features=20, num_classes=4)
    cfg = TrainConfig(epochs=4, seed=3, hidden=[16], early_stopping=0, norm="layer", label_prop=0.4)
    problems, staged = check_case(world, W, g, cfg, "1d", {}, None)
    bad = world.allreduce(np.array([len(problems)], np.int64), "test", op="max")
    most = world.allreduce(np.array([staged], np.int64), "test", op="max")
    if world.rank == 0:
        print(
            json.dumps({"ok": int(bad[0]) == 0, "problems": problems[:6], "staged": int(most[0])})
        )


@pytest.mark.mpi
def test_1d_with_norm_and_label_prop_on_the_emulated_device_at_np_2():
    from tests.mpi.launch import run_mpi

    res = run_mpi(2, [sys.executable, str(Path(__file__).resolve())], timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads([ln for ln in res.stdout.splitlines() if ln.startswith("{")][-1])
    assert got["ok"] and got["staged"] > 0, got


if __name__ == "__main__":  # pragma: no cover
    worker()
