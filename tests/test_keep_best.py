"""The best epoch (issue 53, part 1): every run reports the evaluated epoch with the lowest
validation loss and the test accuracy there; `--keep-best` ends with that epoch's weights,
which the outputs hold, and a checkpoint carries them through a resume."""

from __future__ import annotations

import contextlib
import io
import json

import h5py
import numpy as np
import pytest

from gcntrain.cli.main import run
from gcntrain.data.store import write_graph
from gcntrain.model.state import EpochRecord, TrainState, best_record
from tests.readme_lines import shared_dir
from tests.shared_runs import h5_arrays

#: Cora overfits within these epochs at this rate: its best epoch comes before the last
RUN = ["--epochs", "160", "--lr", "0.05", "--early-stopping", "0", "--seed", "1", "--quiet"]


@pytest.fixture(scope="module")
def cora(tmp_path_factory):
    from gcntrain.data.convert import convert_source

    path = tmp_path_factory.mktemp("cora") / "cora.h5"
    write_graph(path, convert_source(str(shared_dir() / "datasets" / "planetoid" / "ind.cora")))
    return path


def _train(capsys, *argv) -> dict:
    assert run(["train", *map(str, argv), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _train_once(*argv) -> dict:
    """`_train` for a module fixture (no capsys there): the run's --json summary."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert run(["train", *map(str, argv), "--json"]) == 0
    return json.loads(out.getvalue())


@pytest.fixture(scope="module")
def last_run(cora, tmp_path_factory):
    """`RUN` ending with the last epoch's weights: (--json summary, output folder); the
    run several tests compare with or read."""
    out = tmp_path_factory.mktemp("last") / "run"
    return _train_once(cora, *RUN, "-o", out), out


@pytest.fixture(scope="module")
def best_run(cora, tmp_path_factory):
    """`RUN` with --keep-best: (--json summary, output folder)."""
    out = tmp_path_factory.mktemp("best") / "run"
    return _train_once(cora, *RUN, "--keep-best", "-o", out), out


def _rec(epoch, val_loss):
    return EpochRecord(epoch, 1.0, 0.5, val_loss, 0.5, 0.5, 0.1, 0.0, 0.0, 0.0)


def test_the_best_record_is_the_earliest_lowest_finite_val_loss():
    h = [_rec(1, 0.9), _rec(2, None), _rec(3, 0.7), _rec(4, float("nan")), _rec(5, 0.7)]
    assert best_record(h).epoch == 3
    assert best_record([_rec(1, None)]) is None and best_record([]) is None


def test_keep_best_outputs_are_the_best_epochs(cora, last_run, best_run):
    (last, _), (best, best_dir) = last_run, best_run
    # the same training: the same best epoch, reported by both
    assert last["best_epoch"] == best["best_epoch"] < last["epochs"] == 160
    assert last["weights_epoch"] == 160 and best["weights_epoch"] == best["best_epoch"]
    assert last["test_acc"] != best["test_acc"] or last["val_loss"] != best["val_loss"]
    # the kept weights evaluate to the best epoch's recorded figures
    assert best["val_loss"] == best["best_val_loss"] and best["val_acc"] == best["best_val_acc"]
    assert best["test_acc"] == best["test_acc_at_best"]
    # and predictions.h5 holds their predictions: its test accuracy is test_acc_at_best
    with h5py.File(best_dir / "predictions.h5") as f:
        ids, pred = f["node_ids"][:], f["predicted"][:]
    with h5py.File(cora) as g:
        labels, test = g["labels"][:], g["test_mask"][:].astype(bool)
    order = np.argsort(ids)
    acc = float(np.mean(pred[order][test] == labels[test]))
    assert acc == pytest.approx(best["test_acc_at_best"], abs=1e-12)


def test_a_resumed_keep_best_run_ends_as_the_uninterrupted_one(cora, best_run, tmp_path, capsys):
    whole, whole_dir = best_run
    half = [a if a != "160" else "90" for a in RUN]
    ck = tmp_path / "ck"
    _train(capsys, cora, *half, "--keep-best", "--checkpoint", ck, "--checkpoint-every", "30")
    state = TrainState.from_arrays(dict(np.load(next(ck.glob("epoch-000090/rank-*.npz")))))
    assert state.best is not None and len(state.best) == len(state.weights)
    resumed = _train(capsys, cora, *RUN, "--keep-best", "--resume", ck, "-o", tmp_path / "res")
    keys = ("best_epoch", "best_val_loss", "test_acc_at_best", "weights_epoch", "test_acc")
    assert {k: resumed[k] for k in keys} == {k: whole[k] for k in keys}
    a, b = h5_arrays(whole_dir / "weights.h5"), h5_arrays(tmp_path / "res" / "weights.h5")
    assert a and all(np.array_equal(a[n], b[n]) for n in a)


@pytest.mark.mpi
def test_keep_best_at_np_3_equals_serial(cora, capsys):
    """A distributed run keeps the same best epoch as the serial one (float64: the
    schemes' sums differ from serial only in the last bits), on every rank's shard."""
    from tests.mpi.launch import gcntrain_exe, run_mpi

    argv = [*RUN, "--keep-best", "--dtype", "float64"]
    serial = _train(capsys, cora, *argv)
    res = run_mpi(3, [*gcntrain_exe(), "train", str(cora), "--scheme", "1d", *argv, "--json"])
    assert res.returncode == 0, res.stderr[-2000:]
    d = json.loads(res.stdout)
    assert d["best_epoch"] == serial["best_epoch"] == d["weights_epoch"] < 160
    assert d["test_acc"] == pytest.approx(serial["test_acc_at_best"], abs=1e-9)


def test_metrics_mark_the_best_epoch_and_the_plot_draws_it(last_run):
    d, run_dir = last_run
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    best = [json.loads(ln)["epoch"] for ln in lines if json.loads(ln).get("best")]
    assert best == [d["best_epoch"]]
    pytest.importorskip("matplotlib")
    from gcntrain.cli.plot_runs import load_run, run_figure

    fig = run_figure([load_run(run_dir)])
    (acc,) = [ax for ax in fig.axes if ax.get_label() == "accuracy"]
    marks = [ln for ln in acc.lines if ln.get_linestyle() == "-." and len(set(ln.get_xdata())) == 1]
    assert [ln.get_xdata()[0] for ln in marks] == [d["best_epoch"]]
