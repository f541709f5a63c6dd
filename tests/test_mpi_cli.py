"""`mpiexec -n P gcntrain train ...` end to end: same result as serial, every input path,
collective errors, fault injection.

The commands of one rank count run in one mpiexec launch, each through the function the
console script calls (tests/mpi/batch.py: `CliBatches`, every rank's exit status and output
captured); real `mpiexec gcntrain` launches check what only separate processes show: the
processes' exit statuses and stderr (a missing file, a file refused by rank 0 alone, the
README's default job), an aborted job (a fault), a missing MPI library.  Every launch has a
wall-clock limit."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess

import h5py
import numpy as np
import pytest

from gcntrain.cli.main import run
from gcntrain.data.generate import rmat
from gcntrain.data.store import write_graph
from tests.mpi.batch import CliBatches
from tests.mpi.launch import gcntrain_exe, run_mpi
from tests.tamper import CASES as TAMPER_CASES
from tests.tamper import ISSUE35, UNHASHED, bad_graph_files, changed_copy, damaged_metadata

pytestmark = pytest.mark.mpi

ARGS = ["--json", "--epochs", "6", "--seed", "4", "--dtype", "float64", "--quiet"]


def train_json(nprocs: int, argv: list[str], env: dict | None = None) -> dict:
    """A real `mpiexec -n nprocs gcntrain train argv...` launch; its one JSON line."""
    res = run_mpi(nprocs, [*gcntrain_exe(), "train", *argv], timeout=300, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.json()


def quiet_run(argv: list[str]) -> tuple[int, str]:
    """`gcntrain argv...` in this process: exit status and stdout."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = run([str(a) for a in argv])
    return rc, out.getvalue()


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    g = rmat(9, edge_factor=8, seed=5, num_features=16, num_classes=4)
    path = tmp_path_factory.mktemp("g") / "rmat.h5"
    write_graph(path, g)
    return path


@pytest.fixture(scope="module")
def serial_summary(graph_file):
    rc, out = quiet_run(["train", graph_file, *ARGS])
    assert rc == 0
    return json.loads(out)


def close(a: float, b: float, tol: float = 1e-9) -> bool:
    return abs(a - b) <= tol * max(abs(b), 1e-30)


EQUIV_CASES = [
    (2, "1d", []),
    (3, "1d", []),
    (4, "1.5d", ["--replication", "2"]),
    (3, "1.5d", []),
    (2, "p2p", ["--partition", "random"]),
    (4, "p2p", []),
    (3, "p2p", ["--permute", "random"]),
    (4, "2d", ["--grid", "2x2"]),
    (3, "2d", []),
    (2, "2d", ["--grid", "2x1", "--partition", "random"]),
    (4, "3d", ["--grid", "2x1x2"]),
    (3, "3d", ["--partition", "random"]),
    (4, "plexus", ["--grid", "1x2x2", "--permute", "double"]),
    (3, "plexus", ["--block-rows", "500"]),
    (2, "vertexcut", []),
    (3, "vertexcut", ["--partition-seed", "7"]),
    (4, "p2p", ["--partition", "metis", "--reorder", "rcm"]),
    (3, "2d", ["--reorder", "degree"]),
]

OUTPUT_CASES = [
    (4, "1.5d", ["--replication", "2"]),
    (3, "p2p", ["--partition", "random"]),
    (3, "vertexcut", ["--delay", "0"]),
]

HELD_CASES = [
    (4, "2d", ["--grid", "2x2"], ["--grid", "2x2"]),
    (4, "3d", ["--grid", "1x2x2"], ["--grid", "1x2"]),
    (4, "3d", ["--grid", "2x1x2", "--model", "sage"], None),
    (4, "plexus", ["--grid", "2x1x2", "--permute", "double"], None),
    (3, "plexus", ["--grid", "1x3x1", "--model", "sage"], ["--parts", "3"]),
    (4, "plexus", ["--grid", "2x1x2", "--load-grid", "2x2"], ["--grid", "2x2"]),
]

GRID_ERRORS = [
    ("3x2", "process grid 3x2 needs 6 ranks, but the job has 4"),
    ("0x4", "dimensions must be >= 1"),
    ("4", "--grid must look like RxC"),
    ("3d:2x2", "--grid must look like XxYxZ (e.g. 2x2x2) for the 3d scheme"),
    ("3d:2x0x2", "dimensions must be >= 1"),
    ("3d:2x2x2", "process grid 2x2x2 needs 8 ranks, but the job has 4"),
    ("plexus:4x1", "--grid must look like XxYxZ (e.g. 2x2x2) for the plexus scheme"),
    ("plexus:1x0x4", "dimensions must be >= 1"),
    ("plexus:3x1x1", "process grid 3x1x1 needs 3 ranks, but the job has 4"),
]

HIER_ERRORS = [
    (["--scheme", "hier", "--quant-bits", "3"], "--quant-bits must be 2, 4, 8 or 32"),
    (["--scheme", "hier", "--label-prop", "1.0"], "--label-prop must be in [0, 1)"),
    (["--scheme", "hier", "--label-prop", "-0.1"], "--label-prop must be in [0, 1)"),
    (["--scheme", "p2p", "--aggr", "pre"], "--aggr does not apply to --scheme p2p"),
    (["--scheme", "hier", "--quant-group", "4"], "--quant-group needs --quant-bits"),
    (["--scheme", "2d", "--norm", "layer"], "--norm layer needs whole feature rows"),
]

NEGATIVE = [
    ["--seed", "-1"],
    ["--scheme", "1.5d", "--replication", "0"],
    ["--partition", "random", "--partition-seed", "-2"],
]

TAMPERED = [("hash", "content hash mismatch"), ("indices", "indices")]


@pytest.fixture(scope="module")
def files(graph_file, tmp_path_factory):
    """Every input the commands read: stores, partition files, other and broken graphs."""
    from gcntrain.data.partition_file import read_partition, write_partition

    d = tmp_path_factory.mktemp("inputs")
    g = str(graph_file)
    f = {name: d / name for name in ("random3", "cut3", "store4", "store2x2", "store1x2")}
    f.update({"block3": d / "block3", "cut2": d / "cut2", "other-cut": d / "other-cut.h5"})
    f.update({"metis3": d / "metis3.h5", "libra4": d / "libra4.h5", "other": d / "other.h5"})
    commands = [
        ["shard", g, "-o", f["random3"], "--parts", "3", "--partition", "random"],
        ["shard", g, "-o", f["block3"], "--parts", "3"],
        ["shard", g, "-o", f["store4"], "--parts", "4"],
        ["shard", g, "-o", f["store2x2"], "--grid", "2x2"],
        ["shard", g, "-o", f["store1x2"], "--grid", "1x2"],
        ["shard", g, "-o", f["cut3"], "-m", "libra", "--parts", "3"],
        ["partition", g, "--method", "metis", "--parts", "3", "--out", f["metis3"]],
        ["partition", g, "-m", "libra", "--parts", "4", "-o", f["libra4"]],
    ]
    for argv in commands:
        assert quiet_run(argv)[0] == 0, argv
    # parts 1 and 2 of a 4-part cut root no vertex (empty root ranges)
    res = read_partition(f["libra4"])
    res.root = np.where(np.arange(res.root.size) % 2 == 0, 0, 3).astype(np.int64)
    write_partition(d / "lopsided.h5", res)
    cut2 = ["shard", g, "-o", f["cut2"], "-m", "libra", "--partition", d / "lopsided.h5"]
    assert quiet_run(cut2)[0] == 0
    write_graph(f["other"], rmat(7, edge_factor=4, seed=6, num_features=16, num_classes=4))
    other_cut = ["partition", f["other"], "-m", "libra", "--parts", "3", "-o", f["other-cut"]]
    assert quiet_run(other_cut)[0] == 0
    f["c1"] = d / "c1.h5"
    assert quiet_run(["generate", "rmat", "-o", f["c1"], "--scale", "5", "--classes", "1"])[0] == 0
    f.update(bad_graph_files(graph_file, d))  # issue 35: damaged, widthless, huge
    f["damaged-part"] = damaged_metadata(f["metis3"], d, "damaged-part.h5")
    f["nan-toml"] = d / "nan.toml"
    f["nan-toml"].write_text("[train]\nlr = nan\n")
    for how, _ in TAMPERED:
        f[how] = changed_copy(graph_file, d, f"{how}.h5", UNHASHED[how])
    f["out"] = tmp_path_factory.mktemp("outputs")  # -o directories are made below it
    return f


def _held_source(graph_file, files, shard) -> str:
    if shard is None:
        return str(graph_file)
    return str({"2x2": files["store2x2"], "1x2": files["store1x2"], "3": files["block3"]}[shard[1]])


@pytest.fixture(scope="module")
def cli(graph_file, files):
    """Every `train` command of this module run in the batches, one launch per rank count."""
    g, f, b = str(graph_file), files, CliBatches()
    for i, (nprocs, scheme, extra) in enumerate(EQUIV_CASES):
        b.add(f"equiv{i}", nprocs, ["train", g, "--scheme", scheme, *extra, *ARGS])
    loud = [a for a in ARGS if a != "--quiet"]
    b.add("auto", 3, ["train", g, "--machine", "abci", *loud])
    b.add("auto-again", 3, ["train", g, "--machine", "abci", *ARGS])
    b.add("store-p2p", 3, ["train", f["random3"], "--scheme", "p2p", *ARGS])
    b.add("metis-p2p", 3, ["train", g, "--scheme", "p2p", "--partition", f["metis3"], *ARGS])
    per_rank = ["--per-rank", f["out"] / "cut3-measured.csv"]
    b.add("cut3", 3, ["train", f["cut3"], "--scheme", "vertexcut", *ARGS, *per_rank])
    b.add("libra4", 4, ["train", g, "--scheme", "vertexcut", "--partition", f["libra4"], *ARGS])
    b.add("cut2", 4, ["train", f["cut2"], "--scheme", "vertexcut", *ARGS])
    for name, nprocs, argv in (
        ("cut-differ", 3, [g, "--scheme", "vertexcut", "--partition", f["other-cut"]]),
        ("cut-ranks", 2, [f["cut3"], "--scheme", "vertexcut"]),
        ("cut-p2p", 3, [f["cut3"], "--scheme", "p2p"]),
        ("cut-parts", 3, [g, "--scheme", "vertexcut", "--partition", f["libra4"]]),
        ("store4-at-3", 3, [f["store4"], "--scheme", "1d"]),
    ):
        b.add(name, nprocs, ["train", *argv, "--quiet"])
    b.add("replication", 3, ["train", g, "--scheme", "1.5d", "--replication", "2"])
    for i, (nprocs, scheme, extra) in enumerate(OUTPUT_CASES):
        out = ["-o", f["out"] / f"run{i}"]
        b.add(f"outputs{i}", nprocs, ["train", g, "--scheme", scheme, *extra, *ARGS, *out])
    b.add("human", 3, ["train", g, "--scheme", "1d", "--epochs", "3", "--quiet"])
    for i, extra in enumerate(NEGATIVE):
        b.add(f"negative{i}", 2, ["train", g, "--scheme", "1d", *extra])
    b.add("one-class", 2, ["train", f["c1"], "--scheme", "1d"])
    # checked before anything loads, on every path: an unknown profile, an input as output
    b.add("no-profile", 3, ["train", g, "--scheme", "1d", "--machine", "nosuch", "--quiet"])
    b.add("no-profile-auto", 3, ["train", g, "--machine", "nosuch", "--quiet"])
    b.add("per-rank-input", 3, ["train", g, "--scheme", "1d", "--per-rank", g, "--quiet"])
    # --scheme auto plans a whole model per process: one too large for it is one line
    huge = ["--hidden", "10000000", "--max-memory", "1G", "--quiet"]
    b.add("auto-huge", 3, ["train", g, *huge])
    b.add("huge-decl", 3, ["train", f["huge-decl"], "--scheme", "1d", "--quiet"])
    for name in TAMPER_CASES:
        b.add(f"tampered-{name}", 3, ["train", f[f"tampered-{name}"], "--scheme", "1d", "--quiet"])
    for name in ("c0", "nofeat"):  # widths no model can have: refused before sizing anything
        b.add(f"{name}-1d", 3, ["train", f[name], "--scheme", "1d", "--quiet"])
        b.add(f"{name}-auto", 3, ["train", f[name], "--quiet"])
    for name, (argv, _) in ISSUE35.items():
        b.add(name, 3, ["train", *[a.format(**f, g=g) for a in argv], "--epochs", "2", "--quiet"])
    b.add("grid-auto", 4, ["train", g, "--scheme", "3d", "--grid", "auto", *ARGS])
    b.add("store2d", 4, ["train", f["store2x2"], "--scheme", "2d", "--grid", "2x2", *ARGS])
    b.add("store2d-4x1", 4, ["train", f["store2x2"], "--scheme", "2d", "--grid", "4x1"])
    plexus = ["train", f["store2x2"], "--scheme", "plexus", "--grid", "1x2x2"]
    b.add("store-plexus", 4, [*plexus, "--load-grid", "2x2", *ARGS])
    b.add("store-plexus-no-load-grid", 4, plexus)
    b.add("store3d", 4, ["train", f["store1x2"], "--scheme", "3d", "--grid", "1x2x2", *ARGS])
    for i, (nprocs, scheme, extra, shard) in enumerate(HELD_CASES):
        src = _held_source(graph_file, files, shard)
        b.add(f"held{i}", nprocs, ["train", src, "--scheme", scheme, *extra, *ARGS])
    for i, grid in enumerate(GRID_ERRORS):
        scheme, grid = grid[0].split(":") if ":" in grid[0] else ("2d", grid[0])
        b.add(f"grid{i}", 4, ["train", g, "--scheme", scheme, "--grid", grid])
    for i, (argv, _) in enumerate(HIER_ERRORS):
        b.add(f"hier{i}", 3, ["train", g, *argv, "--quiet"])
    for how, _ in TAMPERED:
        for scheme in ("1d", "p2p"):
            b.add(f"tampered-{how}-{scheme}", 2, ["train", f[how], "--scheme", scheme])
    for i in range(2):
        out = ["-o", f["out"] / f"same{i}", "--quiet"]
        b.add(f"same{i}", 4, ["train", g, "--scheme", "p2p", "--epochs", "8", *out])
    return b


def one_error(res, needle: str) -> str:
    """The single `gcntrain: error:` line of a command that failed with status 2 on every
    rank (nothing else on any rank's stderr); it contains `needle`."""
    errs = res.error_lines()
    assert res.rcs and set(res.rcs) == {2}, (res.rcs, res.stderr[-2000:])
    assert len(errs) == 1 and errs[0].startswith("gcntrain: error:"), errs
    assert needle in errs[0] and "Traceback" not in res.stderr, errs
    return errs[0]


@pytest.mark.parametrize("nprocs,scheme,extra", EQUIV_CASES)
def test_distributed_cli_equals_serial(cli, serial_summary, nprocs, scheme, extra):
    d = cli.result(f"equiv{EQUIV_CASES.index((nprocs, scheme, extra))}").json()
    assert d["scheme"] == scheme and d["ranks"] == nprocs
    assert close(d["final_loss"], serial_summary["final_loss"])
    assert d["test_acc"] == serial_summary["test_acc"]
    assert d["epochs"] == serial_summary["epochs"] == 6
    for key in ("bytes_sent_max", "bytes_sent_mean", "messages_max"):
        assert d[key] > 0
    assert d["bytes_sent_max"] >= d["bytes_sent_mean"]


def test_scheme_auto_trains_the_recommended_exact_configuration(
    cli, graph_file, serial_summary, capsys
):
    """--scheme auto on 3 ranks: rank 0's sweep picks an exact configuration (the first exact
    row of `simulate --sweep` for this placement), every rank trains it, results equal serial."""
    d = cli.result("auto").json()
    rec = d["recommendation"]
    assert d["scheme"] == rec["scheme"] and rec["machine"] == "abci"
    assert close(d["final_loss"], serial_summary["final_loss"])
    assert d["test_acc"] == serial_summary["test_acc"]
    argv = ["simulate", str(graph_file), "-P", "3", "--machine", "abci", "--ranks-per-node", "3"]
    capsys.readouterr()
    assert run([*argv, *ARGS[1:7], "--sweep", "--json"]) == 0
    best = json.loads(capsys.readouterr().out)["recommended"]
    assert (rec["label"], rec["predicted_epoch_seconds"]) == (best["label"], best["epoch_seconds"])
    # said aloud on rank 0: the search, then the choice and the runner-up
    said = [ln for ln in cli.result("auto").error_lines() if ln.startswith("scheme auto:")]
    assert len(said) in (1, 2) and rec["label"] in said[-1], said
    # the same job again: the cached choice, silent with --quiet, trains the same
    again = cli.result("auto-again")
    d2 = again.json()
    assert d2["recommendation"]["cached"] is True
    assert d2["recommendation"]["label"] == rec["label"] and d2["final_loss"] == d["final_loss"]
    assert not [ln for ln in again.error_lines() if ln.startswith("scheme auto:")]


def test_shard_store_and_partition_file_inputs(cli, files, serial_summary):
    """Ranks read their own shard of a store, or rows of a METIS partition file."""
    d = cli.result("store-p2p").json()
    assert close(d["final_loss"], serial_summary["final_loss"])
    d = cli.result("metis-p2p").json()
    assert close(d["final_loss"], serial_summary["final_loss"])
    assert d["partition"] == str(files["metis3"])


def test_vertex_cut_store_and_libra_file_inputs(cli, files, serial_summary, capsys):
    """A vertex-cut store (each rank reads its own edge shard) and a Libra partition file
    train like serial (also a store whose parts 1 and 2 root nothing); the store's plan
    equals the measured table; a cut of another graph, a wrong rank or part count, and a
    vertex partition scheme on the store fail on every rank with one line."""
    d = cli.result("cut3").json()
    assert close(d["final_loss"], serial_summary["final_loss"])
    assert d["partition"] == "store" and d["replication_factor"] > 1
    measured, planned = files["out"] / "cut3-measured.csv", files["out"] / "cut3-planned.csv"
    sim = ["simulate", str(files["cut3"]), "--ranks", "3", "--scheme", "vertexcut", *ARGS[1:-1]]
    assert run([*sim, "--per-rank", str(planned)]) == 0
    assert measured.read_text() == planned.read_text()
    d = cli.result("libra4").json()
    assert close(d["final_loss"], serial_summary["final_loss"])
    # parts 1 and 2 root no vertex (empty root ranges): each rank still reads its own shard
    d = cli.result("cut2").json()
    assert close(d["final_loss"], serial_summary["final_loss"])
    for name, needle in (
        ("cut-differ", "differ"),
        ("cut-ranks", "3 vertex-cut shards"),
        ("cut-p2p", "vertex-cut (edge) shards"),
        ("cut-parts", "4 parts"),
    ):
        one_error(cli.result(name), needle)


def test_store_with_wrong_shard_count_fails_on_every_rank(cli):
    line = one_error(cli.result("store4-at-3"), "4 row shards")
    assert "3 row" in line


@pytest.mark.parametrize("nprocs", [2, 3])
def test_bad_input_one_line_exit_2(nprocs, tmp_path):
    """A real launch: every process exits 2, and the job's stderr is that one line."""
    res = run_mpi(
        nprocs,
        [*gcntrain_exe(), "train", str(tmp_path / "missing.h5"), "--scheme", "1d"],
        timeout=120,
    )
    assert res.returncode == 2
    errs = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert errs == [
        f"gcntrain: error: {tmp_path / 'missing.h5'}: no such graph file or shard store"
    ]
    assert "Traceback" not in res.stderr


def test_bad_replication_is_agreed(cli):
    one_error(cli.result("replication"), "does not divide")


@pytest.mark.parametrize("nprocs", [2, 4])
def test_fault_mid_epoch_aborts_all_ranks_quickly(graph_file, nprocs):
    """A rank raising inside an aggregation (test hook) ends the whole job with one message."""
    res = run_mpi(
        nprocs,
        [*gcntrain_exe(), "train", str(graph_file), "--scheme", "1d", "--epochs", "100", "--quiet"],
        timeout=60,
        env={"GCNTRAIN_FAULT": "1:3"},
    )
    assert res.returncode != 0
    ours = [ln for ln in res.stderr.splitlines() if ln.startswith("gcntrain: error")]
    assert len(ours) == 1 and "rank 1" in ours[0] and "injected fault" in ours[0]
    assert "Traceback" not in res.stderr
    assert res.seconds < 10, f"job took {res.seconds:.1f} s to end after the fault"


def test_readme_default_job_runs_on_four_ranks():
    """README command (a), `mpiexec -n 4 gcntrain train`, as a real launch (here with --json
    and 5 epochs): the recommender's exact pick trains on the default dataset and gives the
    serial result.  The 200-epoch run and its accuracy are scripts/check_readme_default.py
    (the serial accuracy on this dataset is tests/test_train.py)."""
    d = train_json(4, ["--json", "--quiet", "--epochs", "5"])
    assert d["ranks"] == 4 and d["graph"] == "sbm-default" and d["epochs"] == 5
    rec = d["recommendation"]  # default --scheme auto: the recommender's exact pick trains
    assert d["scheme"] == rec["scheme"] and rec["configurations"] > 1
    assert rec["predicted_epoch_seconds"] > 0
    rc, out = quiet_run(["train", "--json", "--quiet", "--epochs", "5"])
    serial = json.loads(out)
    assert rc == 0 and serial["scheme"] == "serial"
    assert close(d["final_loss"], serial["final_loss"], 1e-4)  # float32
    assert d["test_acc"] == serial["test_acc"]


def test_no_mpi_library_friendly_message():
    env = dict(os.environ, MPI4PY_LIBMPI="/nonexistent/libmpi.so")
    out = subprocess.run(
        [*gcntrain_exe(), "train", "--scheme", "1d", "--epochs", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "no MPI library could be loaded" in lines[0]
    assert "pip install" in lines[0]


@pytest.fixture(scope="module")
def serial_outputs(graph_file, tmp_path_factory):
    """The serial run's `-o` directory (same seed and settings as the distributed ones)."""
    out = tmp_path_factory.mktemp("serial") / "run"
    assert quiet_run(["train", graph_file, *ARGS, "-o", out])[0] == 0
    return out


@pytest.mark.parametrize("nprocs,scheme,extra", OUTPUT_CASES)
def test_distributed_outputs_cover_every_node_once(
    cli, files, serial_summary, serial_outputs, nprocs, scheme, extra
):
    i = OUTPUT_CASES.index((nprocs, scheme, extra))
    out = files["out"] / f"run{i}"
    d = cli.result(f"outputs{i}").json()
    assert close(d["final_loss"], serial_summary["final_loss"])
    assert sorted(p.name for p in out.iterdir()) == [
        "config.json",
        "config.toml",
        "metrics.jsonl",
        "predictions.h5",
        "weights.h5",
    ]
    with h5py.File(out / "predictions.h5", "r") as f:
        ids, pred, lab = f["node_ids"][:], f["predicted"][:], f["label"][:]
    assert np.array_equal(ids, np.arange(512))  # rmat scale 9, each node exactly once
    test = json.loads((out / "config.json").read_text())
    assert test["scheme"] == scheme and test["ranks"] == nprocs
    lines = (out / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == d["epochs"]
    if scheme == "vertexcut":  # per-epoch aggregation split and replication factor
        rec = json.loads(lines[-1])
        assert rec["replication_factor"] == d["replication_factor"] > 1
        assert rec["t_local_agg"] > 0 and rec["t_remote_comm"] > 0
    # the serial run's predictions agree (same seed, float64)
    with h5py.File(serial_outputs / "predictions.h5", "r") as f:
        assert np.array_equal(f["predicted"][:], pred) and np.array_equal(f["label"][:], lab)


def test_human_summary_under_mpi(cli):
    """Without --json the summary table (rank 0 only) names scheme, traffic and time split."""
    res = cli.result("human")
    assert res.rcs == [0, 0, 0], res.stderr[-2000:]
    out = res.stdout  # every rank's stdout
    assert out.count("final loss") == 1 and "1d on 3 ranks" in out
    assert "traffic / epoch" in out and "comm time / epoch" in out
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("extra", NEGATIVE)
def test_negative_seed_and_zero_replication_are_usage_errors(cli, extra):
    one_error(cli.result(f"negative{NEGATIVE.index(extra)}"), "")


def test_unknown_profile_and_input_as_output_refused_on_every_rank(cli, graph_file):
    before = graph_file.read_bytes()
    one_error(cli.result("no-profile"), "unknown machine profile 'nosuch'")
    one_error(cli.result("no-profile-auto"), "unknown machine profile 'nosuch'")
    one_error(cli.result("per-rank-input"), "--per-rank is an input")
    assert graph_file.read_bytes() == before


@pytest.mark.parametrize("name", sorted(TAMPER_CASES))
def test_damaged_files_refused_on_every_rank_with_an_explicit_scheme(cli, name):
    """Rank 0 validates the whole file as it hashes it: each rank reading only its rows
    cannot see these, and the serial read's line is every rank's line."""
    one_error(cli.result(f"tampered-{name}"), TAMPER_CASES[name][1])


@pytest.mark.parametrize("name", sorted(ISSUE35))
def test_bad_inputs_one_line_on_every_rank(cli, graph_file, files, name):
    """Damaged HDF5 metadata (a graph, 1d and auto; a partition file, p2p), an output in a
    folder that does not exist, a scalar `indices`, a graph given as partition, `lr = nan`
    in a config file (auto and 1d), an attribute num_features its features contradict: the
    serial line (tests/test_output_checks.py), exit 2 on every rank, nothing written."""
    needle = ISSUE35[name][1].format(**files, g=graph_file)
    one_error(cli.result(name), needle)
    assert not (files["out"] / "missing").exists()


def test_declared_sizes_checked_before_reading_on_every_rank(cli):
    one_error(cli.result("huge-decl"), "declares 100,000,000,000 elements")


def test_auto_refuses_a_model_too_large_to_plan_on_every_rank(cli):
    one_error(cli.result("auto-huge"), "more than the 1.0 GiB of --max-memory")


@pytest.mark.parametrize("how", ["1d", "auto"])
def test_graphs_without_usable_widths_refused_on_every_rank(cli, how):
    one_error(cli.result(f"c0-{how}"), "need at least 2 classes, found 0")
    one_error(cli.result(f"nofeat-{how}"), "no node features")


def test_single_class_graph_rejected_like_serial(cli):
    one_error(cli.result("one-class"), "need at least 2 classes")


def test_grid_auto_trains_on_the_planned_best_grid(cli):
    """Rank 0 plans every grid, all ranks train on the best; the JSON carries the ranking."""
    d = cli.result("grid-auto").json()
    assert len(d["grid_search"]) == 6
    assert d["scheme_options"]["grid"] == d["grid_search"][0]["grid"]
    vols = [r["volume_max"] for r in d["grid_search"]]
    assert vols == sorted(vols)


def test_2d_reads_its_block_of_a_2d_store(cli, serial_summary):
    """`gcntrain shard --grid 2x2` then 2d on a 2 x 2 grid: each rank reads its block."""
    d = cli.result("store2d").json()
    assert close(d["final_loss"], serial_summary["final_loss"])
    assert d["test_acc"] == serial_summary["test_acc"] and d["partition"] == "store"
    one_error(cli.result("store2d-4x1"), "2x2 block grid but this run needs 4x1")


def test_plexus_reads_its_block_of_a_2d_store(cli, serial_summary):
    """`gcntrain shard --grid 2x2` then plexus with --load-grid 2x2: each rank opens one
    block (and its block row's node file) and routes its entries to the shards' holders."""
    d = cli.result("store-plexus").json()
    assert close(d["final_loss"], serial_summary["final_loss"])
    assert d["test_acc"] == serial_summary["test_acc"] and d["partition"] == "store"
    one_error(cli.result("store-plexus-no-load-grid"), "read its blocks with --load-grid 2x2")


def test_3d_reads_its_block_of_a_2d_store(cli, serial_summary):
    """`gcntrain shard --grid 1x2` then 3d on 1 x 2 x 2: the two layers of each block column
    open the same block and keep their own columns and node slice."""
    d = cli.result("store3d").json()
    assert close(d["final_loss"], serial_summary["final_loss"])
    assert d["test_acc"] == serial_summary["test_acc"] and d["partition"] == "store"


@pytest.mark.parametrize("grid,message", GRID_ERRORS)
def test_invalid_grid_one_line_exit_2_on_every_rank(cli, grid, message):
    one_error(cli.result(f"grid{GRID_ERRORS.index((grid, message))}"), message)


@pytest.mark.parametrize("nprocs,scheme,extra,shard", HELD_CASES)
def test_graph_data_held_per_rank_equals_the_plan(
    cli, graph_file, files, capsys, nprocs, scheme, extra, shard
):
    """`train --json` measures the graph data each rank holds (`held_bytes` over its Ops and
    node data); `simulate --json` estimates it from the layout: max and mean within 10 %
    (2D stores read block by block, a row store, graph files)."""
    src = _held_source(graph_file, files, shard)
    d = cli.result(f"held{HELD_CASES.index((nprocs, scheme, extra, shard))}").json()
    argv = ["simulate", src, "--ranks", str(nprocs), "--scheme", scheme, *extra]
    capsys.readouterr()
    assert run([*argv, "--epochs", "6", "--dtype", "float64", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    with capsys.disabled():
        print(
            f"\n{scheme} {' '.join(extra)} np={nprocs}: held max {d['held_bytes_max']} mean "
            f"{d['held_bytes_mean']:.0f}; planned max {s['held_bytes_max']} mean "
            f"{s['held_bytes_mean']:.0f}"
        )
    for key in ("held_bytes_max", "held_bytes_mean"):
        assert abs(d[key] / s[key] - 1) <= 0.10, (key, d[key], s[key])


@pytest.mark.parametrize("argv,needle", HIER_ERRORS)
def test_hier_bad_input_one_line_exit_2(cli, argv, needle):
    """SuperGCN options: one line, exit 2, on every rank (np = 3)."""
    one_error(cli.result(f"hier{HIER_ERRORS.index((argv, needle))}"), needle)


@pytest.mark.parametrize("how,needle", TAMPERED)
@pytest.mark.parametrize("scheme", ["1d", "p2p"])
def test_file_refused_serially_is_refused_under_mpi(cli, files, capsys, how, needle, scheme):
    """A graph file whose arrays no longer match its content hash, or that lacks a dataset,
    is refused under mpiexec with the serial run's line and status (row-selective reads
    alone never see the hash); 1d with the hash mismatch also as a real launch (rank 0 alone
    sees it: every process must still exit 2 and print nothing else)."""
    path = files[how]
    capsys.readouterr()
    assert run(["train", str(path), "--epochs", "2", "--quiet"]) == 2
    serial = capsys.readouterr().err.strip().splitlines()
    assert len(serial) == 1 and needle in serial[0]
    res = cli.result(f"tampered-{how}-{scheme}")
    assert [one_error(res, needle)] == serial
    if (how, scheme) == ("hash", "1d"):
        real = run_mpi(2, [*gcntrain_exe(), "train", str(path), "--scheme", scheme])
        assert real.returncode == 2, real.stderr[-2000:]
        errs = [ln for ln in real.stderr.splitlines() if ln.strip()]
        assert errs == serial and "Traceback" not in real.stderr


def test_same_seed_same_ranks_give_byte_identical_weights(cli, files):
    """Two p2p runs at np = 4 with the same seed write byte-identical weights files (p2p adds
    the received blocks in pair order, not arrival order)."""
    outs = []
    for i in range(2):
        res = cli.result(f"same{i}")
        assert res.rcs == [0] * 4, res.stderr[-2000:]
        outs.append((files["out"] / f"same{i}" / "weights.h5").read_bytes())
    assert outs[0] == outs[1]
