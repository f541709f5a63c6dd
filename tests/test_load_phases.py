"""The setup phases of `train --json` (`setup_phases`, `setup_critical_rank`) and the line
after setup: present serially and at np 2, each phase timed, and together no more than the
setup's time (`gcntrain.data.setup_phases`)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from gcntrain.cli.main import run
from gcntrain.data import setup_phases as SP
from gcntrain.data.generate import rmat
from gcntrain.data.store import write_graph
from tests.mpi.launch import gcntrain_exe, run_mpi


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("phases") / "g.h5"
    write_graph(path, rmat(8, edge_factor=8, seed=2, num_features=8, num_classes=3))
    return path


def check_phases(out: dict, expected: set[str]) -> None:
    phases = out["setup_phases"]
    assert set(phases) == expected, phases
    assert list(phases) == [k for k in SP.PHASES if k in phases]  # report order
    assert all(v >= 0 for v in phases.values())
    assert sum(phases.values()) <= out["setup_seconds"]
    assert 0 <= out["setup_critical_rank"] < out["ranks"]


def test_serial_json_and_line_name_the_phases(graph_file, capsys):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert run(["train", str(graph_file), "--epochs", "1", "--json"]) == 0
    summary = json.loads(out.getvalue())
    check_phases(summary, {"partition", "read", "normalise", "transpose", "ops"})
    line = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("setup ")]
    assert len(line) == 1 and "read " in line[0] and "normalise " in line[0], line


@pytest.mark.mpi
def test_np2_json_names_the_phases_of_the_slowest_rank(graph_file):
    argv = ["train", str(graph_file), "--scheme", "1d", "--epochs", "1", "--json"]
    res = run_mpi(2, [*gcntrain_exe(), *argv], timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    every = {"verify", "partition", "read", "normalise", "transpose", "exchange", "ops"}
    check_phases(res.json(), every)
    assert sum(ln.startswith("setup ") for ln in res.stderr.splitlines()) == 1  # rank 0


def test_nested_phases_are_exclusive(monkeypatch):
    clock = iter([0.0, 1.0, 3.0, 4.0])  # outer 0..4, inner 1..3
    monkeypatch.setattr(SP, "perf_counter", lambda: next(clock))
    SP.start()
    with SP.phase("ops"), SP.phase("exchange"):
        pass
    assert SP.stop() == {"exchange": 2.0, "ops": 2.0}
    with SP.phase("read"):  # no clock open: a plain block
        pass
    assert SP.stop() == {}
    with pytest.raises(ValueError, match="unknown setup phase"):
        with SP.SetupClock().phase("reading"):
            pass
