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
    two = ["--scheme", "1d", "--scheme", "2d"]  # the figure, not every scheme, is tested here
    argv = ["plot", "breakdown", str(graph_file), "-P", "2", "--machine", MACHINE, *two]
    assert run([*argv, "-o", str(png)]) == 0
    argv = ["plot", "scaling", str(graph_file), "--ranks", "1,2", "--machine", MACHINE, *two]
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


# ---------------------------------------------------------------------------------------
# `gcntrain plot RUN_DIR...`: figures of finished `train -o` runs


def _records(run_dir) -> list[dict]:
    return [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines() if x]


def _time(rec: dict) -> float:
    """The epoch time on the critical rank: the sum of its breakdown (rank 0's seconds in a
    run without one)."""
    b = rec.get("epoch_breakdown")
    return sum(v for k, v in b.items() if k != "critical_rank") if b else rec["seconds"]


def _median_steady(recs: list[dict]) -> dict:
    """The test's own reading of the documented rule: epochs 2..N, the epoch with the median
    time, the lower middle one of an even count."""
    steady = sorted(recs[1:], key=_time)
    return steady[(len(steady) - 1) // 2]


def _phases(run_dir) -> dict:
    b = dict(_median_steady(_records(run_dir))["epoch_breakdown"])
    b.pop("critical_rank")
    return b


@pytest.fixture(scope="module")
def runs(graph_file, tmp_path_factory):
    """Real runs of one graph and scheme on 1 and 2 ranks; each run's `train --json` is kept
    in DIR.json beside DIR."""
    from tests.mpi.launch import gcntrain_exe, run_mpi

    base = tmp_path_factory.mktemp("runs")
    argv = ["train", str(graph_file), "--scheme", "1d", "--epochs", "4", "--quiet", "--json"]
    for p in (1, 2):
        res = run_mpi(p, [*gcntrain_exe(), *argv, "-o", str(base / f"np{p}")], timeout=300)
        assert res.returncode == 0, res.stderr[-3000:]
        (base / f"np{p}.json").write_text(json.dumps(res.json()))
    return base / "np1", base / "np2"


def _axes(fig) -> dict:
    return {ax.get_label(): ax for ax in fig.axes}


def test_runs_legend_has_every_phase_in_its_colour(runs, tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="the plot extra is not installed")
    from matplotlib.colors import to_rgba

    from gcntrain.cli.plot_runs import load_run, phase_color, run_figure

    want = {k for r in runs for k, v in _phases(r).items() if v}  # zero: no bar, no entry
    assert {"aggregation", "dense", "other"} <= want
    fig = run_figure([load_run(runs[0]), load_run(runs[1])])
    legend = _axes(fig)["breakdown"].get_legend()
    got = {t.get_text(): h for t, h in zip(legend.get_texts(), legend.legend_handles)}
    assert set(got) == want
    for phase, handle in got.items():
        assert handle.get_facecolor() == to_rgba(phase_color(phase)), phase
    assert len({phase_color(p) for p in got}) == len(got)  # one colour per phase
    # the files really are PNG / PDF, written through the default subcommand
    png, pdf = tmp_path / "r.png", tmp_path / "r.pdf"
    assert run(["plot", str(runs[0]), str(runs[1]), "-o", str(png)]) == 0
    assert run(["plot", "runs", str(runs[0]), "-o", str(pdf)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert pdf.read_bytes()[:5] == b"%PDF-"
    assert f"wrote {png}" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.pdf", "r.png"]


def test_runs_json_numbers_are_the_metrics_files(runs, capsys):
    d = _json(capsys, ["plot", str(runs[0]), str(runs[1]), "--json"])
    assert d == _json(capsys, ["plot", "runs", str(runs[0]), str(runs[1]), "--json"])
    for row, run_dir in zip(d["runs"], runs):
        recs = _records(run_dir)
        med = _median_steady(recs)
        cfg = json.loads((run_dir / "config.json").read_text())
        assert row["ranks"] == cfg["ranks"] and row["scheme"] == cfg["scheme"] == "1d"
        assert row["epochs"] == len(recs) == 4
        assert row["median_epoch"] == med["epoch"]
        assert row["epoch_seconds"] == pytest.approx(_time(med), rel=1e-12)
        assert row["breakdown"] == _phases(run_dir)
        assert row["critical_rank"] == med["epoch_breakdown"]["critical_rank"]
        # the same epoch as `train --json` reports as its median epoch
        trained = json.loads(run_dir.with_suffix(".json").read_text())["epoch_breakdown"]
        assert row["median_epoch"] == trained["epoch"]
        assert row["curves"]["loss"] == [r["loss"] for r in recs]
        assert row["curves"]["val_acc"] == [r["val_acc"] for r in recs]
        assert row["final"]["test_acc"] == recs[-1]["test_acc"]
    (group,) = d["scaling"]
    assert [p[0] for p in group["points"]] == [1, 2]
    assert [p[1] for p in group["points"]] == pytest.approx(
        [_time(_median_steady(_records(r))) for r in runs], rel=1e-12
    )


def test_runs_with_machine_put_the_prediction_beside(runs, capsys):
    d = _json(capsys, ["plot", str(runs[1]), "--machine", MACHINE, "--json"])
    (m,) = _json(capsys, ["plot", "measured", str(runs[1]), "--machine", MACHINE, "--json"])["runs"]
    (row,) = d["runs"]
    assert d["machine"] == MACHINE
    assert row["predicted_epoch_seconds"] == m["predicted_epoch_seconds"]
    measured = _time(_median_steady(_records(runs[1])))
    assert row["error_percent"] == pytest.approx(
        100 * (m["predicted_epoch_seconds"] / measured - 1)
    )


def test_several_runs_give_one_scaling_point_per_run(runs, tmp_path):
    pytest.importorskip("matplotlib", reason="the plot extra is not installed")
    import shutil

    from gcntrain.cli.plot_runs import load_run, run_figure

    again = tmp_path / "np1-again"
    shutil.copytree(runs[0], again)
    dirs = [runs[1], runs[0], again]
    assert "scaling" not in _axes(run_figure([load_run(runs[0]), load_run(again)]))
    ax = _axes(run_figure([load_run(d) for d in dirs]))["scaling"]
    measured = [ln for ln in ax.lines if ln.get_marker() == "o"]
    assert len(measured) == 1
    pts = sorted(zip(measured[0].get_xdata(), measured[0].get_ydata()))
    want = sorted(
        (
            json.loads((d / "config.json").read_text())["ranks"],
            1e3 * _time(_median_steady(_records(d))),
        )
        for d in dirs
    )
    assert [x for x, _ in pts] == [x for x, _ in want]
    assert [y for _, y in pts] == pytest.approx([y for _, y in want], rel=1e-12)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"


def test_old_run_falls_back_to_t_fields_and_says_so(runs, tmp_path, capsys):
    import shutil

    old = tmp_path / "old"
    shutil.copytree(runs[0], old)
    recs = _records(old)
    for r in recs:
        del r["epoch_breakdown"]
    (old / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    (row,) = _json(capsys, ["plot", str(old), "--json"])["runs"]
    med = _median_steady(recs)  # by rank 0's seconds now
    assert row["breakdown_source"] == "t_fields"
    assert row["median_epoch"] == med["epoch"] and row["epoch_seconds"] == med["seconds"]
    assert row["breakdown"] == {
        "aggregation": med["t_aggregation"],
        "dense": med["t_dense"],
        "other": med["t_other"],
    }
    pytest.importorskip("matplotlib", reason="the plot extra is not installed")
    from gcntrain.cli.plot_runs import load_run, run_figure

    legend = _axes(run_figure([load_run(old)]))["breakdown"].get_legend()
    assert "t_aggregation" in legend.get_title().get_text()
    assert {t.get_text() for t in legend.get_texts()} == {"aggregation", "dense", "other"}


def _bad_run(tmp_path, runs, what: str):
    import shutil

    d = tmp_path / "bad"
    if what == "absent":
        return d, "no such run directory"
    shutil.copytree(runs[0], d)
    if what == "no-metrics":
        (d / "metrics.jsonl").unlink()
        return d, "no metrics.jsonl"
    if what == "no-config":
        (d / "config.json").unlink()
        return d, "no config.json"
    if what == "empty":
        (d / "metrics.jsonl").write_text("")
        return d, "no epochs"
    if what == "not-json":
        (d / "metrics.jsonl").write_text('{"epoch": 1\n')
        return d, "line 1 is not JSON"
    recs = _records(d)
    for r in recs:
        for k in ("epoch_breakdown", "t_aggregation", "t_dense", "t_other"):
            r.pop(k)
    (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return d, "no epoch_breakdown"


@pytest.mark.parametrize(
    "what", ["absent", "no-metrics", "no-config", "empty", "not-json", "no-breakdown"]
)
def test_bad_run_dir_is_one_line_exit_2(what, runs, tmp_path, capsys):
    bad, needle = _bad_run(tmp_path, runs, what)
    fig = tmp_path / "fig.png"
    capsys.readouterr()
    assert run(["plot", str(runs[0]), str(bad), "-o", str(fig)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"gcntrain: error: {bad}: "), err
    assert needle in err[0], err
    assert not fig.exists()


# ---------------------------------------------------------------------------------------
# What the figures show: legends beside the axes, plain rank ticks, each configuration
# named, coinciding series kept visible, zero bars out of the legend


def _drawn(fig):
    """`fig` drawn on an Agg canvas (legend and axes extents are known then)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    return fig


def _legend_beside(fig, ax) -> None:
    """The axes' legend lies to the right of its plotting area (covers none of its data)."""
    renderer = fig.canvas.get_renderer()
    legend = ax.get_legend().get_window_extent(renderer)
    assert legend.x0 >= ax.get_window_extent(renderer).x1, ax.get_label()


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def _visible_lines(ax) -> list:
    return [ln for ln in ax.lines if ln.get_visible() and len(ln.get_xdata())]


def _distinguishable(a, b) -> bool:
    """Two lines drawn over each other both show: another marker and another width (the
    first drawn wider, so that the later one lies inside it) or markers on other points."""
    other_marker = a.get_marker() != b.get_marker()
    nested = a.get_linewidth() > b.get_linewidth() and a.get_markersize() > b.get_markersize()
    return other_marker and (nested or a.get_markevery() != b.get_markevery())


def test_coinciding_series_are_found_and_nested():
    from gcntrain.cli.plot_style import coinciding, equal_label, nested

    a = [(1, 1.0), (2, 2.0)]
    series = [a, [(1, 5.0), (2, 6.0)], list(a), [(1, 1.0), (2, 2.0 + 1e-9)], [(1, 1.0)]]
    first, exact = coinciding(series)
    assert first == [None, None, 0, 0, None]
    assert exact == [False, False, True, False, False]
    sizes = nested(first)
    # the group {0, 2, 3}: widest first, each later member inside the one before
    assert sizes[0] > sizes[2] > sizes[3] and sizes[1] == sizes[3] == sizes[4]
    names = ["a", "b", "c", "d", "e"]
    assert equal_label("c", first[2], exact[2], names) == "c (equal to a)"
    assert equal_label("d", first[3], exact[3], names) == "d (overlaps a)"
    assert equal_label("b", first[1], exact[1], names) == "b"


def test_scaling_figure_names_configurations_and_shows_equal_schemes(graph_file, capsys):
    pytest.importorskip("matplotlib", reason="the plot extra is not installed")
    from gcntrain.cli.plot_sim import scaling_figure

    argv = ["plot", "scaling", str(graph_file), "--ranks", "2,4,8", "--machine", MACHINE]
    schemes = ["--scheme", "1d", "--scheme", "1.5d", "--scheme", "2d", "--scheme", "p2p"]
    d = _json(capsys, [*argv, *schemes, "--json"])
    # each configuration as `simulate` plans it: 1.5d's default replication, 2d's grid
    for p, conf in d["configurations"]["2d"]:
        sim = _simulated(capsys, graph_file, "2d", p)
        assert conf == {"options": {"grid": sim["scheme_options"]["grid"]}, "partition": "block"}
    assert [c["options"] for _, c in d["configurations"]["1.5d"]] == [{"replication": 1}] * 3
    # c = 1 is 1d's layout plus one-member Allreduces along each process row, whose buffer
    # copies are priced (`collectives.local_copy`): the lines coincide to within those copies
    for (p15, t15), (p1, t1) in zip(d["points"]["1.5d"], d["points"]["1d"], strict=True):
        assert p15 == p1 and t1 <= t15 <= 1.02 * t1

    fig = _drawn(scaling_figure(d))
    (ax,) = fig.axes
    _legend_beside(fig, ax)
    grids = "/".join(c["options"]["grid"] for _, c in d["configurations"]["2d"])
    # 1.5d's points are not exactly 1d's (the copies above): never "equal to"; "overlaps"
    # where closer than a line is wide (the committed docs figure has the exact case)
    one_five = "1.5d: replication 1, block partition"
    assert _texts(ax) in (
        ["1d: block partition", label, f"2d: grid {grids}, block partition", "p2p: block partition"]
        for label in (one_five, f"{one_five} (overlaps 1d)")
    )
    assert [t.get_text() for t in ax.get_xticklabels()] == ["2", "4", "8"]
    assert ax.get_xscale() == "log" and not ax.xaxis.get_minorticklocs().size
    ylabels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert ylabels and all(float(t) > 0 for t in ylabels)  # plain numbers, not 10^k
    lines = _visible_lines(ax)
    assert len(lines) == 4
    one, one5 = lines[0], lines[1]
    assert all(a <= b <= 1.02 * a for a, b in zip(one.get_ydata(), one5.get_ydata(), strict=True))
    if _texts(ax)[1].endswith("(overlaps 1d)"):  # drawn nested: both stay visible
        assert _distinguishable(one, one5)
    assert len({ln.get_marker() for ln in lines}) == 4


def test_breakdown_figure_legend_beside_and_no_empty_parts(graph_file, capsys):
    pytest.importorskip("matplotlib", reason="the plot extra is not installed")
    from gcntrain.cli.plot_sim import breakdown_figure

    argv = ["plot", "breakdown", str(graph_file), "-P", "4", "--machine", MACHINE, "--json"]
    d = _json(capsys, [*argv, "--scheme", "1d", "--scheme", "2d"])
    d["schemes"][0]["comm_parts"]["p2p"] = 0.0  # a part with no time
    fig = _drawn(breakdown_figure(d))
    (ax,) = fig.axes
    _legend_beside(fig, ax)
    nonzero = {
        k
        for r in d["schemes"]
        for k, v in (*r["compute_parts"].items(), *r["comm_parts"].items(), ("wait", r["wait"]))
        if v
    }
    assert set(_texts(ax)) == nonzero and "p2p" not in nonzero
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    grid = d["schemes"][1]["options"]["grid"]
    assert ticks == ["1d\nblock partition", f"2d\ngrid {grid}\nblock partition"]


def test_measured_figure_is_written(graph_file, tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="the plot extra is not installed")
    from gcntrain.cli.plot_sim import measured_figure

    out = tmp_path / "run"
    train = ["train", str(graph_file), "--scheme", "1d", "--epochs", "3", "--quiet"]
    assert run([*train, "-o", str(out)]) == 0
    png = tmp_path / "m.png"
    d = _json(capsys, ["plot", "measured", str(out), "--machine", MACHINE, "--json"])
    assert run(["plot", "measured", str(out), "--machine", MACHINE, "-o", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    fig = _drawn(measured_figure(d))
    (ax,) = fig.axes
    _legend_beside(fig, ax)
    assert _texts(ax) == ["measured", f"predicted ({MACHINE})"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["run\n1d\nblock partition, np 1"]


def test_runs_figure_names_runs_and_keeps_equal_runs_visible(runs, tmp_path):
    pytest.importorskip("matplotlib", reason="the plot extra is not installed")
    import shutil

    from gcntrain.cli.plot_runs import load_run, run_figure

    again = tmp_path / "again"  # the same run twice: equal curves
    shutil.copytree(runs[0], again)
    recs = _records(again)
    for r in recs:
        r["epoch_breakdown"]["p2p"] = 0.0  # a phase with no time: no bar, no legend entry
    (again / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    fig = _drawn(run_figure([load_run(runs[0]), load_run(again), load_run(runs[1])]))
    axes = _axes(fig)
    for ax in axes.values():
        _legend_beside(fig, ax)
    assert "p2p" not in _texts(axes["breakdown"])
    names = ["np1: 1d, np 1", "again: 1d, np 1 (equal to np1)", "np2: 1d, np 2"]
    loss_names = _texts(axes["loss"])
    assert loss_names[:2] == names[:2] and loss_names[2].startswith("np2: 1d, np 2")
    assert _texts(axes["accuracy"])[:2] == names[:2]
    assert _texts(axes["accuracy"])[3:] == [
        "train (line style)",
        "validation (line style)",
        "test (line style)",
        "best epoch (lowest val loss)",
    ]
    loss = _visible_lines(axes["loss"])
    assert len(loss) == 3
    assert list(loss[0].get_ydata()) == list(loss[1].get_ydata())
    assert _distinguishable(loss[0], loss[1])
    acc = [ln for ln in _visible_lines(axes["accuracy"]) if len(set(ln.get_xdata())) > 1]
    assert len(acc) == 9
    best = [ln for ln in _visible_lines(axes["accuracy"]) if len(set(ln.get_xdata())) == 1]
    assert len(best) == 3 and {ln.get_linestyle() for ln in best} == {"-."}  # best epochs
    assert {ln.get_linestyle() for ln in acc} == {"-", "--", ":"}
    assert all(_distinguishable(a, b) for a, b in zip(acc[0:3], acc[3:6]))


# ---------------------------------------------------------------------------------------
# docs/figures: one example of each kind, drawn from the inputs committed beside it


def _docs_figures():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "docs_figures.py"
    spec = importlib.util.spec_from_file_location("docs_figures", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _png_info(path) -> tuple[tuple[int, int], str | None]:
    from PIL import Image

    with Image.open(path) as im:
        return im.size, im.text.get("Source")


def test_docs_examples_are_drawn_from_their_inputs(tmp_path):
    pytest.importorskip("matplotlib", reason="the plot extra is not installed")
    docs = _docs_figures()
    figs = docs.render(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{k}.png" for k in docs.KINDS)
    for kind in docs.KINDS:
        committed = docs.FIGURES / f"{kind}.png"
        size, source = _png_info(committed)
        # the committed figure was drawn from the committed inputs, as it is drawn again
        assert source == f"sha256:{docs.digest(kind)}", f"{committed} is stale: rerun render"
        assert _png_info(tmp_path / f"{kind}.png") == (size, source)
        fig = _drawn(figs[kind])
        for ax in fig.axes:
            _legend_beside(fig, ax)
    scaling = json.loads((docs.FIGURES / "scaling.json").read_text())
    (ax,) = figs["scaling"].axes
    assert len(_texts(ax)) == len(_visible_lines(ax)) == len(scaling["points"])
    assert "1.5d: replication 1, block partition (equal to 1d)" in _texts(ax)
    ranks = sorted({p for pts in scaling["points"].values() for p, _ in pts})
    assert [t.get_text() for t in ax.get_xticklabels()] == [str(p) for p in ranks]
    axes = _axes(figs["runs"])
    assert [t.split(":")[0] for t in _texts(axes["loss"])] == [d for d, _, _ in docs.RUNS]
    assert "p2p" not in _texts(axes["breakdown"])  # p2p-np2's p2p phase is 0.0
    assert {"breakdown", "loss", "accuracy", "scaling"} == set(axes)


def test_series_closer_than_a_line_are_labelled_as_overlapping():
    """1.5d 0.3 % above 1d on one decade of a log axis is drawn under 1d's line: it is
    labelled "(overlaps 1d)" (issue 51, item 16); 3 % apart stays its own line."""
    from gcntrain.cli.plot_style import coinciding, equal_label

    one = [(4, 1.0), (16, 0.3), (64, 0.1)]
    near = [(x, y * 1.003) for x, y in one]
    far = [(x, y * 1.03) for x, y in one]
    first, exact = coinciding([one, near, far], log=True)
    assert first == [None, 0, None] and exact == [False, False, False]
    assert equal_label("1.5d", first[1], exact[1], ["1d", "1.5d", "p2p"]) == "1.5d (overlaps 1d)"
