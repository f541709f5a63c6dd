"""Progress on stderr: epoch lines at a steady rate with an ETA, the Numba compile notice,
the oversubscription note; stdout keeps one JSON object under --json."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numba
import numpy as np

from gcntrain.cli.main import run
from gcntrain.job import progress as P
from gcntrain.kernels.compile_watch import CompileWatch


def _rec(epoch: int, seconds: float):
    return SimpleNamespace(
        epoch=epoch,
        loss=1.0,
        train_acc=0.5,
        val_loss=None,
        val_acc=None,
        test_acc=None,
        seconds=seconds,
    )


def test_epoch_lines_at_most_every_few_seconds_first_and_last_always(monkeypatch, capsys):
    clock = iter(np.arange(0.0, 100.0, 0.5))  # each epoch takes 0.5 s of wall time
    monkeypatch.setattr(P, "monotonic", lambda: float(next(clock)))
    prog = P.Progress(epochs=10, every=2.0)
    try:
        for e in range(1, 11):
            prog(_rec(e, 9.0 if e == 1 else 0.5))
    finally:
        prog.close()  # the compile watch is installed from construction
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("epoch")]
    assert [ln.split()[1] for ln in lines] == ["1/10", "5/10", "9/10", "10/10"]
    assert "ETA" not in lines[0]  # epoch 1 (compiling) alone does not predict the rest
    # the ETA is the median of the recent epochs (epoch 1 excluded) x the epochs left
    assert lines[1].endswith("ETA 2.5 s") and lines[2].endswith("ETA 0.5 s")
    assert "ETA" not in lines[3]


def test_oversubscription_note_only_when_threads_exceed_cores():
    assert P.oversubscription_note(2, 1, 2) is None
    assert P.oversubscription_note(4, 4, 16) is None
    note = P.oversubscription_note(4, 1, 2)
    assert note.startswith("note: 4 ranks x 1 thread share 2 cores") and "0.5 core" in note


def test_compile_watch_counts_compilations_not_calls():
    @numba.njit(cache=False)
    def twice(x):
        return 2 * x

    started = []
    watch = CompileWatch(on_first=started.append).install()
    try:
        twice(1.5)
        twice(2.5)  # compiled already
        twice(np.int64(3))  # a new signature compiles again
    finally:
        watch.remove()
    twice(np.float32(1))  # not watched any more
    assert watch.count == 2 and watch.seconds > 0 and started == ["twice"]


def test_json_keeps_stdout_one_object_and_progress_goes_to_stderr(capsys):
    assert run(["train", "--epochs", "3", "--json"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["epochs"] == 3
    assert [ln.split()[1] for ln in cap.err.splitlines() if ln.startswith("epoch")][-1] == "3/3"
    assert run(["train", "--epochs", "3", "--json", "--quiet"]) == 0
    assert capsys.readouterr().err == ""
