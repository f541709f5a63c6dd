"""Status lines (`gcntrain.status`): a command silent for a while names what it is doing, at a
terminal in place and erased before its next output, into a pipe as a line; the suite turns
them off (tests/conftest.py), these tests turn them on."""

from __future__ import annotations

import io
import re
import sys
import time

import pytest

from gcntrain import status
from gcntrain.cli.main import run


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def quick(monkeypatch):
    """A quiet stretch of 0.2 s is long enough; the watcher wakes every 0.05 s."""
    monkeypatch.setattr(status, "QUIET_SECONDS", 0.2)
    monkeypatch.setattr(status, "TTY_SECONDS", 0.2)


def _watched(monkeypatch, form: str, stream: io.StringIO, body) -> None:
    monkeypatch.setenv("GCNTRAIN_STATUS", form)
    monkeypatch.setattr(sys, "stderr", stream)
    monkeypatch.setattr(sys, "stdout", stream)
    with status.watching():
        body()


def test_log_form_names_a_quiet_phase_once(monkeypatch, quick):
    err = io.StringIO()

    def body():
        with status.phase("planning 9 ranks"):
            time.sleep(0.8)
        print("done")
        with status.phase("quick"):
            pass

    _watched(monkeypatch, "log", err, body)
    assert err.getvalue() == "gcntrain: planning 9 ranks ...\ndone\n"
    assert sys.stderr is err and sys.stdout is err  # the streams are given back


def test_log_form_repeats_a_long_phase(monkeypatch, quick):
    monkeypatch.setattr(status, "LOG_REPEATS", (0.3, 0.6))
    monkeypatch.setattr(status, "LOG_SECONDS", 10.0)
    err = io.StringIO()

    def body():
        with status.phase("partitioning the graph"):
            time.sleep(1.2)

    _watched(monkeypatch, "log", err, body)
    lines = err.getvalue().splitlines()
    assert lines[0] == "gcntrain: partitioning the graph ..."
    # 0.3 and 0.6 s after the first line, then not before 10 s
    assert len(lines) == 3 and all(ln.endswith("s so far") for ln in lines[1:]), lines


def test_terminal_form_is_erased_before_the_next_output(monkeypatch, quick):
    term = FakeTerminal()

    def body():
        with status.phase("ranking the grids") as p:
            p.step(3, 7)
            time.sleep(0.7)
        sys.stdout.write("result\n")

    _watched(monkeypatch, "auto", term, body)
    text = term.getvalue()
    assert "\rgcntrain: ranking the grids (3/7) ... " in text
    shown, after = text.rsplit("\r", 1)[0], text.rsplit("\r", 1)[1]
    assert after == "result\n"  # what follows the erasing "\r" is the output alone
    blank = shown.rsplit("\r", 1)[1]
    assert blank.strip() == "" and len(blank) >= len("gcntrain: ranking the grids (3/7) ... 0 s")


def test_off_and_other_ranks_say_nothing(monkeypatch, quick):
    for form, printer in (("off", True), ("log", False)):
        err = io.StringIO()
        monkeypatch.setenv("GCNTRAIN_STATUS", form)
        monkeypatch.setattr(sys, "stderr", err)
        with status.watching(printer), status.phase("reading"):
            time.sleep(0.5)
        assert err.getvalue() == "", form


def test_a_bad_mode_is_one_line_exit_2(monkeypatch, capsys):
    monkeypatch.setenv("GCNTRAIN_STATUS", "loud")
    assert run(["info"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "gcntrain: error: GCNTRAIN_STATUS='loud' is not one of auto, tty, log, off (status lines)"
    ]


def test_the_grid_ranking_names_itself(monkeypatch, quick, capsys):
    """The slowest README simulate line (--grid auto) says what it ranks, and how far."""
    monkeypatch.setattr(status, "QUIET_SECONDS", 0.0)
    term = FakeTerminal()
    monkeypatch.setenv("GCNTRAIN_STATUS", "tty")
    monkeypatch.setattr(sys, "stderr", term)
    assert run(["simulate", "--ranks", "64", "--scheme", "plexus", "--grid", "auto"]) == 0
    assert "gcntrain: ranking the grids of plexus on 64 ranks (" in term.getvalue()


def test_the_placement_note_comes_before_a_long_plan(monkeypatch, quick):
    """`simulate --machine` without a placement says what it assumed before a plan that
    takes a while (the grid ranking), after a quick one, and not at all with a refusal."""
    monkeypatch.setattr(status, "QUIET_SECONDS", 0.0)
    term = FakeTerminal()
    _watched(
        monkeypatch,
        "log",
        term,
        lambda: run(
            ["simulate", "-P", "64", "--scheme", "plexus", "--grid", "auto", "--machine", "fugaku"]
        ),
    )
    lines = term.getvalue().splitlines()
    note = [
        i for i, ln in enumerate(lines) if ln.startswith("simulate: 16 nodes x 4 ranks assumed")
    ]
    ranking = [i for i, ln in enumerate(lines) if ln.startswith("gcntrain: ranking the grids")]
    graph = [i for i, ln in enumerate(lines) if ln.startswith("graph ")]
    assert len(note) == 1 and note[0] < graph[0], lines
    assert ranking and note[0] < ranking[0], lines


def test_the_placement_note_follows_a_quick_plan_and_not_a_refusal(capsys):
    assert run(["simulate", "-P", "8", "--scheme", "1d", "--machine", "fugaku"]) == 0
    out, err = capsys.readouterr()
    assert err.startswith("simulate: 2 nodes x 4 ranks assumed") and "graph " in out
    assert run(["simulate", "-P", "100000", "--scheme", "1d", "--machine", "fugaku"]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("gcntrain: error:"), err


def test_a_phase_with_its_own_rate_waits_longer(monkeypatch, quick):
    """`training` prints epoch lines at a known rate: its status waits longer than that."""
    err = io.StringIO()

    def body():
        with status.phase("training", quiet=1.0):
            time.sleep(0.6)
        with status.phase("training on", quiet=0.3):
            time.sleep(0.8)

    _watched(monkeypatch, "log", err, body)
    assert err.getvalue() == "gcntrain: training on ...\n"


def test_quiet_train_shows_no_status(monkeypatch, quick, capsys):
    """`train --quiet` asks for no progress on stderr: status lines included."""
    monkeypatch.setattr(status, "QUIET_SECONDS", 0.0)
    err = io.StringIO()
    monkeypatch.setenv("GCNTRAIN_STATUS", "log")
    monkeypatch.setattr(sys, "stderr", err)
    assert run(["train", "--epochs", "2", "--quiet", "--json"]) == 0
    assert "gcntrain: " not in err.getvalue().replace("gcntrain: starting ...\n", ""), (
        err.getvalue()
    )


@pytest.mark.mpi
def test_under_mpiexec_only_rank_0_says_its_phase(tmp_path):
    """np 3, log form (ranks' stderr is a pipe under mpiexec): every rank waits to open its
    --config (a FIFO nobody writes), long enough for a status line; one line comes, rank
    0's, and SIGTERM then ends every rank with one more."""
    import os
    import select
    import signal
    import subprocess

    from tests.mpi.launch import gcntrain_exe, mpiexec

    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    env = {**os.environ, "GCNTRAIN_STATUS": "log", "NUMBA_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [mpiexec(), "-n", "3", *gcntrain_exe(), "train", "--config", str(fifo)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
    )
    try:
        # the first line within 60 s (a regression that prints none fails, never hangs)
        ready, _, _ = select.select([proc.stderr], [], [], 60)
        first = proc.stderr.readline() if ready else "(nothing within 60 s)"
        time.sleep(3 * status.QUIET_SECONDS)  # the other ranks would have said it by now
    finally:
        os.kill(proc.pid, signal.SIGTERM)
    try:
        (rest,) = proc.communicate(timeout=60)[1:]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    assert first == "gcntrain: starting ...\n", first
    *repeats, last = rest.splitlines()
    assert last == "gcntrain: stopped by SIGTERM", rest
    # rank 0's repeats of its phase (2 s after the first line): no other rank's line
    assert all(re.fullmatch(r"gcntrain: starting: \d+ s so far", ln) for ln in repeats), rest
    assert len(repeats) <= 2, rest
    assert proc.returncode == 143


def test_log_form_says_each_step_of_a_counted_phase(monkeypatch, quick):
    err = io.StringIO()

    def body():
        with status.phase("ranking the grids") as p:
            for i in range(2):
                p.step(i, 2)
                time.sleep(0.5)

    _watched(monkeypatch, "log", err, body)
    assert err.getvalue().splitlines() == [
        "gcntrain: ranking the grids (0/2) ...",
        "gcntrain: ranking the grids (1/2) ...",
    ]
