"""`gcntrain simulate`: the plan equals what `mpiexec ... gcntrain train` measures, key by key
and on every rank and phase (the training commands of one rank count run in one mpiexec
launch, tests/mpi/batch.py); the dense words follow CAGNET's leading terms at P = 4096."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gcntrain.cli.main import run
from gcntrain.comm.grid import factorizations
from gcntrain.data.generate import rmat
from gcntrain.data.store import write_graph
from gcntrain.model.phase import Phase
from gcntrain.model.trainer import TrainConfig
from gcntrain.model.wrappers import Call
from gcntrain.schemes import registry
from gcntrain.simulate.autogrid import rank_grids
from gcntrain.simulate.run import plan_training
from gcntrain.simulate.summary import TRAFFIC_KEYS
from gcntrain.simulate.table import read_table
from gcntrain.simulate.target import PlanTarget
from tests.mpi.batch import CliBatches

ARGS = ["--epochs", "3", "--early-stopping", "0", "--seed", "2", "--dtype", "float64"]


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    g = rmat(8, edge_factor=6, seed=8, num_features=12, num_classes=3)
    path = tmp_path_factory.mktemp("sim") / "g.h5"
    write_graph(path, g)
    return path


CASES = [
    (1, "serial", []),
    (2, "1d", []),
    (3, "1d", []),
    (4, "1d", []),
    (2, "1.5d", ["--replication", "2"]),
    (3, "1.5d", ["--replication", "3"]),
    (4, "1.5d", ["--replication", "2"]),
    (2, "p2p", ["--partition", "random"]),
    (3, "p2p", ["--partition", "random"]),
    (4, "p2p", ["--partition", "random"]),
    (2, "2d", ["--grid", "1x2"]),
    (3, "2d", ["--grid", "3x1"]),
    (4, "2d", ["--grid", "2x2"]),
    (2, "3d", ["--grid", "1x1x2"]),
    (3, "3d", ["--grid", "1x3x1"]),
    (4, "3d", ["--grid", "1x2x2"]),
    (2, "plexus", ["--grid", "1x2x1"]),
    (3, "plexus", ["--grid", "3x1x1", "--permute", "double"]),
    (4, "plexus", ["--grid", "2x1x2", "--block-rows", "100"]),
    (4, "plexus", ["--grid", "1x2x2", "--load-grid", "2x2"]),
    (2, "vertexcut", []),
    (3, "vertexcut", ["--delay", "2"]),
    (4, "vertexcut", ["--delay", "none", "--model", "sage"]),
    (4, "vertexcut", ["--partition-seed", "3"]),
    (2, "hier", ["--partition", "random"]),
    (3, "hier", ["--partition", "metis", "--aggr", "pre", "--quant-bits", "2"]),
    (2, "hier", ["--partition", "hypergraph", "--quant-bits", "8", "--quant-group", "0"]),
    (4, "hier", ["--partition", "random", "--aggr", "post", "--model", "sage"]),
    (4, "hier", ["--partition", "random", "--quant-bits", "4", "--quant-group", "5"]),
    (3, "p2p", ["--partition", "metis", "--reorder", "rcm"]),
    (2, "1.5d", ["--replication", "2", "--reorder", "degree"]),
    (1, "serial", ["--reorder", "rcm"]),
]


def _train_argv(graph_file, measured, scheme, extra) -> list[str]:
    return ["train", str(graph_file), "--scheme", scheme, *extra, *ARGS, "--json"] + [
        "--per-rank",
        str(measured),
    ]


@pytest.fixture(scope="module")
def trained(graph_file, tmp_path_factory):
    """The distributed runs of CASES, one mpiexec launch per rank count
    (tests/mpi/batch.py); each writes its measured table to its own file."""
    out = tmp_path_factory.mktemp("measured")
    batches = CliBatches()
    for i, (nprocs, scheme, extra) in enumerate(CASES):
        if nprocs > 1:
            argv = _train_argv(graph_file, out / f"case{i}.csv", scheme, extra)
            batches.add(str(i), nprocs, argv)
    return batches, out


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs,scheme,extra", CASES)
def test_simulate_equals_measured_counters(graph_file, trained, capsys, nprocs, scheme, extra):
    """Every rank and phase of the measured table equals the plan; so do the --json keys."""
    batches, out = trained
    i = CASES.index((nprocs, scheme, extra))
    measured, planned = out / f"case{i}.csv", out / f"case{i}-planned.csv"
    if nprocs == 1:  # serial: no MPI job
        assert run(_train_argv(graph_file, measured, scheme, extra)) == 0
        train = json.loads(capsys.readouterr().out)
    else:
        train = batches.result(str(i)).json()
    argv = ["simulate", str(graph_file), "--ranks", str(nprocs), "--scheme", scheme, *extra]
    assert run([*argv, *ARGS, "--json", "--per-rank", str(planned)]) == 0
    sim = json.loads(capsys.readouterr().out)
    m, p = read_table(measured), read_table(planned)
    assert m == p
    if nprocs > 1:
        assert len({r for r, _ in m}) == nprocs and any(v[0] > 0 for v in m.values())
    assert train["ranks"] == nprocs and train["scheme"] == scheme
    for key in TRAFFIC_KEYS:
        assert sim[key] == pytest.approx(train[key], rel=0, abs=1e-9), key


def test_simulate_json_keys_and_human_output(capsys):
    assert run(["simulate", "--ranks", "6", "--scheme", "1d", "--epochs", "4", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    for key in (
        *TRAFFIC_KEYS,
        "spmm_nnz_max",
        "dense_flops_max",
        "memory_bytes_max",
        "simulate_seconds",
        "peak_rss_bytes",
        "phases_per_epoch",
    ):
        assert key in d, key
    assert d["ranks"] == 6 and d["scheme"] == "1d" and d["epochs"] == 4
    assert d["bytes_sent_max"] >= d["bytes_sent_mean"] > 0
    assert "L0.fwd.agg" in d["phases_per_epoch"] and "eval.L0.fwd.agg" in d["phases_per_epoch"]
    assert run(["simulate", "--ranks", "4", "--scheme", "2d"]) == 0
    out = capsys.readouterr().out
    assert "2d on 4 ranks (grid 2x2)" in out and "traffic / epoch" in out


def test_simulate_bad_input_is_one_line_exit_2(tmp_path, capsys):
    g = rmat(6, edge_factor=4, seed=1, num_features=4, num_classes=2)
    g.features = None
    g.labels = None
    g.train_mask = g.val_mask = g.test_mask = None
    path = tmp_path / "bare.h5"
    write_graph(path, g)
    assert run(["simulate", str(path), "--ranks", "4"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--features" in err[0]
    assert run(["simulate", str(path), "--ranks", "4", "--features", "8", "--classes", "3"]) == 0
    capsys.readouterr()
    for argv in (
        ["--scheme", "2d", "--grid", "3x3"],
        ["--scheme", "1.5d", "--replication", "3"],
        ["--scheme", "1d", "--grid", "2x2"],
    ):
        assert run(["simulate", "--ranks", "4", *argv]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("gcntrain: error:"), argv


def _aggregate(width: int, itemsize: int = 8) -> Call:
    return Call("aggregate", Phase("aggregate", 0, "fwd"), (("array", (1, width), itemsize),), ())


def _matmul(f_in: int, f_out: int, itemsize: int = 8) -> Call:
    args = (("array", (1, f_in), itemsize), ("array", (f_in, f_out), itemsize))
    return Call("matmul", Phase("matmul", 0, "fwd"), args, ())


@pytest.fixture(scope="module")
def big_graph():
    return rmat(14, edge_factor=4, seed=5, num_features=8, num_classes=4)


def test_dense_words_follow_cagnet_leading_terms_at_4096(big_graph):
    """Per aggregation at width f, P = 4096: 1D receives n f words per rank (CAGNET IV-A),
    2D on 64 x 64 receives n f / sqrt(P) dense words (IV-C), and a 2D forward layer
    (aggregation + partial SUMMA) 2 n f / sqrt(P); within 5 %."""
    n, f, P = big_graph.n, 128, 4096
    cfg = TrainConfig(epochs=1, dtype="float64")
    one = plan_training(PlanTarget(big_graph, cfg, "1d", P))
    words = one.scheme.steps(one.ctx, _aggregate(f))[0].volumes()[:, 1] / 8
    assert np.all(np.abs(words / (n * f) - 1) < 0.05), (words.min(), words.max(), n * f)
    two = plan_training(PlanTarget(big_graph, cfg, "2d", P, {"grid": "64x64"}))
    lay = two.ctx.layout
    sparse, dense = two.scheme.steps(two.ctx, _aggregate(f))
    assert np.array_equal(dense.groups.gid, lay.cols.gid) and sparse.groups is lay.rows
    d_words = dense.volumes()[:, 1] / 8
    target = n * f / np.sqrt(P)
    assert np.all(np.abs(d_words / target - 1) < 0.05), (d_words.min(), d_words.max(), target)
    mm = sum(s.volumes()[:, 1] for s in two.scheme.steps(two.ctx, _matmul(f, 2 * f))) / 8
    layer = d_words + mm
    assert np.all(np.abs(layer / (2 * target) - 1) < 0.05), (layer.min(), layer.max())
    # the sparse pieces are the other term: nnz(S) / Pr entries per rank on average
    nnz = two.ctx.support.nnz
    s_entries = sparse.volumes()[:, 1].sum() / (8 + 8) / P
    assert abs(s_entries / (nnz / 64) - 1) < 0.05


def test_split_3d_words_follow_cagnet_leading_terms(big_graph, capsys):
    """CAGNET IV-D, one Split-3D-SpMM at width f on an X x Y x Z cube: beta (nnz(A) / P^(2/3)
    + 2 n f / P^(2/3)); each term carries the (p - 1) / p of a broadcast or Reduce-scatter
    among p = P^(1/3) ranks that the asymptotic form drops.  Per rank within 5 % at
    P = 4096 (16 x 16 x 16), and the P^(2/3) scaling from P = 512 (8 x 8 x 8)."""
    n, f = big_graph.n, 128
    cfg = TrainConfig(epochs=1, dtype="float64")
    rows = []
    per_p = {}
    for P, q in ((512, 8), (4096, 16)):
        sim = plan_training(PlanTarget(big_graph, cfg, "3d", P, {"grid": f"{q}x{q}x{q}"}))
        sparse, dense, fiber = sim.scheme.steps(sim.ctx, _aggregate(f))
        lay = sim.ctx.layout
        assert sparse.groups is lay.rows and dense.groups is lay.layer_cols
        assert fiber.groups is lay.fibers
        words = (dense.volumes()[:, 1] + fiber.volumes()[:, 1]) / 8
        lead = 2 * n * f / P ** (2 / 3)
        target = lead * (1 - 1 / q)
        assert np.all(np.abs(words / target - 1) < 0.05), (P, words.min(), words.max(), target)
        entries = sparse.volumes()[:, 1].sum() / (8 + 8) / P
        s_target = sim.ctx.support.nnz / P ** (2 / 3) * (1 - 1 / q)
        assert abs(entries / s_target - 1) < 0.05, (P, entries, s_target)
        per_p[P] = words.mean() / (1 - 1 / q)
        rows.append((P, f"{q}x{q}x{q}", words.max(), words.mean(), lead, target, entries))
    assert abs(per_p[512] / per_p[4096] / 8 ** (2 / 3) - 1) < 0.05
    with capsys.disabled():
        print("\n   P  grid      dense max  dense mean  2nf/P^(2/3)  x(1-1/q)  S entries mean")
        for P, g, mx, mean, lead, target, ent in rows:
            print(f"{P:5d}  {g:<8s} {mx:10.0f} {mean:11.1f} {lead:12.0f} {target:9.0f} {ent:15.1f}")


@pytest.mark.parametrize("scheme,P", [("2d", 64), ("3d", 64), ("2d", 512), ("plexus", 64)])
def test_grid_auto_chooses_the_least_planned_volume(big_graph, scheme, P):
    """Every ordered factorisation is planned on its own; the search's choice has the least
    max-per-rank volume (bytes sent + received in a steady epoch) of them all."""
    cfg = TrainConfig(epochs=2, dtype="float32")
    ranked = rank_grids(PlanTarget(big_graph, cfg, scheme, P))
    ndim = 2 if scheme == "2d" else 3  # 3d and plexus
    every = ["x".join(map(str, f)) for f in factorizations(P, ndim)]
    assert sorted(r["grid"] for r in ranked) == sorted(every)
    volume = {}
    for grid in every:
        sim = plan_training(PlanTarget(big_graph, cfg, scheme, P, {"grid": grid}))
        med = np.median(sim.table.epoch_totals(), axis=0)
        volume[grid] = (med[:, 0] + med[:, 1]).max()
    assert volume[ranked[0]["grid"]] == min(volume.values())
    assert [r["volume_max"] for r in ranked] == sorted(volume.values())


def test_grid_auto_on_the_command_line(graph_file, capsys):
    """simulate prints the ranking and plans the chosen grid; --json lists the search."""
    assert (
        run(["simulate", str(graph_file), "--ranks", "4", "--scheme", "3d", "--grid", "auto"]) == 0
    )
    out = capsys.readouterr().out
    assert "grid search (least volume first; volume: bytes sent + received" in out
    assert "runner-up" in out
    argv = [
        "simulate",
        str(graph_file),
        "--ranks",
        "4",
        "--scheme",
        "3d",
        "--grid",
        "auto",
        "--json",
    ]
    assert run(argv) == 0
    d = json.loads(capsys.readouterr().out)
    assert len(d["grid_search"]) == len(factorizations(4, 3))
    assert d["scheme_options"]["grid"] == d["grid_search"][0]["grid"]
    assert (
        run(["simulate", str(graph_file), "--ranks", "4", "--scheme", "1d", "--grid", "auto"]) == 2
    )


def test_every_registered_scheme_plans_at_512_ranks(big_graph):
    """The vectorised plans run for every scheme at a size no test can launch."""
    cfg = TrainConfig(epochs=2, dtype="float32")
    opts = {
        "1.5d": {"replication": 4},
        "2d": {"grid": "16x32"},
        "3d": {"grid": "8x4x16"},
        "plexus": {"grid": "8x8x8"},
    }
    for name, scheme in registry.SCHEMES.items():
        if not scheme.uses_mpi:
            continue
        sim = plan_training(PlanTarget(big_graph, cfg, name, 512, opts.get(name), None))
        tot = sim.table.epoch_totals()
        assert tot.shape == (2, 512, 4) and tot[:, :, 0].sum() == tot[:, :, 1].sum() > 0
        assert tot[:, :, 2].sum() == tot[:, :, 3].sum()


def plexus_section4_words(n: int, widths: list[int], dims: tuple[int, int, int]) -> list[float]:
    """Plexus' section 4 communication model, words sent per rank per layer in one training
    step (forward and backward) of a GCN with aggregation first: ring all-reduce of M words
    over G ranks 2 (G - 1) / G M, all-gather / reduce-scatter (G - 1) / G M.  Layer l runs on
    the axes (a, b, c) = (X, Y, Z) rotated l times by (a, b, c) -> (c, a, b) (section 3.2)."""
    out = []
    a, b, c = dims
    for layer, (d_in, d_out) in enumerate(zip(widths[:-1], widths[1:])):

        def ar(g, m):
            return 2 * (g - 1) / g * m

        def ag(g, m):
            return (g - 1) / g * m

        h = n / c * d_in / b  # aggregation output, all-reduced over a
        q = n / c * d_out / a  # product output, all-reduced over b
        w = d_in * d_out / (a * b)  # W block, all-gathered over c (twice) and dW reduce-scattered
        words = ar(a, h) + ar(b, q) + 2 * ag(c, w)  # W gathered for the product, dW scattered
        if layer > 0:  # dH: W gathered again, dH of the product (over a), of S^T (over c)
            words += ag(c, w) + ar(a, h) + ar(c, n / a * d_in / b)
        out.append(words)
        a, b, c = c, a, b
    return out


def test_plexus_layer_volume_follows_its_section_4_model_at_4096(capsys):
    """Per layer, the planned words sent per rank in a Plexus training step at P = 4096 equal
    the paper's model for that grid within 5 %: the mean on a cube and two skewed grids, every
    rank on the cube (on the skewed ones a width split 32 ways leaves ranks with 0 or 1
    column, which the model averages; the table prints)."""
    g = rmat(14, edge_factor=4, seed=5, num_features=128, num_classes=16)
    widths = [128, 64, 32, 16]
    cfg = TrainConfig(epochs=1, dtype="float32", hidden=widths[1:-1], order="agg_first")
    rows = []
    for grid in ("16x16x16", "8x32x16", "64x8x8"):
        dims = tuple(int(d) for d in grid.split("x"))
        sim = plan_training(PlanTarget(g, cfg, "plexus", 4096, {"grid": grid}))
        phases = sim.table.epoch_phases(0)
        model = plexus_section4_words(g.n, widths, dims)
        for layer, want in enumerate(model):
            sent = sum(v[:, 0] for k, v in phases.items() if k.startswith(f"L{layer}."))
            words = sent / 4
            rows.append((grid, layer, words.max(), words.mean(), want))
            assert abs(words.mean() / want - 1) < 0.05, (grid, layer, words.mean(), want)
            if grid == "16x16x16":  # every width divides evenly: every rank is the model
                assert abs(words.max() / want - 1) < 0.05, (grid, layer, words.max(), want)
    with capsys.disabled():
        print("\n  grid      layer   planned max  planned mean  section-4 model")
        for grid, layer, mx, mean, want in rows:
            print(f"  {grid:<9s} {layer:5d} {mx:13.0f} {mean:13.1f} {want:16.1f}")
