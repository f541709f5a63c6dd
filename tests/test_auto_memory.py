"""``--max-memory`` too small (issue 51, item 12): ``--scheme auto`` chooses only among the
configurations that fit it and, where none does, refuses before announcing any choice, in
one line with the bound, the smallest need among the candidates and how it splits (the
fixed part every process takes against the graph and model's share); the explicit scheme's
refusal and the planner's (`simulate --max-memory`) name the fixed part apart too."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from gcntrain.cli.main import run
from gcntrain.data.generate import rmat
from gcntrain.data.store import write_graph
from gcntrain.errors import InputError
from gcntrain.job import auto
from gcntrain.job.memory_guard import PROCESS_BYTES
from gcntrain.simulate.local import load_machine
from tests.shared_runs import ERROR, one_error

FIXED = "128.0 MiB fixed per process (the interpreter and its libraries)"


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    # the fastest exact configuration on 3 ranks (hier on METIS parts) is not the one with
    # the least memory per rank: a bound between them must change the choice
    g = rmat(8, edge_factor=8, seed=2, num_features=50, num_classes=4)
    path = tmp_path_factory.mktemp("automem") / "g.h5"
    write_graph(path, g)
    return path


def _row(label, mem, fits=True, exact=True):
    return {"label": label, "memory_bytes_max": mem, "fits": fits, "exact": exact}


def test_no_fit_line_names_the_bound_the_least_need_and_its_parts():
    rows = [_row("1d [block]", 16 << 20, False), _row("2d grid 3x1 [block]", 12 << 20, False)]
    with pytest.raises(InputError) as e:
        auto.no_fit_line(rows, 1 << 20, 4)
    msg = str(e.value)
    assert msg.startswith("--scheme auto: no configuration fits the 1.0 MiB of --max-memory")
    assert "the smallest need, 2d grid 3x1 [block]'s, is about 140.0 MiB: " in msg
    assert f"{FIXED} and 12.0 MiB for its share" in msg
    assert "the fixed part alone is more than --max-memory, so no rank count fits" in msg
    # room beyond the fixed part: more ranks (a smaller share) would help
    with pytest.raises(InputError, match="use more ranks or a smaller --hidden$"):
        auto.no_fit_line(rows, PROCESS_BYTES + (8 << 20), 4)
    auto.no_fit_line([*rows, _row("p2p [block]", 1 << 20)], 1 << 20, 4)  # one fits
    # the node's own memory excludes them, not the bound: `recommend` says so
    auto.no_fit_line(rows, 1 << 30, 4)


def test_process_room_bounds_the_node_memory_by_the_ranks_shares():
    prof = load_machine("abci")
    assert auto.process_room(prof, 4, None) is prof
    got = auto.process_room(prof, 4, PROCESS_BYTES + (100 << 20))
    assert got.memory == 4 * (100 << 20) and got.name == prof.name
    assert auto.process_room(prof, 4, 1 << 20).memory == 1.0  # nothing can fit
    assert auto.process_room(prof, 4, 1 << 50).memory == prof.memory  # the node's, smaller
    assert auto.process_room(None, 4, 1 << 20) is None  # a rank that does not plan


def test_the_explicit_scheme_names_the_fixed_part_apart(graph_file, tmp_path, capsys):
    out = tmp_path / "out"
    argv = ["train", str(graph_file), "--epochs", "1", "--quiet", "-o", str(out)]
    capsys.readouterr()
    assert run([*argv, "--max-memory", "1M"]) == 2
    line = one_error(capsys.readouterr().err)
    assert line.startswith(f"{ERROR}training this rank needs about ")
    assert f"{FIXED} and " in line and " for its share (graph rows" in line
    assert "more than the 1.0 MiB of --max-memory; the fixed part alone" in line
    assert not out.exists()
    # past the fixed part, the share is what more ranks shrink
    assert run([*argv, "--max-memory", str(PROCESS_BYTES + 1024)]) == 2
    line = one_error(capsys.readouterr().err)
    assert line.endswith("--max-memory; use more ranks or a smaller --hidden"), line


def test_the_planner_names_its_fixed_part_apart(graph_file, capsys):
    argv = ["simulate", str(graph_file), "-P", "3", "--scheme", "1d", "--max-memory", "1M"]
    capsys.readouterr()
    assert run(argv) == 2
    line = one_error(capsys.readouterr().err)
    assert "planning needs at least " in line and "300.0 MiB fixed per process" in line
    assert "for the support matrix of" in line and "raise --max-memory" in line


@pytest.fixture(scope="module")
def exact_rows(graph_file) -> list[dict]:
    """Every exact configuration on 3 ranks of one node, as ``--scheme auto`` plans them."""
    argv = ["simulate", str(graph_file), "-P", "3", "--sweep", "--machine", "local"]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        assert run([*argv, "--ranks-per-node", "3", "--json"]) == 0
    return [r for r in json.loads(buf.getvalue())["ranking"] if r["exact"]]


def _auto_np3(graph_file, out, *extra):
    from tests.mpi.launch import gcntrain_exe, run_mpi

    argv = [*gcntrain_exe(), "train", str(graph_file), "--epochs", "1", "-o", str(out)]
    return run_mpi(3, [*argv, *extra], timeout=300)


@pytest.mark.mpi
def test_auto_chooses_only_among_the_configurations_that_fit(graph_file, exact_rows, tmp_path):
    rows = exact_rows
    best, least = rows[0], min(r["memory_bytes_max"] for r in rows)
    assert best["memory_bytes_max"] > least  # the graph was picked for this
    limit = PROCESS_BYTES + (best["memory_bytes_max"] + least) // 2
    fitting = [r for r in rows if PROCESS_BYTES + r["memory_bytes_max"] <= limit]
    res = _auto_np3(graph_file, tmp_path / "out", "--max-memory", str(limit), "--json")
    assert res.returncode == 0, res.stderr[-3000:]
    rec = res.json()["recommendation"]
    assert rec["label"] != best["label"]
    assert PROCESS_BYTES + rec["memory_bytes_max"] <= limit
    fastest = min(r["epoch_seconds"] for r in fitting)
    assert rec["predicted_epoch_seconds"] == pytest.approx(fastest, rel=1e-9)


@pytest.mark.mpi
@pytest.mark.parametrize("how", ["fixed", "share"])
def test_auto_refuses_before_choosing_when_nothing_fits(graph_file, exact_rows, tmp_path, how):
    rows = exact_rows
    limit = (
        1 << 20 if how == "fixed" else PROCESS_BYTES + min(r["memory_bytes_max"] for r in rows) - 1
    )
    out = tmp_path / "out"
    res = _auto_np3(graph_file, out, "--max-memory", str(limit))  # not quiet: no choice said
    assert res.returncode == 2, res.stderr[-3000:]
    line = one_error(res.stderr)
    assert line.startswith(f"{ERROR}--scheme auto: no configuration fits the "), line
    assert "of --max-memory per rank: the smallest need, " in line and FIXED in line
    if how == "fixed":
        assert "the fixed part alone is more than --max-memory, so no rank count fits" in line
    else:
        assert line.endswith("use more ranks or a smaller --hidden"), line
    said = [ln for ln in res.stderr.splitlines() if ln.startswith("scheme auto: ")]
    assert [ln.startswith("scheme auto: planning ") for ln in said] == [True], said
    assert res.stdout == "" and not out.exists()


@pytest.mark.mpi
def test_the_explicit_scheme_names_the_fixed_part_on_every_rank(graph_file, tmp_path):
    out = tmp_path / "out"
    res = _auto_np3(graph_file, out, "--scheme", "1d", "--max-memory", "1M", "--quiet")
    assert res.returncode == 2, res.stderr[-3000:]
    line = one_error(res.stderr)
    assert "training this rank needs about " in line and FIXED in line
    assert "the fixed part alone is more than --max-memory" in line
    assert res.stdout == "" and not out.exists()
