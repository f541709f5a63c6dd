"""`gcntrain convert` then `gcntrain inspect --json` reproduces the datasets' published counts
(../shared/datasets/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gcntrain.cli.main import run


def shared() -> Path:
    here = Path(__file__).resolve().parents[1].parent / "shared"
    return here if here.is_dir() else Path("/work/shared")


def convert_and_inspect(capsys, tmp_path, argv: list[str]) -> dict:
    out = tmp_path / "g.h5"
    assert run(["convert", *argv, "-o", str(out), "--json"]) == 0
    capsys.readouterr()
    assert run(["inspect", str(out), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cora_counts(capsys, tmp_path):
    d = convert_and_inspect(
        capsys, tmp_path, [str(shared() / "datasets" / "planetoid" / "ind.cora")]
    )
    assert (d["num_nodes"], d["nnz"], d["num_edges"]) == (2708, 10556, 5278)
    assert (d["num_features"], d["num_classes"], d["directed"]) == (1433, 7, False)


def test_citeseer_counts(capsys, tmp_path):
    d = convert_and_inspect(
        capsys, tmp_path, [str(shared() / "datasets" / "planetoid" / "ind.citeseer")]
    )
    assert (d["num_nodes"], d["nnz"], d["num_edges"]) == (3327, 9228, 4552)
    assert d["self_loops"] == 124


@pytest.mark.slow
def test_slashdot_counts(capsys, tmp_path):
    d = convert_and_inspect(
        capsys,
        tmp_path,
        [
            str(shared() / "datasets" / "snap" / "soc-Slashdot0902.txt.gz"),
            "--symmetrize",
            "--self-loops",
            "drop",
        ],
    )
    assert (d["num_nodes"], d["num_edges"], d["nnz"]) == (82168, 504230, 1008460)
    assert d["self_loops"] == 0 and d["directed"] is False
