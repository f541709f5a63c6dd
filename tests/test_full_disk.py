"""A full disk never leaves a corrupt or partial output: on a tiny tmpfs every command that
writes (train -o, partition --out, convert, shard, a checkpoint) exits 2 with one line naming
the file and the cause, and leaves nothing under a final name and no temporary.  Before
these fixes `train -o` printed its summary and then crashed inside HDF5's close (rc 139),
leaving `predictions.h5` under its final name, and convert/shard exited 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gcntrain.data.generate import rmat
from gcntrain.data.store import write_graph
from tests.mpi.launch import gcntrain_exe, run_mpi

SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def _mount(path: Path, size: str) -> bool:
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        return False
    path.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
        capture_output=True,
        check=False,
    )
    return res.returncode == 0


@pytest.fixture
def small_disk(tmp_path):
    """A 16 KiB tmpfs (mounting needs root: skipped otherwise, with the reason)."""
    disk = tmp_path / "small"
    if not _mount(disk, "16k"):
        pytest.skip("mounting a tmpfs needs root on Linux (and a kernel that allows it)")
    yield disk
    subprocess.run(["umount", str(disk)], check=False)


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    g = rmat(12, edge_factor=4, seed=3, num_features=64, num_classes=4)
    path = tmp_path_factory.mktemp("g") / "g.h5"
    write_graph(path, g)
    return path


def _gcntrain(*argv, nprocs: int = 1):
    if nprocs > 1:
        return run_mpi(nprocs, [*gcntrain_exe(), *argv], timeout=300)
    return subprocess.run(
        [*gcntrain_exe(), *argv], capture_output=True, text=True, timeout=300, check=False
    )


def _errors(stderr: str) -> list[str]:
    """The error lines (progress lines such as partition's are not errors); a traceback
    line counts as one."""
    assert "Traceback" not in stderr, stderr[-2000:]
    return [ln for ln in stderr.splitlines() if ln.startswith("gcntrain: error:")]


def _left(disk: Path) -> list[str]:
    return sorted(str(p.relative_to(disk)) for p in disk.rglob("*") if p.is_file())


CASES = {
    "train -o": lambda g, d: ("train", str(g), "--epochs", "2", "--quiet", "-o", str(d / "run")),
    "partition --out": lambda g, d: (
        "partition",
        str(g),
        "-m",
        "random",
        "--parts",
        "4",
        "--out",
        str(d / "p.h5"),
    ),
    "convert": lambda g, d: (
        "convert",
        str(SHARED / "planetoid" / "ind.cora"),
        "-o",
        str(d / "cora.h5"),
    ),
    "shard": lambda g, d: ("shard", str(g), "-o", str(d / "store"), "--parts", "2"),
    "checkpoint": lambda g, d: (
        "train",
        str(g),
        "--epochs",
        "2",
        "--quiet",
        "--checkpoint",
        str(d / "ck"),
        "--checkpoint-every",
        "1",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_full_disk_one_line_exit_2_nothing_left(case, graph, small_disk):
    res = _gcntrain(*CASES[case](graph, small_disk))
    errs = _errors(res.stderr)
    assert res.returncode == 2, res.stderr[-2000:]
    assert len(errs) == 1 and "No space left on device" in errs[0], errs
    assert str(small_disk) in errs[0]
    assert _left(small_disk) == []  # no final file, no temporary


def test_full_disk_under_mpi_every_rank_exits_2(graph, small_disk):
    for case in ("train -o", "checkpoint"):
        res = _gcntrain(*CASES[case](graph, small_disk), "--scheme", "1d", nprocs=2)
        errs = _errors(res.stderr)
        assert res.returncode == 2, res.stderr[-2000:]
        assert len(errs) == 1 and "No space left on device" in errs[0], errs
        assert _left(small_disk) == []


def test_out_dir_that_cannot_be_created_fails_before_training(graph, tmp_path):
    """/proc/x passes a permission check as root but cannot be created: refused up front."""
    res = _gcntrain("train", str(graph), "--epochs", "50", "-o", "/proc/gcntrain-x")
    assert res.returncode == 2
    errs = _errors(res.stderr)
    assert len(errs) == 1 and "--out is not writable" in errs[0]
    assert "epoch" not in res.stdout + res.stderr  # nothing was trained (progress: stderr)
