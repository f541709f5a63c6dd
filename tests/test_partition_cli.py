"""Partition files (round trip, hash check) and `gcntrain partition` through `run`."""

from __future__ import annotations

import json

import h5py
import numpy as np
import pytest

from gcntrain.cli.main import run
from gcntrain.data.generate import road_grid
from gcntrain.data.graph import Graph
from gcntrain.data.partition_file import read_partition, read_report, write_partition
from gcntrain.data.store import read_graph, write_graph
from gcntrain.errors import FormatError, InputError
from gcntrain.partition.libra import libra_partition
from gcntrain.partition.metrics import comm_volume
from gcntrain.partition.mvc import mvc_split
from gcntrain.partition.result import PartitionResult


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("part")
    g = road_grid(10, 12, seed=1)
    path = d / "grid.h5"
    write_graph(path, g)
    return path


@pytest.fixture(scope="module")
def other_graph_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("other")
    path = d / "grid2.h5"
    write_graph(path, road_grid(10, 12, seed=2))
    return path


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    err = [e for e in err if e.startswith("gcntrain: error:")]
    assert len(err) == 1
    return err[0]


# --- io ---------------------------------------------------------------------------------


def test_round_trip_all_layouts(tmp_path):
    g = road_grid(6, 7, seed=0)
    h = g.content_hash()
    part = np.arange(g.n) % 3
    split = mvc_split(g.indptr, g.indices, part, 3)
    vc = libra_partition(g.indptr, g.indices, 3, seed=0)
    results = [
        PartitionResult(
            "metis",
            3,
            part=part,
            params={"imbalance": 0.03},
            seed=4,
            graph_content_hash=h,
            seconds=1.5,
        ),
        PartitionResult(
            "mvc",
            3,
            part=part,
            graph_content_hash=h,
            mvc={
                "edge_mode": split.edge_mode,
                "pair_src": split.pair_src,
                "pair_dst": split.pair_dst,
                "pre_volume": split.pre_volume,
                "post_volume": split.post_volume,
                "hybrid_volume": split.hybrid_volume,
            },
        ),
        PartitionResult(
            "libra",
            3,
            edge_part=vc.edge_part,
            replica_ptr=vc.replica_ptr,
            replica_parts=vc.replica_parts,
            root=vc.root,
            graph_content_hash=h,
        ),
        PartitionResult(
            "double-perm",
            4,
            row_perm=np.random.permutation(g.n),
            col_perm=np.random.permutation(g.n),
            grid=(2, 2),
            graph_content_hash=h,
        ),
    ]
    for k, res in enumerate(results):
        path = tmp_path / f"p{k}.h5"
        write_partition(path, res, report={"method": res.method, "x": np.int64(3)})
        back = read_partition(path, graph_hash=h)
        assert back.method == res.method and back.parts == res.parts
        assert back.params == res.params and back.seed == res.seed
        assert back.graph_content_hash == h and back.grid == res.grid
        for name in (
            "part",
            "edge_part",
            "replica_ptr",
            "replica_parts",
            "root",
            "row_perm",
            "col_perm",
        ):
            a, b = getattr(res, name), getattr(back, name)
            assert (a is None and b is None) or np.array_equal(a, b)
        if res.mvc is not None:
            for key, arr in res.mvc.items():
                assert np.array_equal(back.mvc[key], arr)
        assert read_report(path) == {"method": res.method, "x": 3}
        with h5py.File(path, "r") as f:  # the names other tools read directly
            assert f.attrs["graph_content_hash"] == h
            assert f.attrs["format"] == "gcntrain-partition" and f.attrs["format_version"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"p{k}.h5" for k in range(4)]


def test_hash_mismatch_and_bad_files(tmp_path):
    path = tmp_path / "p.h5"
    write_partition(
        path, PartitionResult("block", 2, part=np.array([0, 0, 1, 1]), graph_content_hash="ab" * 32)
    )
    with pytest.raises(InputError, match="computed for a different graph") as e:
        read_partition(path, graph_hash="cd" * 32)
    assert "abababababab" in str(e.value) and "cdcdcdcdcdcd" in str(e.value)
    assert read_partition(path).part.tolist() == [0, 0, 1, 1]
    with pytest.raises(InputError, match="does not exist"):
        read_partition(tmp_path / "missing.h5")
    junk = tmp_path / "junk.h5"
    junk.write_text("not hdf5")
    with pytest.raises(FormatError, match="not a readable HDF5 file"):
        read_partition(junk)
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["part"] = np.zeros(3, dtype=np.int64)
    with pytest.raises(FormatError, match="without a .format. attribute, not a partition file"):
        read_partition(other)
    with pytest.raises(InputError, match="does not exist"):
        write_partition(tmp_path / "no" / "p.h5", PartitionResult("block", 1, part=np.zeros(2)))
    bad = tmp_path / "bad.h5"
    write_partition(bad, PartitionResult("block", 2, part=np.array([0, 5])))
    with pytest.raises(FormatError, match="outside"):
        read_partition(bad)


# --- CLI --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method", ["block", "random", "metis", "hypergraph", "libra", "double-perm", "mvc"]
)
def test_cli_methods_json(method, graph_file, tmp_path, capsys):
    out = tmp_path / f"{method}.h5"
    rc = run(
        [
            "partition",
            str(graph_file),
            "--method",
            method,
            "--parts",
            "4",
            "-o",
            str(out),
            "--json",
            "--threads",
            "1",
        ]
    )
    cap = capsys.readouterr()
    assert rc == 0, cap.err
    rep = json.loads(cap.out.strip())
    assert rep["method"] == method and rep["parts"] == 4
    for k in (
        "edge_cut",
        "volume_total",
        "volume_max_send",
        "volume_max_recv",
        "messages_total",
        "messages_max",
        "nnz_imbalance",
        "seconds",
    ):
        assert k in rep
    g = read_graph(graph_file)
    res = read_partition(out, graph_hash=g.content_hash())
    if res.part is not None:
        vol = comm_volume(g.indptr, g.indices, res.part, 4)
        assert rep["volume_total"] == vol["volume_total"]
        assert rep["edge_cut"] == vol["edge_cut"]
        assert np.bincount(res.part, minlength=4).min() > 0
    if method == "libra":
        assert rep["replication_factor"] >= 1 and "edge_balance" in rep
    if method == "double-perm":
        assert rep["grid"] == "2x2" and rep["nnz_max_mean_double"] >= 1
    if method == "mvc":
        assert rep["hybrid_total"] <= min(rep["pre_total"], rep["post_total"])
        assert res.mvc["edge_mode"].shape == (g.nnz,)


def test_cli_mvc_with_partition_file_and_hash_mismatch(
    graph_file, other_graph_file, tmp_path, capsys
):
    base = tmp_path / "base.h5"
    assert run(["partition", str(graph_file), "-m", "metis", "-p", "3", "-o", str(base)]) == 0
    out = tmp_path / "mvc.h5"
    assert (
        run(
            [
                "partition",
                str(graph_file),
                "-m",
                "mvc",
                "-p",
                "3",
                "-o",
                str(out),
                "--base-partition",
                str(base),
                "--report",
            ]
        )
        == 0
    )
    assert "hybrid_total" in capsys.readouterr().out
    assert np.array_equal(read_partition(out).part, read_partition(base).part)
    rc = run(
        [
            "partition",
            str(other_graph_file),
            "-m",
            "mvc",
            "-p",
            "3",
            "-o",
            str(tmp_path / "x.h5"),
            "--base-partition",
            str(base),
        ]
    )
    assert rc == 2
    line = one_error_line(capsys)
    assert "computed for a different graph" in line and str(base) in line
    assert not (tmp_path / "x.h5").exists()


@pytest.mark.parametrize("P", ["0", "-3", "121"])
def test_cli_bad_part_counts(P, graph_file, tmp_path, capsys):
    rc = run(["partition", str(graph_file), "-m", "block", "-p", P, "-o", str(tmp_path / "p.h5")])
    assert rc == 2
    line = one_error_line(capsys)
    assert "parts" in line


def test_cli_bad_method_grid_and_missing_graph(graph_file, tmp_path, capsys):
    out = str(tmp_path / "p.h5")
    assert run(["partition", str(graph_file), "-m", "kmeans", "-p", "2", "-o", out]) == 2
    assert "kmeans" in one_error_line(capsys)
    assert (
        run(
            [
                "partition",
                str(graph_file),
                "-m",
                "double-perm",
                "-p",
                "4",
                "--grid",
                "3x3",
                "-o",
                out,
            ]
        )
        == 2
    )
    assert "3x3" in one_error_line(capsys)
    assert (
        run(
            ["partition", str(graph_file), "-m", "double-perm", "-p", "4", "--grid", "x", "-o", out]
        )
        == 2
    )
    one_error_line(capsys)
    assert run(["partition", str(tmp_path / "nope.h5"), "-m", "block", "-p", "2", "-o", out]) == 2
    one_error_line(capsys)
    assert (
        run(
            [
                "partition",
                str(graph_file),
                "-m",
                "metis",
                "-p",
                "2",
                "--vweights",
                "train",
                "-o",
                out,
            ]
        )
        == 0
    )  # road_grid has a training split
    bare = tmp_path / "bare.h5"
    g = road_grid(5, 5, seed=0)
    write_graph(bare, Graph(g.indptr, g.indices, name="bare"))
    assert (
        run(["partition", str(bare), "-m", "metis", "-p", "2", "--vweights", "train", "-o", out])
        == 2
    )
    assert "training mask" in one_error_line(capsys)
