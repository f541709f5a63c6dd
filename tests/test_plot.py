"""`gcntrain plot`: the figures' data equal the simulator's own predictions (breakdown,
scaling, predicted vs measured of a finished run), figures are written whole in the asked
format, and bad requests give one line and exit 2."""

from __future__ import annotations

import json

import pytest

from gcntrain.cli.main import run
from gcntrain.data.generate import rmat
from gcntrain.data.store import write_graph

MACHINE = "abci"


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    g = rmat(8, edge_factor=6, seed=5, num_features=10, num_classes=3)
    path = tmp_path_factory.mktemp("plot") / "g.h5"
    write_graph(path, g)
    return path


def _json(capsys, argv):
    capsys.readouterr()
    assert run(argv) == 0
    return json.loads(capsys.readouterr().out)


def _simulated(capsys, graph, scheme, ranks, extra=()):
    argv = ["simulate", str(graph), "-P", str(ranks), "--scheme", scheme, "--machine", MACHINE]
    return _json(capsys, [*argv, *extra, "--json"])


def test_breakdown_equals_simulate(graph_file, capsys):
    d = _json(
        capsys,
        ["plot", "breakdown", str(graph_file), "-P", "3", "--machine", MACHINE, "--json"],
    )
    rows = {r["scheme"]: r for r in d["schemes"]}
    assert {"1d", "p2p", "2d", "plexus", "vertexcut", "hier"} <= set(rows)
    for name in ("1d", "2d", "hier"):
        sim = _simulated(capsys, graph_file, name, 3)
        r = rows[name]
        assert r["epoch_seconds"] == pytest.approx(sim["epoch_seconds"], rel=1e-12)
        assert r["comm_parts"] == pytest.approx(sim["breakdown"]["comm_parts"], rel=1e-12)
        assert r["wait"] == pytest.approx(sim["breakdown"]["wait"], rel=1e-12, abs=1e-15)


def test_scaling_points_equal_simulate_and_mark_refusals(graph_file, capsys):
    argv = ["plot", "scaling", str(graph_file), "--ranks", "4,2,3", "--machine", MACHINE]
    d = _json(capsys, [*argv, "--scheme", "1d", "--scheme", "3d", "--json"])
    assert [p for p, _ in d["points"]["1d"]] == [2, 3, 4]
    for p, t in d["points"]["1d"]:
        assert t == pytest.approx(_simulated(capsys, graph_file, "1d", p)["epoch_seconds"])
    # 3d needs a cube of ranks (or a given grid): 2 and 3 are refused, not dropped silently
    assert [t is None for _, t in d["points"]["3d"]] == [
        _refused(capsys, graph_file, "3d", p) for p in (2, 3, 4)
    ]


def _refused(capsys, graph, scheme, ranks) -> bool:
    argv = ["simulate", str(graph), "-P", str(ranks), "--scheme", scheme, "--machine", MACHINE]
    rc = run([*argv, "--json"])
    capsys.readouterr()
    return rc != 0


def test_figures_are_written_in_the_asked_format(graph_file, tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="the plot extra is not installed")
    png, pdf = tmp_path / "b.png", tmp_path / "s.pdf"
    assert (
        run(["plot", "breakdown", str(graph_file), "-P", "2", "--machine", MACHINE, "-o", str(png)])
        == 0
    )
    argv = ["plot", "scaling", str(graph_file), "--ranks", "1,2", "--machine", MACHINE]
    assert run([*argv, "-o", str(pdf)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    assert f"wrote {png}" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.png", "s.pdf"]  # no temporaries


def test_measured_run_beside_its_prediction(graph_file, tmp_path, capsys):
    out = tmp_path / "run"
    train = ["train", str(graph_file), "--scheme", "1d", "--epochs", "4", "--quiet"]
    assert run([*train, "-o", str(out)]) == 0
    recs = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    secs = sorted(r["seconds"] for r in recs)
    d = _json(capsys, ["plot", "measured", str(out), "--machine", MACHINE, "--json"])
    (row,) = d["runs"]
    assert row["scheme"] == "1d" and row["ranks"] == 1
    assert row["measured_epoch_seconds"] == pytest.approx((secs[1] + secs[2]) / 2)
    sim = _simulated(capsys, graph_file, "1d", 1, ["--epochs", "4"])
    assert row["predicted_epoch_seconds"] == pytest.approx(sim["epoch_seconds"], rel=1e-12)
    want = 100 * (row["predicted_epoch_seconds"] / row["measured_epoch_seconds"] - 1)
    assert row["error_percent"] == pytest.approx(want)


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["breakdown", "-P", "2", "--machine", "nosuch"], "nosuch"),
        (["breakdown", "-P", "2", "--machine", MACHINE, "-o", "x.nope"], "image format"),
        (["scaling", "--ranks", "2,x", "--machine", MACHINE], "--ranks"),
        (["breakdown", "-P", "2", "--machine", MACHINE, "--scheme", "nosuch"], "nosuch"),
        (["measured", ".", "--machine", MACHINE], "train -o"),
    ],
)
def test_bad_requests_one_line_exit_2(argv, needle, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run(["plot", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err
    assert list(tmp_path.iterdir()) == []


def test_missing_matplotlib_is_one_line(graph_file, tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    out = tmp_path / "b.png"
    argv = ["plot", "breakdown", str(graph_file), "-P", "2", "--machine", MACHINE, "-o", str(out)]
    assert run(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'gcntrain[plot]'" in err[0]
    assert not out.exists()
