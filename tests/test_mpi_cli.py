"""`mpiexec -n P gcntrain train ...` end to end: same result as serial, every input path,
collective errors, fault injection.  Every launch has a wall-clock limit."""

from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

from gcntrain.cli.main import run
from gcntrain.data.generate import rmat
from gcntrain.data.store import write_graph
from tests.mpi.launch import gcntrain_exe, run_mpi

pytestmark = pytest.mark.mpi

ARGS = ["--json", "--epochs", "6", "--seed", "4", "--dtype", "float64", "--quiet"]


def train_json(nprocs: int, argv: list[str], env: dict | None = None) -> dict:
    res = run_mpi(nprocs, [*gcntrain_exe(), "train", *argv], timeout=300, env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.json()


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    g = rmat(9, edge_factor=8, seed=5, num_features=16, num_classes=4)
    path = tmp_path_factory.mktemp("g") / "rmat.h5"
    write_graph(path, g)
    return path


@pytest.fixture(scope="module")
def serial_summary(graph_file):
    out = subprocess.run(
        [*gcntrain_exe(), "train", str(graph_file), *ARGS],
        text=True,
        capture_output=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def close(a: float, b: float, tol: float = 1e-9) -> bool:
    return abs(a - b) <= tol * max(abs(b), 1e-30)


@pytest.mark.parametrize(
    "nprocs,scheme,extra",
    [
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
    ],
)
def test_distributed_cli_equals_serial(graph_file, serial_summary, nprocs, scheme, extra):
    d = train_json(nprocs, [str(graph_file), "--scheme", scheme, *extra, *ARGS])
    assert d["scheme"] == scheme and d["ranks"] == nprocs
    assert close(d["final_loss"], serial_summary["final_loss"])
    assert d["test_acc"] == serial_summary["test_acc"]
    assert d["epochs"] == serial_summary["epochs"] == 6
    for key in ("bytes_sent_max", "bytes_sent_mean", "messages_max"):
        assert d[key] > 0
    assert d["bytes_sent_max"] >= d["bytes_sent_mean"]


def test_scheme_auto_trains_the_recommended_exact_configuration(graph_file, serial_summary):
    """--scheme auto on 3 ranks: rank 0's sweep picks an exact configuration (the first exact
    row of `simulate --sweep` for this placement), every rank trains it, results equal serial."""
    d = train_json(3, [str(graph_file), "--machine", "abci", *ARGS])
    rec = d["recommendation"]
    assert d["scheme"] == rec["scheme"] and rec["machine"] == "abci"
    assert close(d["final_loss"], serial_summary["final_loss"])
    assert d["test_acc"] == serial_summary["test_acc"]
    argv = ["simulate", str(graph_file), "-P", "3", "--machine", "abci", "--ranks-per-node", "3"]
    out = subprocess.run(
        [*gcntrain_exe(), *argv, *ARGS[1:7], "--sweep", "--json"],
        text=True,
        capture_output=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    best = json.loads(out.stdout)["recommended"]
    assert (rec["label"], rec["predicted_epoch_seconds"]) == (best["label"], best["epoch_seconds"])


def test_shard_store_and_partition_file_inputs(graph_file, serial_summary, tmp_path):
    """Ranks read their own shard of a store, or rows of a METIS partition file."""
    store = tmp_path / "store"
    assert (
        run(["shard", str(graph_file), "-o", str(store), "--parts", "3", "--partition", "random"])
        == 0
    )
    d = train_json(3, [str(store), "--scheme", "p2p", *ARGS])
    assert close(d["final_loss"], serial_summary["final_loss"])
    part = tmp_path / "part.h5"
    assert (
        run(["partition", str(graph_file), "--method", "metis", "--parts", "3", "--out", str(part)])
        == 0
    )
    d = train_json(3, [str(graph_file), "--scheme", "p2p", "--partition", str(part), *ARGS])
    assert close(d["final_loss"], serial_summary["final_loss"])
    assert d["partition"] == str(part)


def test_vertex_cut_store_and_libra_file_inputs(graph_file, serial_summary, tmp_path):
    """A vertex-cut store (each rank reads its own edge shard) and a Libra partition file
    train like serial (also a store whose parts 1 and 2 root nothing); the store's plan
    equals the measured table; a cut of another graph, a wrong rank or part count, and a
    vertex partition scheme on the store fail on every rank with one line."""
    store = tmp_path / "cut"
    assert run(["shard", str(graph_file), "-o", str(store), "-m", "libra", "--parts", "3"]) == 0
    measured, planned = tmp_path / "m.csv", tmp_path / "p.csv"
    d = train_json(3, [str(store), "--scheme", "vertexcut", *ARGS, "--per-rank", str(measured)])
    assert close(d["final_loss"], serial_summary["final_loss"])
    assert d["partition"] == "store" and d["replication_factor"] > 1
    sim = ["simulate", str(store), "--ranks", "3", "--scheme", "vertexcut", *ARGS[1:-1]]
    assert run([*sim, "--per-rank", str(planned)]) == 0
    assert measured.read_text() == planned.read_text()
    part = tmp_path / "libra.h5"
    assert run(["partition", str(graph_file), "-m", "libra", "--parts", "4", "-o", str(part)]) == 0
    d = train_json(4, [str(graph_file), "--scheme", "vertexcut", "--partition", str(part), *ARGS])
    assert close(d["final_loss"], serial_summary["final_loss"])
    # parts 1 and 2 root no vertex (empty root ranges): each rank still reads its own shard
    from gcntrain.partition.io import read_partition, write_partition

    res = read_partition(part)
    res.root = np.where(np.arange(res.root.size) % 2 == 0, 0, 3).astype(np.int64)
    lopsided = tmp_path / "lopsided.h5"
    write_partition(lopsided, res)
    cut2 = tmp_path / "cut2"
    assert (
        run(
            ["shard", str(graph_file), "-o", str(cut2), "-m", "libra", "--partition", str(lopsided)]
        )
        == 0
    )
    d = train_json(4, [str(cut2), "--scheme", "vertexcut", *ARGS])
    assert close(d["final_loss"], serial_summary["final_loss"])
    other, other_cut = tmp_path / "other.h5", tmp_path / "other-cut.h5"
    write_graph(other, rmat(7, edge_factor=4, seed=6, num_features=16, num_classes=4))
    assert run(["partition", str(other), "-m", "libra", "--parts", "3", "-o", str(other_cut)]) == 0
    for nprocs, argv, needle in (
        (3, [str(graph_file), "--scheme", "vertexcut", "--partition", str(other_cut)], "differ"),
        (2, [str(store), "--scheme", "vertexcut"], "3 vertex-cut shards"),
        (3, [str(store), "--scheme", "p2p"], "vertex-cut (edge) shards"),
        (3, [str(graph_file), "--scheme", "vertexcut", "--partition", str(part)], "4 parts"),
    ):
        res = run_mpi(nprocs, [*gcntrain_exe(), "train", *argv, "--quiet"], timeout=120)
        errs = [ln for ln in res.stderr.splitlines() if ln.startswith("gcntrain: error")]
        assert res.returncode == 2 and len(errs) == 1 and needle in errs[0], res.stderr


def test_store_with_wrong_shard_count_fails_on_every_rank(graph_file, tmp_path):
    store = tmp_path / "store4"
    assert run(["shard", str(graph_file), "-o", str(store), "--parts", "4"]) == 0
    res = run_mpi(
        3, [*gcntrain_exe(), "train", str(store), "--scheme", "1d", "--quiet"], timeout=120
    )
    assert res.returncode == 2
    errs = [ln for ln in res.stderr.splitlines() if ln.startswith("gcntrain: error")]
    assert len(errs) == 1 and "4 row shards" in errs[0] and "3 row" in errs[0]


@pytest.mark.parametrize("nprocs", [2, 3])
def test_bad_input_one_line_exit_2(nprocs, tmp_path):
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


def test_bad_replication_is_agreed(graph_file):
    res = run_mpi(
        3,
        [*gcntrain_exe(), "train", str(graph_file), "--scheme", "1.5d", "--replication", "2"],
        timeout=120,
    )
    assert res.returncode == 2
    assert res.stderr.count("gcntrain: error") == 1 and "does not divide" in res.stderr


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
    """README command (a): `mpiexec -n 4 gcntrain train` (here with --json)."""
    d = train_json(4, ["--json", "--quiet"])
    assert d["ranks"] == 4 and d["graph"] == "sbm-default"
    rec = d["recommendation"]  # default --scheme auto: the recommender's exact pick trains
    assert d["scheme"] == rec["scheme"] and rec["configurations"] > 1
    assert rec["predicted_epoch_seconds"] > 0
    assert d["test_acc"] > 0.75  # chance is 1/8


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


@pytest.mark.parametrize(
    "nprocs,scheme,extra",
    [
        (4, "1.5d", ["--replication", "2"]),
        (3, "p2p", ["--partition", "random"]),
        (3, "vertexcut", ["--delay", "0"]),
    ],
)
def test_distributed_outputs_cover_every_node_once(
    graph_file, serial_summary, tmp_path, nprocs, scheme, extra
):
    import h5py
    import numpy as np

    out = tmp_path / "run"
    d = train_json(nprocs, [str(graph_file), "--scheme", scheme, *extra, *ARGS, "-o", str(out)])
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
    ser = tmp_path / "serial"
    res = subprocess.run(
        [*gcntrain_exe(), "train", str(graph_file), *ARGS, "-o", str(ser)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    with h5py.File(ser / "predictions.h5", "r") as f:
        assert np.array_equal(f["predicted"][:], pred) and np.array_equal(f["label"][:], lab)


def test_human_summary_under_mpi(graph_file):
    """Without --json the summary table (rank 0 only) names scheme, traffic and time split."""
    res = run_mpi(
        3,
        [*gcntrain_exe(), "train", str(graph_file), "--scheme", "1d", "--epochs", "3", "--quiet"],
        timeout=120,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    out = res.stdout
    assert out.count("final loss") == 1 and "1d on 3 ranks" in out
    assert "traffic / epoch" in out and "comm time / epoch" in out
    assert "Traceback" not in res.stderr


def test_negative_seed_and_zero_replication_are_usage_errors(graph_file):
    for extra in (
        ["--seed", "-1"],
        ["--scheme", "1.5d", "--replication", "0"],
        ["--partition", "random", "--partition-seed", "-2"],
    ):
        res = run_mpi(
            2, [*gcntrain_exe(), "train", str(graph_file), "--scheme", "1d", *extra], timeout=120
        )
        assert res.returncode == 2, (extra, res.stderr)
        assert res.stderr.count("gcntrain: error") == 1


def test_single_class_graph_rejected_like_serial(tmp_path):
    g1 = tmp_path / "c1.h5"
    assert run(["generate", "rmat", "-o", str(g1), "--scale", "5", "--classes", "1"]) == 0
    res = run_mpi(2, [*gcntrain_exe(), "train", str(g1), "--scheme", "1d"], timeout=120)
    assert res.returncode == 2 and "need at least 2 classes" in res.stderr
    assert res.stderr.count("gcntrain: error") == 1


def test_grid_auto_trains_on_the_planned_best_grid(graph_file):
    """Rank 0 plans every grid, all ranks train on the best; the JSON carries the ranking."""
    d = train_json(4, [str(graph_file), "--scheme", "3d", "--grid", "auto", *ARGS])
    assert len(d["grid_search"]) == 6
    assert d["scheme_options"]["grid"] == d["grid_search"][0]["grid"]
    vols = [r["volume_max"] for r in d["grid_search"]]
    assert vols == sorted(vols)


def test_2d_reads_its_block_of_a_2d_store(graph_file, serial_summary, tmp_path):
    """`gcntrain shard --grid 2x2` then 2d on a 2 x 2 grid: each rank reads its block."""
    store = tmp_path / "store2d"
    assert run(["shard", str(graph_file), "-o", str(store), "--grid", "2x2"]) == 0
    d = train_json(4, [str(store), "--scheme", "2d", "--grid", "2x2", *ARGS])
    assert close(d["final_loss"], serial_summary["final_loss"])
    assert d["test_acc"] == serial_summary["test_acc"] and d["partition"] == "store"
    res = run_mpi(
        4, [*gcntrain_exe(), "train", str(store), "--scheme", "2d", "--grid", "4x1"], timeout=120
    )
    assert res.returncode == 2 and res.stderr.count("gcntrain: error") == 1
    assert "2x2 block grid but this run needs 4x1" in res.stderr


def test_plexus_reads_its_block_of_a_2d_store(graph_file, serial_summary, tmp_path):
    """`gcntrain shard --grid 2x2` then plexus with --load-grid 2x2: each rank opens one
    block (and its block row's node file) and routes its entries to the shards' holders."""
    store = tmp_path / "store2d"
    assert run(["shard", str(graph_file), "-o", str(store), "--grid", "2x2"]) == 0
    argv = [str(store), "--scheme", "plexus", "--grid", "1x2x2", "--load-grid", "2x2"]
    d = train_json(4, [*argv, *ARGS])
    assert close(d["final_loss"], serial_summary["final_loss"])
    assert d["test_acc"] == serial_summary["test_acc"] and d["partition"] == "store"
    res = run_mpi(4, [*gcntrain_exe(), "train", *argv[:5]], timeout=120)
    assert res.returncode == 2 and res.stderr.count("gcntrain: error") == 1
    assert "read its blocks with --load-grid 2x2" in res.stderr


def test_3d_reads_its_block_of_a_2d_store(graph_file, serial_summary, tmp_path):
    """`gcntrain shard --grid 1x2` then 3d on 1 x 2 x 2: the two layers of each block column
    open the same block and keep their own columns and node slice."""
    store = tmp_path / "store3d"
    assert run(["shard", str(graph_file), "-o", str(store), "--grid", "1x2"]) == 0
    d = train_json(4, [str(store), "--scheme", "3d", "--grid", "1x2x2", *ARGS])
    assert close(d["final_loss"], serial_summary["final_loss"])
    assert d["test_acc"] == serial_summary["test_acc"] and d["partition"] == "store"


@pytest.mark.parametrize(
    "grid,message",
    [
        ("3x2", "process grid 3x2 needs 6 ranks, but the job has 4"),
        ("0x4", "dimensions must be >= 1"),
        ("4", "--grid must look like RxC"),
        ("3d:2x2", "--grid must look like XxYxZ (e.g. 2x2x2) for the 3d scheme"),
        ("3d:2x0x2", "dimensions must be >= 1"),
        ("3d:2x2x2", "process grid 2x2x2 needs 8 ranks, but the job has 4"),
        ("plexus:4x1", "--grid must look like XxYxZ (e.g. 2x2x2) for the plexus scheme"),
        ("plexus:1x0x4", "dimensions must be >= 1"),
        ("plexus:3x1x1", "process grid 3x1x1 needs 3 ranks, but the job has 4"),
    ],
)
def test_invalid_grid_one_line_exit_2_on_every_rank(graph_file, grid, message):
    scheme, grid = grid.split(":") if ":" in grid else ("2d", grid)
    res = run_mpi(
        4,
        [*gcntrain_exe(), "train", str(graph_file), "--scheme", scheme, "--grid", grid],
        timeout=120,
    )
    assert res.returncode == 2, res.stderr[-2000:]
    errs = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(errs) == 1 and errs[0].startswith("gcntrain: error:") and message in errs[0]
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize(
    "nprocs,scheme,extra,shard",
    [
        (4, "2d", ["--grid", "2x2"], ["--grid", "2x2"]),
        (4, "3d", ["--grid", "1x2x2"], ["--grid", "1x2"]),
        (4, "3d", ["--grid", "2x1x2", "--model", "sage"], None),
        (4, "plexus", ["--grid", "2x1x2", "--permute", "double"], None),
        (3, "plexus", ["--grid", "1x3x1", "--model", "sage"], ["--parts", "3"]),
        (4, "plexus", ["--grid", "2x1x2", "--load-grid", "2x2"], ["--grid", "2x2"]),
    ],
)
def test_graph_data_held_per_rank_equals_the_plan(
    graph_file, tmp_path, capsys, nprocs, scheme, extra, shard
):
    """`train --json` measures the graph data each rank holds (`held_bytes` over its Ops and
    node data); `simulate --json` estimates it from the layout: max and mean within 10 %
    (2D stores read block by block, a row store, graph files)."""
    src = str(graph_file)
    if shard is not None:
        src = str(tmp_path / "store")
        assert run(["shard", str(graph_file), "-o", src, *shard]) == 0
        capsys.readouterr()
    d = train_json(nprocs, [src, "--scheme", scheme, *extra, *ARGS])
    argv = ["simulate", src, "--ranks", str(nprocs), "--scheme", scheme, *extra]
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


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--scheme", "hier", "--quant-bits", "3"], "--quant-bits must be 2, 4, 8 or 32"),
        (["--scheme", "hier", "--label-prop", "1.0"], "--label-prop must be in [0, 1)"),
        (["--scheme", "hier", "--label-prop", "-0.1"], "--label-prop must be in [0, 1)"),
        (["--scheme", "p2p", "--aggr", "pre"], "--aggr does not apply to --scheme p2p"),
        (["--scheme", "hier", "--quant-group", "4"], "--quant-group needs --quant-bits"),
        (["--scheme", "2d", "--norm", "layer"], "--norm layer needs whole feature rows"),
    ],
)
def test_hier_bad_input_one_line_exit_2(graph_file, argv, needle):
    """SuperGCN options: one line, exit 2, on every rank (np = 3)."""
    res = run_mpi(3, [*gcntrain_exe(), "train", str(graph_file), *argv, "--quiet"], timeout=120)
    errs = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(errs) == 1 and needle in errs[0], res.stderr


def _tampered(graph_file, tmp_path, how: str):
    import shutil

    import h5py

    path = tmp_path / f"{how}.h5"
    shutil.copy(graph_file, path)
    with h5py.File(path, "r+") as f:
        if how == "hash":
            f["features"][0, 0] = f["features"][0, 0] + 1.0  # contents no longer hash alike
        else:
            del f["indices"]
    return path


@pytest.mark.parametrize("how,needle", [("hash", "content hash mismatch"), ("indices", "indices")])
@pytest.mark.parametrize("scheme", ["1d", "p2p"])
def test_file_refused_serially_is_refused_under_mpi(
    graph_file, tmp_path, capsys, how, needle, scheme
):
    """A graph file whose arrays no longer match its content hash, or that lacks a dataset,
    is refused under mpiexec with the serial run's line and status (row-selective reads
    alone never see the hash)."""
    path = _tampered(graph_file, tmp_path, how)
    assert run(["train", str(path), "--epochs", "2", "--quiet"]) == 2
    serial = capsys.readouterr().err.strip().splitlines()
    assert len(serial) == 1 and needle in serial[0]
    res = run_mpi(2, [*gcntrain_exe(), "train", str(path), "--scheme", scheme, "--epochs", "2"])
    assert res.returncode == 2, res.stderr[-2000:]
    errs = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert errs == serial and "Traceback" not in res.stderr


@pytest.mark.parametrize("scheme", ["p2p"])
def test_same_seed_same_ranks_give_byte_identical_weights(graph_file, tmp_path, scheme):
    """Two runs at np = 4 with the same seed write byte-identical weights files (p2p adds
    the received blocks in pair order, not arrival order)."""
    outs = []
    for i in range(2):
        out = tmp_path / f"run{i}"
        argv = [str(graph_file), "--scheme", scheme, "--epochs", "8", "-o", str(out), "--quiet"]
        res = run_mpi(4, [*gcntrain_exe(), "train", *argv], timeout=300)
        assert res.returncode == 0, res.stderr[-2000:]
        outs.append((out / "weights.h5").read_bytes())
    assert outs[0] == outs[1]
