"""What a training job says and leaves when it ends (issue 35 items 9, 11, 12): SIGTERM without
--checkpoint (one line, status 143 on every rank), a checkpoint whose LATEST could not be
written (resume still finds it), the Numba compile lines, the last epoch's line under early
stopping, and the vertex cut's drift (serially and at np 3)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import numpy as np
import pytest

from gcntrain.cli.main import run
from gcntrain.data import checkpoint as ckio
from gcntrain.data.generate import rmat
from gcntrain.data.store import write_graph
from gcntrain.errors import OutputError
from gcntrain.job import progress as P
from tests.mpi.batch import CliBatches
from tests.mpi.launch import gcntrain_exe, mpiexec

STOPS = ["--epochs", "200", "--early-stopping", "1", "--seed", "3", "--lr", "0.05"]
CK = ["--epochs", "6", "--seed", "5", "--early-stopping", "0", "--dtype", "float64"]


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    path = tmp_path_factory.mktemp("lines") / "g.h5"
    write_graph(path, rmat(8, edge_factor=8, seed=2, num_features=12, num_classes=3))
    return path


def _env(**extra) -> dict:
    env = {**os.environ, "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", **extra}
    env.pop("GCNTRAIN_CACHE_DIR", None)
    return env


def _weights(out) -> dict:
    import h5py

    with h5py.File(out / "weights.h5", "r") as f:
        return [
            {k: f[f"layer{i}"][k][()] for k in f[f"layer{i}"]} for i in range(f.attrs["num_layers"])
        ]


# -- SIGTERM without --checkpoint --------------------------------------------------------------
@pytest.mark.parametrize("nprocs", [1, pytest.param(3, marks=pytest.mark.mpi)])
def test_sigterm_without_checkpoint_is_one_line_and_status_143(graph, tmp_path, nprocs):
    launch = [mpiexec(), "-n", str(nprocs)] if nprocs > 1 else []
    argv = [*launch, *gcntrain_exe(), "train", str(graph), "--epochs", "100000"]
    err_path = tmp_path / "err"
    with open(err_path, "w") as err:
        proc = subprocess.Popen(
            [*argv, "--early-stopping", "0", "--json"],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=_env(),
            start_new_session=True,
        )
        t0 = time.monotonic()
        while "epoch    1/" not in err_path.read_text():  # training is under way
            assert proc.poll() is None, err_path.read_text()
            assert time.monotonic() - t0 < 120, "training did not start"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGTERM)  # mpiexec forwards it to every rank
        try:
            out, _ = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
    text = err_path.read_text()
    assert proc.returncode == 128 + 15, text
    tail = [ln for ln in text.split("epoch    1/", 1)[1].splitlines()[1:] if ln.strip()]
    tail = [ln for ln in tail if not ln.startswith("epoch ")]
    assert tail == [
        "gcntrain: stopped by SIGTERM; no checkpoint was asked for (--checkpoint DIR saves one "
        "and stops after the epoch)"
    ]
    assert out == ""  # no half summary


def test_stop_on_signal_restores_handlers_and_wakeup_fd():
    from gcntrain.job.signals import StopOnSignal

    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGUSR1)}
    stop = StopOnSignal(0, 1)
    stop.install()
    assert signal.getsignal(signal.SIGTERM) is not before[signal.SIGTERM]
    stop.restore()
    assert {s: signal.getsignal(s) for s in before} == before
    assert signal.set_wakeup_fd(-1) == -1  # none left installed


# -- LATEST could not be written ---------------------------------------------------------------
def _stage(root, epoch, ranks=1):
    for r in range(ranks):
        ckio.write_rank(root, epoch, r, {"a": np.arange(3) + epoch})


def test_a_failed_latest_leaves_a_checkpoint_resume_finds(tmp_path, monkeypatch):
    _stage(tmp_path, 2)
    ckio.publish(tmp_path, 2, {"ranks": 1})
    _stage(tmp_path, 4)
    real = ckio.write_file

    def no_latest(path, write):
        if os.path.basename(path) == ckio.LATEST:
            raise OutputError("No space left on device", str(path))
        real(path, write)

    monkeypatch.setattr(ckio, "write_file", no_latest)
    with pytest.raises(OutputError, match="epoch-000004 is complete and --resume"):
        ckio.publish(tmp_path, 4, {"ranks": 1})
    assert (tmp_path / ckio.LATEST).read_text().strip() == "epoch-000002"
    ckpt, meta, note = ckio.find_latest(tmp_path)
    assert ckpt.name == "epoch-000004" and meta["epoch"] == 4
    assert "names epoch-000002" in note and "epoch-000004" in note
    # an incomplete directory (a rank file missing) is passed over; LATEST agreeing: no note
    (tmp_path / "epoch-000004" / "rank-00000.npz").unlink()
    ckpt, meta, note = ckio.find_latest(tmp_path)
    assert ckpt.name == "epoch-000002" and note is None
    (tmp_path / ckio.LATEST).unlink()
    assert ckio.find_latest(tmp_path)[0].name == "epoch-000002"
    assert "missing" in ckio.find_latest(tmp_path)[2]


def test_serial_checkpoint_without_latest_resumes_bit_identical(graph, tmp_path, capsys):
    ck = tmp_path / "ck"
    (ck / ckio.LATEST).mkdir(parents=True)  # LATEST cannot be replaced
    base = ["train", str(graph), *CK, "--quiet"]
    assert run([*base, "--checkpoint", str(ck), "--checkpoint-every", "3"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "epoch-000003 is complete" in err[0], err
    assert run([*base, "--resume", str(ck), "-o", str(tmp_path / "res")]) == 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "resuming from" in err[0] and "epoch-000003" in err[0], err
    assert run([*base, "-o", str(tmp_path / "ref")]) == 0
    a, b = _weights(tmp_path / "ref"), _weights(tmp_path / "res")
    assert all(np.array_equal(x[k], y[k]) for x, y in zip(a, b) for k in x)


# -- Numba compile lines -----------------------------------------------------------------------
def test_compile_lines_on_a_cold_cache_and_none_on_a_warm_one(graph, tmp_path):
    # a stored graph (not the generated default dataset): the cold run compiles training's
    # kernels, not the generator's too (20 kernels -> 13; the lines are the same)
    env = _env(NUMBA_CACHE_DIR=str(tmp_path / "numba"))
    argv = [*gcntrain_exe(), "train", str(graph), "--epochs", "2"]
    cold = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert cold.returncode == 0, cold.stderr
    lines = cold.stderr.splitlines()
    assert lines[0].startswith("compiling Numba kernels"), lines
    done = [ln for ln in lines if ln.startswith("compiled ")]
    assert done and int(done[0].split()[1]) >= 5 and " in " in done[0]
    assert lines.index(done[0]) < next(i for i, ln in enumerate(lines) if ln.startswith("epoch"))
    warm = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert warm.returncode == 0 and "compil" not in warm.stderr, warm.stderr


# -- the last epoch's line under early stopping ------------------------------------------------
def _rec(epoch):
    from types import SimpleNamespace

    return SimpleNamespace(
        epoch=epoch, loss=1.0, train_acc=0.5, val_loss=0.7, val_acc=0.5, test_acc=0.5, seconds=0.1
    )


def test_progress_prints_the_stopping_epoch_held_back_by_the_rate(monkeypatch, capsys):
    clock = iter(np.arange(0.0, 100.0, 0.5))
    monkeypatch.setattr(P, "monotonic", lambda: float(next(clock)))
    prog = P.Progress(epochs=200, every=2.0)
    try:
        for e in range(1, 8):
            prog(_rec(e))
        prog.finish(stopped_early=True)
    finally:
        prog.close()
    lines = capsys.readouterr().err.splitlines()
    assert [ln.split()[1] for ln in lines] == ["1/200", "5/200", "7/200"]
    assert lines[-1].endswith("(early stopping ended training)")
    prog = P.Progress(epochs=200, every=0.0)  # the stopping epoch was shown: a line of its own
    try:
        prog(_rec(1))
        prog.finish(stopped_early=True)
    finally:
        prog.close()
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == "early stopping ended training at epoch 1/200"


def _check_stop_lines(err: str, summary: dict) -> None:
    assert summary["stopped_early"] and summary["epochs"] < 200, summary["epochs"]
    epochs = [ln for ln in err.splitlines() if ln.startswith("epoch ")]
    assert epochs[-1].split()[1] == f"{summary['epochs']}/200", epochs
    assert epochs[-1].endswith("(early stopping ended training)") or err.rstrip().endswith(
        f"early stopping ended training at epoch {summary['epochs']}/200"
    )


def test_early_stopping_shows_the_last_epoch_serially(graph, capsys):
    assert run(["train", str(graph), *STOPS, "--json"]) == 0
    cap = capsys.readouterr()
    _check_stop_lines(cap.err, json.loads(cap.out))


# -- the vertex cut's drift --------------------------------------------------------------------
def _serial_eval(graph, weights, argv_cfg) -> dict:
    from gcntrain.job.drift import evaluate_weights
    from gcntrain.job.runner import load_rank
    from gcntrain.job.spec import JobSpec
    from gcntrain.model.normalize import support_kind
    from gcntrain.model.trainer import TrainConfig
    from gcntrain.schemes import registry

    cfg = TrainConfig(**argv_cfg)
    sch = registry.get("serial", 1)
    world = sch.world(None)
    sc, src, layout, local = load_rank(world, JobSpec(str(graph), cfg, "serial"))
    ops = sch.setup(world, layout, local, support_kind(cfg.model, cfg.aggregator))
    return evaluate_weights(ops, local, cfg, weights)


def test_drift_of_a_local_only_run_on_one_rank_is_zero(graph, capsys):
    argv = ["train", str(graph), "--scheme", "vertexcut", "--delay", "none", "--epochs", "4"]
    assert run([*argv, "--json", "--quiet"]) == 0
    d = json.loads(capsys.readouterr().out)["drift"]
    assert d["exact_val_loss"] == pytest.approx(d["approx_val_loss"]) and d["val_acc"] == 0
    assert run([*argv, "--quiet"]) == 0
    assert "\ndrift " in capsys.readouterr().out


# -- np 3: one launch for the commands below ---------------------------------------------------
BATCH = CliBatches(timeout=600)


@pytest.fixture(scope="module")
def np3(graph, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("np3")
    ck = tmp / "ck"
    (ck / ckio.LATEST).mkdir(parents=True)
    base = ["train", str(graph), *CK, "--quiet"]
    vc = ["train", str(graph), "--scheme", "vertexcut", "--epochs", "12", "--seed", "4"]
    jobs = {
        "stop": ["train", str(graph), "--scheme", "1d", *STOPS, "--json"],
        "cd5": [*vc, "--delay", "5", "--json", "--quiet", "-o", str(tmp / "cd5")],
        "cd0": [*vc, "--delay", "0", "--json", "--quiet"],
        "ck": [*base, "--scheme", "1d", "--checkpoint", str(ck), "--checkpoint-every", "3"],
        "res": [*base, "--scheme", "1d", "--resume", str(ck), "-o", str(tmp / "res")],
        "ref": [*base, "--scheme", "1d", "-o", str(tmp / "ref")],
    }
    for name, argv in jobs.items():
        BATCH.add(f"{tmp}:{name}", 3, argv)
    return {name: BATCH.result(f"{tmp}:{name}") for name in jobs}, tmp


@pytest.mark.mpi
def test_np3_early_stopping_shows_the_last_epoch(np3):
    got, _ = np3
    res = got["stop"]
    assert res.rcs == [0, 0, 0], res.stderr[-2000:]
    assert res.stderrs[1] == res.stderrs[2] == ""  # rank 0 prints
    _check_stop_lines(res.stderrs[0], res.json())


@pytest.mark.mpi
def test_np3_drift_of_cd5_against_a_serial_evaluation_of_its_weights(graph, np3):
    got, tmp = np3
    d = got["cd5"].json()["drift"]
    ref = _serial_eval(graph, _weights(tmp / "cd5"), {"epochs": 12, "seed": 4})
    for m in ("val", "test"):
        for f in ("loss", "acc"):
            assert d[f"exact_{m}_{f}"] == pytest.approx(ref[f"{m}_{f}"], rel=1e-5, abs=1e-6)
            assert d[f"{m}_{f}"] == pytest.approx(d[f"approx_{m}_{f}"] - d[f"exact_{m}_{f}"])
    assert d["val_loss"] != 0  # cd-5 on 3 ranks aggregates differently from exact
    assert "drift" not in got["cd0"].json()  # exact: no drift


@pytest.mark.mpi
def test_np3_checkpoint_without_latest_resumes_bit_identical(np3):
    got, tmp = np3
    assert got["ck"].rcs == [2, 2, 2], got["ck"].stderr[-2000:]
    lines = got["ck"].error_lines()
    assert len(lines) == 1 and "epoch-000003 is complete" in lines[0], lines
    assert got["res"].rcs == [0, 0, 0], got["res"].stderr[-2000:]
    lines = got["res"].error_lines()
    assert len(lines) == 1 and "resuming from" in lines[0], lines
    assert got["ref"].rcs == [0, 0, 0]
    a, b = _weights(tmp / "ref"), _weights(tmp / "res")
    assert all(np.array_equal(x[k], y[k]) for x, y in zip(a, b) for k in x)
