"""A checkpoint whose arrays agree among themselves but whose parameter shapes are not the
model's (issue 51, item 9): refused before training on every rank, one line naming the file
and the shapes, exit 2, no outputs written and the checkpoint left as it was; serially and
at np 3."""

from __future__ import annotations

import hashlib
import shutil

import numpy as np
import pytest

from gcntrain.cli.main import run
from gcntrain.data import checkpoint as ckio
from gcntrain.errors import InputError
from gcntrain.model.state import TrainState
from tests.shared_runs import ERROR, one_error, rewrite


@pytest.fixture(scope="module")
def graph_file(ck_graph_file):
    """R-MAT scale 8 (tests/shared_runs.py, shared with tests/test_checkpoint.py)."""
    return ck_graph_file


def _widen_output(path) -> None:
    """Layer 1's W (16x3) and its moments replaced by consistent 16x7 arrays."""

    def change(a):
        for g in "wmv":
            old = a[f"{g}.1.W"]
            a[f"{g}.1.W"] = np.full((old.shape[0], 7), 0.01, dtype=old.dtype)

    rewrite(path, change)


def _hidden_8(path) -> None:
    """Every parameter as a run with --hidden 8 would have written it."""

    def change(a):
        for g in "wmv":
            a[f"{g}.0.W"] = np.full((a[f"{g}.0.W"].shape[0], 8), 0.01, dtype=np.float32)
            a[f"{g}.1.W"] = np.full((8, a[f"{g}.1.W"].shape[1]), 0.01, dtype=np.float32)

    rewrite(path, change)


#: tampered rank file -> the words of its one error line
TAMPERED = {
    "widened": (_widen_output, "layer 1's W is 16x7, the model needs 16x3"),
    "hidden8": (_hidden_8, "layer 0's W is 10x8, the model needs 10x16"),
}


def _digests(root) -> dict:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _state(shapes) -> TrainState:
    w = [{k: np.zeros(s, np.float32) for k, s in layer.items()} for layer in shapes]
    return TrainState(0, w, w, w, 0, [], [])


@pytest.mark.parametrize(
    "have, need, words",
    [
        ([{"W": (4, 2)}], [{"W": (4, 2)}], None),
        ([{"W": (4, 5)}, {"W": (5, 2)}], [{"W": (4, 3)}, {"W": (3, 2)}], "layer 0's W is 4x5"),
        ([{"W": (4, 2)}], [{"W": (4, 3)}, {"W": (3, 2)}], "it holds 1 layers, the model has 2"),
        ([{"W": (4, 2)}], [{"W": (4, 2), "b": (2,)}], "['W', 'b']"),
        ([{"W": (6,)}], [{"W": (5,)}], "layer 0's W is 6, the model needs 5"),
    ],
)
def test_model_mismatch_names_the_first_difference(have, need, words):
    st = _state(have)
    model = [{k: np.zeros(s, np.float32) for k, s in layer.items()} for layer in need]
    why = st.model_mismatch(model)
    if words is None:
        assert why is None
        st.check_model(model)
    else:
        assert words in why
        with pytest.raises(InputError, match="does not fit the model"):
            st.check_model(model)


def test_model_mismatch_names_dtypes_only_where_they_differ():
    st = _state([{"W": (4, 2)}])
    why = st.model_mismatch([{"W": np.zeros((4, 2), np.float64)}])
    assert why == "layer 0's W is 4x2 float32, the model needs 4x2 float64"


@pytest.fixture(scope="module")
def serial_checkpoint(graph_file, tmp_path_factory):
    ck = tmp_path_factory.mktemp("ck1") / "ck"
    argv = ["train", str(graph_file), "--epochs", "2", "--quiet", "--checkpoint", str(ck)]
    assert run(argv) == 0
    return ck


@pytest.mark.parametrize("name", sorted(TAMPERED))
def test_a_checkpoint_for_another_model_is_refused_serially(
    graph_file, serial_checkpoint, tmp_path, capsys, name
):
    ck = tmp_path / "ck"
    shutil.copytree(serial_checkpoint, ck)
    target = ckio.rank_file(ckio.latest(ck)[0], 0)
    damage, words = TAMPERED[name]
    damage(target)
    before = _digests(ck)
    capsys.readouterr()
    out = tmp_path / "out"
    argv = ["train", str(graph_file), "--epochs", "4", "--quiet", "--resume", str(ck)]
    assert run([*argv, "--checkpoint", str(ck), "-o", str(out)]) == 2
    got = capsys.readouterr()
    line = one_error(got.err)
    assert line == f"{ERROR}inconsistent checkpoint file {target}: {words}"
    assert got.out == ""
    assert not out.exists() or not any(out.iterdir())
    assert _digests(ck) == before


def test_another_hidden_width_is_refused_with_one_clear_line(
    graph_file, serial_checkpoint, tmp_path, capsys
):
    capsys.readouterr()
    argv = ["train", str(graph_file), "--epochs", "4", "--quiet", "--hidden", "32"]
    assert run([*argv, "--resume", str(serial_checkpoint)]) == 2
    line = one_error(capsys.readouterr().err)
    assert "cannot resume from" in line and "--hidden: checkpoint [16], this run [32]" in line


@pytest.fixture(scope="module")
def checkpoint_np3(ck_checkpoint_np3):
    """The session's np 3 checkpoint of `graph_file` (1D, 2 epochs; tests/conftest.py,
    tests/test_checkpoint.py damages copies of it too)."""
    return ck_checkpoint_np3[0]


@pytest.mark.mpi
def test_a_checkpoint_for_another_model_is_refused_on_every_rank(
    graph_file, checkpoint_np3, tmp_path
):
    from tests.mpi.launch import gcntrain_exe, run_mpi

    ck = tmp_path / "ck"
    shutil.copytree(checkpoint_np3, ck)
    target = ckio.rank_file(ckio.latest(ck)[0], 1)
    damage, words = TAMPERED["widened"]
    damage(target)
    before = _digests(ck)
    out = tmp_path / "out"
    argv = [*gcntrain_exe(), "train", str(graph_file), "--scheme", "1d", "--epochs", "4"]
    argv += ["--quiet", "--resume", str(ck), "--checkpoint", str(ck), "-o", str(out)]
    res = run_mpi(3, argv, timeout=300)
    assert res.returncode == 2, res.stderr[-2000:]
    line = one_error(res.stderr)
    assert line == f"{ERROR}rank 1: inconsistent checkpoint file {target}: {words}"
    assert res.stdout == ""
    assert not out.exists() or not any(out.iterdir())
    assert _digests(ck) == before
