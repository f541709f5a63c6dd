"""Checkpoints and resume: files written whole or not at all, the previous checkpoint kept
until the next is complete, refusals naming what differs, bit-identical resumed training
(serially here; every scheme at np = 2 and 3 under MPI)."""

from __future__ import annotations

import errno
import json

import numpy as np
import pytest

from gcntrain.cli.main import run
from gcntrain.data import checkpoint as ckio
from gcntrain.data.generate import rmat
from gcntrain.data.store import write_graph
from gcntrain.errors import InputError, OutputError
from gcntrain.job.runner import run_job
from gcntrain.job.spec import JobOutputs, JobSpec
from gcntrain.model.state import TrainState
from gcntrain.model.trainer import EpochRecord, TrainConfig
from tests.mpi.batch import worker_case
from tests.shared_runs import h5_arrays, one_error, rewrite


@pytest.fixture(scope="module")
def graph_file(ck_graph_file):
    """R-MAT scale 8 (tests/shared_runs.py, shared with tests/test_checkpoint_shapes.py)."""
    return ck_graph_file


def _state(epoch: int) -> TrainState:
    rng = np.random.default_rng(epoch)
    w = [{"W": rng.random((3, 2)), "b": rng.random(2)}, {"W": rng.random((2, 2))}]
    rec = EpochRecord(epoch, 0.5, 0.9, 0.4, 0.8, 0.7, 0.01, 0.0, 0.0, 0.01)
    return TrainState(
        epoch,
        w,
        [{k: a * 2 for k, a in lp.items()} for lp in w],
        [{k: a * 3 for k, a in lp.items()} for lp in w],
        epoch,
        [rec],
        [0.4],
        False,
        {"0|fwd|1|2": rng.random((4, 2))},
    )


def test_state_round_trip_through_a_published_checkpoint(tmp_path):
    st = _state(4)
    ckio.write_rank(tmp_path, 4, 0, st.to_arrays())
    ckio.publish(tmp_path, 4, {"scheme": "1d"})
    ckpt, meta = ckio.latest(tmp_path)
    assert ckpt.name == "epoch-000004" and meta["epoch"] == 4 and meta["scheme"] == "1d"
    back = TrainState.from_arrays(ckio.read_rank(ckpt, 0))
    assert back.epoch == 4 and back.t == 4 and back.val_losses == [0.4]
    assert back.history[0].to_dict() == st.history[0].to_dict()
    for g in ("weights", "m", "v"):
        for a, b in zip(getattr(back, g), getattr(st, g)):
            assert set(a) == set(b) and all(np.array_equal(a[k], b[k]) for k in a)
    assert np.array_equal(back.scheme["0|fwd|1|2"], st.scheme["0|fwd|1|2"])
    # the next checkpoint replaces it; no staging directory is left
    ckio.write_rank(tmp_path, 6, 0, _state(6).to_arrays())
    ckio.publish(tmp_path, 6, {})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["LATEST", "epoch-000006"]


def test_a_failed_write_leaves_the_previous_checkpoint_latest(tmp_path, monkeypatch):
    ckio.write_rank(tmp_path, 2, 0, _state(2).to_arrays())
    ckio.publish(tmp_path, 2, {})

    def full_disk(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(np, "savez", full_disk)
    with pytest.raises(OutputError, match="No space left on device"):
        ckio.write_rank(tmp_path, 4, 0, _state(4).to_arrays())
    ckio.discard(tmp_path, 4)
    ckpt, meta = ckio.latest(tmp_path)
    assert meta["epoch"] == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["LATEST", "epoch-000002"]


def test_stale_staging_from_a_killed_write_is_removed_and_never_read(tmp_path):
    ckio.write_rank(tmp_path, 2, 0, _state(2).to_arrays())
    ckio.publish(tmp_path, 2, {})
    ckio.write_rank(tmp_path, 4, 0, _state(4).to_arrays())  # killed before publishing
    assert ckio.latest(tmp_path)[1]["epoch"] == 2
    ckio.remove_stale(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["LATEST", "epoch-000002"]


def test_resume_without_a_checkpoint_is_one_clear_error(tmp_path):
    with pytest.raises(InputError, match="no checkpoint to resume from"):
        ckio.latest(tmp_path)


def _weights(out_dir):
    return h5_arrays(out_dir / "weights.h5")


def test_serial_resume_is_bit_identical_and_cli_reports_it(graph_file, tmp_path, capsys):
    common = [str(graph_file), "--epochs", "7", "--seed", "5", "--early-stopping", "0"]
    assert run(["train", *common, "-o", str(tmp_path / "full"), "--quiet"]) == 0

    class Stop(Exception):
        pass

    def stop(rec):
        if rec.epoch == 5:
            raise Stop

    cfg = TrainConfig(epochs=7, seed=5, early_stopping=0)
    with pytest.raises(Stop):
        run_job(
            JobSpec(str(graph_file), cfg, "serial"),
            JobOutputs(checkpoint=tmp_path / "ck", checkpoint_every=3),
            callback=stop,
        )
    assert ckio.latest(tmp_path / "ck")[1]["epoch"] == 3
    capsys.readouterr()
    argv = ["train", *common, "--resume", str(tmp_path / "ck"), "-o", str(tmp_path / "res")]
    assert run([*argv, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["resumed_from_epoch"] == 3 and summary["epochs"] == 7
    a, b = _weights(tmp_path / "full"), _weights(tmp_path / "res")
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)
    lines = (tmp_path / "res" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["epoch"] for x in lines] == list(range(1, 8))


def test_resume_with_other_settings_or_graph_is_refused(graph_file, tmp_path, capsys):
    ck = tmp_path / "ck"
    base = ["train", str(graph_file), "--epochs", "2", "--quiet"]
    assert run([*base, "--checkpoint", str(ck), "--checkpoint-every", "1"]) == 0
    capsys.readouterr()
    assert run([*base, "--resume", str(ck), "--lr", "0.02"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot resume" in err[0] and "--lr" in err[0]
    other = tmp_path / "other.h5"
    write_graph(other, rmat(8, edge_factor=4, seed=9, num_features=10, num_classes=3))
    assert run(["train", str(other), "--epochs", "2", "--quiet", "--resume", str(ck)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "content hash" in err[0]
    # the same epochs: nothing left to train; more epochs than the checkpoint's run: allowed
    assert run([*base, "--resume", str(ck)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nothing is left to train" in err[0]
    assert run(["train", str(graph_file), "--epochs", "4", "--quiet", "--resume", str(ck)]) == 0


def test_checkpoint_directory_that_is_a_file_is_refused_before_training(graph_file, tmp_path):
    bad = tmp_path / "file"
    bad.write_text("x")
    assert run(["train", str(graph_file), "--epochs", "2", "--checkpoint", str(bad)]) == 2


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [2, 3])
@worker_case("resume")
def test_every_scheme_resumes_bit_identical_under_mpi(worker_batches, nprocs):
    """Interrupted after epoch 5, resumed from epoch 4: weights equal the uninterrupted
    run's bit for bit, for every scheme valid at np (delayed vertex cut and Int4 hier too):
    every registered scheme with configurations at np (`Scheme.test_configurations`).
    (Runs in the rank count's launch of the MPI worker cases, tests/mpi/batch.py.)"""
    from gcntrain.schemes.registry import SCHEMES
    from tests.mpi.worker import resume_cases

    cases = resume_cases(nprocs)
    valid = {name for name, sch in SCHEMES.items() if sch.test_configurations(nprocs)}
    assert {scheme for _, scheme, _, _ in cases} == valid
    verdict = worker_batches.verdict(nprocs, "resume")
    assert verdict["ranks"] == nprocs
    assert verdict["ok"], [d for d in verdict["details"] if not d.get("bit_identical")]
    labels = {d["scheme"] for d in verdict["details"]}
    assert labels == {label for label, _, _, _ in cases}
    assert {"vertexcut-cd2", "hier-int4"} <= labels


def test_a_signal_on_the_last_epoch_lets_the_run_finish(tmp_path):
    """A preemption flagged while the last epoch runs: the checkpoint is written and the run
    finishes (its outputs are written) instead of stopping with nothing left to resume."""
    from gcntrain.comm.communicator import SelfComm
    from gcntrain.errors import Preempted
    from gcntrain.job.checkpoint import Checkpointer, PreemptFlag

    flag = PreemptFlag()
    flag.signum = 15
    ck = Checkpointer(SelfComm(), str(tmp_path), 10, {"scheme": "serial"}, flag)
    assert ck.due(3, last=False)
    with pytest.raises(Preempted, match="stopped by SIGTERM after epoch 3") as got:
        ck.save(_state(3))
    assert got.value.status == 128 + 15
    assert ck.due(8, last=True)
    ck.save(_state(8))  # no exception: the run ends normally
    assert ckio.latest(tmp_path)[1]["epoch"] == 8


def test_identity_names_partition_seed_file_and_epochs_with_sparse_evaluation():
    from gcntrain.job.checkpoint import differences, run_identity

    cfg = TrainConfig(epochs=10, eval_every=1)
    a = run_identity("p2p", 2, {}, "random", cfg, "h", partition_seed=1)
    assert differences(a, run_identity("p2p", 2, {}, "random", cfg, "h", 1)) == []
    diff = differences(a, run_identity("p2p", 2, {}, "random", cfg, "h", partition_seed=2))
    assert len(diff) == 1 and "--partition-seed" in diff[0]
    diff = differences(a, run_identity("p2p", 2, {}, "random", cfg, "h", 1, "abc"))
    assert len(diff) == 1 and "partition file" in diff[0]
    # more epochs: fine with evaluation every epoch, refused when the stopping rule would
    # see the first run's forced last evaluation
    more = TrainConfig(epochs=20, eval_every=1)
    assert differences(a, run_identity("p2p", 2, {}, "random", more, "h", 1)) == []
    sparse = TrainConfig(epochs=10, eval_every=3)
    b = run_identity("p2p", 2, {}, "random", sparse, "h", 1)
    diff = differences(
        b, run_identity("p2p", 2, {}, "random", TrainConfig(epochs=20, eval_every=3), "h", 1)
    )
    assert len(diff) == 1 and "--eval-every 1" in diff[0]


def _empty(path):
    path.write_bytes(b"")


def _nan(path):
    def change(a):
        a["w.0.W"] = a["w.0.W"].copy()
        a["w.0.W"][0, 0] = np.nan

    rewrite(path, change)


def _reshaped(path):
    rewrite(path, lambda a: a.update({"w.0.W": a["w.0.W"][:-1]}))


#: tampered checkpoints (rank 1's file) and the words of their one error line (issue 51,
#: items 9 and 11): each refused on every rank before training, exit 2
TAMPERED = {
    "empty": (_empty, "unreadable checkpoint file {file}: No data left in file"),
    "nan": (_nan, "inconsistent checkpoint file {file}: w.0.W holds non-finite values"),
    "shape": (_reshaped, "inconsistent checkpoint file {file}: w.0.W is float32["),
}


@pytest.fixture(scope="module")
def checkpoint_np3(ck_checkpoint_np3):
    """(checkpoint, arguments) of the session's np 3 run of `graph_file` (tests/conftest.py;
    tests/test_checkpoint_shapes.py damages copies of it too)."""
    return ck_checkpoint_np3


def _resume_np3(ck, args):
    from tests.mpi.launch import gcntrain_exe, run_mpi

    argv = [*gcntrain_exe(), "train", *args[:-3], "--epochs", "4", "--quiet", "--resume", ck]
    return run_mpi(3, [str(a) for a in argv], timeout=300)


@pytest.mark.mpi
@pytest.mark.parametrize("name", sorted(TAMPERED))
def test_a_damaged_checkpoint_is_refused_on_every_rank(checkpoint_np3, tmp_path, name):
    import shutil

    ck, args = checkpoint_np3
    copy = tmp_path / "ck"
    shutil.copytree(ck, copy)
    newest, _ = ckio.latest(copy)
    damage, words = TAMPERED[name]
    target = ckio.rank_file(newest, 1)
    damage(target)
    res = _resume_np3(copy, args)
    assert res.returncode == 2, res.stderr[-2000:]
    assert words.format(file=target) in one_error(res.stderr)


@pytest.mark.mpi
def test_checkpoint_metadata_cut_mid_json_names_the_file(checkpoint_np3, tmp_path):
    import shutil

    ck, args = checkpoint_np3
    copy = tmp_path / "ck"
    shutil.copytree(ck, copy)
    for meta in copy.glob("epoch-*/meta.json"):
        meta.write_text(meta.read_text()[:20])
    named = (copy / "LATEST").read_text().strip()
    res = _resume_np3(copy, args)
    assert res.returncode == 2, res.stderr[-2000:]
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("gcntrain: error: ")]
    assert len(errors) == 1, res.stderr[-2000:]
    assert f"unreadable checkpoint metadata {copy / named / 'meta.json'}: " in errors[0]


def test_a_checkpoint_names_the_metis_backend_that_partitioned(
    graph_file, tmp_path, capsys, monkeypatch
):
    """METIS's fallback (no pymetis) partitions differently: a checkpoint of a run
    partitioned by one backend is not resumed by a run partitioned by the other."""
    from gcntrain.partition.metis import BACKEND_ENV

    ck = tmp_path / "ck"
    base = ["train", str(graph_file), "--scheme", "1d", "--partition", "metis", "--quiet"]
    assert run([*base, "--epochs", "2", "--checkpoint", str(ck)]) == 0
    capsys.readouterr()
    monkeypatch.setenv(BACKEND_ENV, "mtkahypar")
    assert run([*base, "--epochs", "4", "--resume", str(ck)]) == 2
    err = capsys.readouterr().err
    assert "METIS backend (pymetis unless named): checkpoint None, this run 'mtkahypar'" in err
    monkeypatch.delenv(BACKEND_ENV)
    assert run([*base, "--epochs", "4", "--resume", str(ck)]) == 0
