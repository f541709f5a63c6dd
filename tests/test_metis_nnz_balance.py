"""METIS partitions made for training balance nonzeros (the SpMM work), and rows too.

On a power-law R-MAT graph, unit vertex weights leave the part with the most nonzeros far
above the mean; the default (rows and row nonzeros as two constraints, issue 49; the
nonzeros alone before it) brings it close to the mean.  This
holds for `gcntrain partition -m metis`, and for `--partition metis` computed at start-up by
`simulate` and by `train` under MPI (whose measured traffic equals the plan of the
nnz-weighted partition file, not that of the unit-weight one).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from gcntrain.cli.main import run
from gcntrain.data.generate import rmat
from gcntrain.data.partition_file import read_partition
from gcntrain.data.store import read_graph, write_graph
from gcntrain.simulate.table import read_table
from tests.mpi.launch import gcntrain_exe, run_mpi

P = 3
#: the training/plan options shared by train and simulate
ARGS = ["--epochs", "2", "--early-stopping", "0", "--seed", "1", "--dtype", "float64"]


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    g = rmat(12, seed=3, num_features=8, num_classes=3)
    path = tmp_path_factory.mktemp("metis-nnz") / "rmat12.h5"
    write_graph(path, g)
    return path


@pytest.fixture(scope="module")
def part_files(graph_file):
    """{"degree": PART.h5 of the default METIS run, "none": PART.h5 with unit weights}."""
    out = {}
    for name, extra in (("degree", []), ("none", ["--vweights", "none"])):
        path = graph_file.parent / f"metis-{name}.h5"
        argv = ["partition", str(graph_file), "-m", "metis", "-p", str(P), "-o", str(path)]
        assert run([*argv, *extra]) == 0
        out[name] = path
    return out


def _report(graph_file, tmp_path, capsys, *extra) -> tuple[dict, np.ndarray]:
    path = tmp_path / "part.h5"
    argv = ["partition", str(graph_file), "-m", "metis", "-p", str(P), "-o", str(path)]
    capsys.readouterr()
    assert run([*argv, *extra, "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    return rep, read_partition(path).part


def _imbalances(graph_file, part: np.ndarray) -> tuple[float, float]:
    """(nonzeros max / mean, rows max / mean) over the parts, counted here from the graph."""
    g = read_graph(graph_file)
    nnz = np.bincount(part, weights=np.diff(g.indptr), minlength=P)
    rows = np.bincount(part, minlength=P)
    return float(nnz.max() / nnz.mean()), float(rows.max() / rows.mean())


def test_default_metis_balances_nonzeros_and_report_gives_both(graph_file, tmp_path, capsys):
    default, part_d = _report(graph_file, tmp_path, capsys)
    unit, part_u = _report(graph_file, tmp_path, capsys, "--vweights", "none")
    nnz_d, rows_d = _imbalances(graph_file, part_d)
    nnz_u, rows_u = _imbalances(graph_file, part_u)
    print(f"degree: nnz {nnz_d:.3f} rows {rows_d:.3f}; none: nnz {nnz_u:.3f} rows {rows_u:.3f}")
    assert default["vweights"] == "rows+degree" and unit["vweights"] == "none"
    for rep, nnz, rows in ((default, nnz_d, rows_d), (unit, nnz_u, rows_u)):
        assert rep["nnz_imbalance"] == pytest.approx(nnz, rel=1e-12)
        assert rep["size_imbalance"] == pytest.approx(rows, rel=1e-12)
    assert nnz_d <= 1.1 and nnz_u > 1.5  # measured 1.012 and 2.514 (rmat scale 12, 3 parts)
    assert max(rows_u, rows_d) <= 1.04  # unit weights balance rows; the default too
    assert read_partition(tmp_path / "part.h5").params["vweights"] == "none"
    # the human report names both imbalances too
    argv = ["partition", str(graph_file), "-m", "metis", "-p", str(P)]
    assert run([*argv, "-o", str(tmp_path / "h.h5"), "--report"]) == 0
    lines = capsys.readouterr().out.splitlines()
    shown = {ln.split()[0]: ln.split()[1] for ln in lines if ln.strip()}
    assert float(shown["nnz_imbalance"]) == pytest.approx(nnz_d, rel=1e-4)
    assert float(shown["size_imbalance"]) == pytest.approx(rows_d, rel=1e-4)
    assert shown["vweights"] == "rows+degree"


def _plan(graph_file, capsys, scheme: str, partition: str, per_rank=None) -> dict:
    argv = ["simulate", str(graph_file), "--ranks", str(P), "--scheme", scheme]
    argv += ["--partition", partition, *ARGS, "--json"]
    if per_rank is not None:
        argv += ["--per-rank", str(per_rank)]
    capsys.readouterr()
    assert run(argv) == 0
    return json.loads(capsys.readouterr().out)


def _spmm_balance(plan: dict) -> float:
    return plan["spmm_nnz_max"] / plan["spmm_nnz_mean"]


@pytest.mark.parametrize("scheme", ["p2p", "hier"])
def test_startup_metis_plans_balanced_spmm(graph_file, part_files, capsys, scheme):
    files = part_files
    startup = _spmm_balance(_plan(graph_file, capsys, scheme, "metis"))
    weighted = _spmm_balance(_plan(graph_file, capsys, scheme, str(files["degree"])))
    unit = _spmm_balance(_plan(graph_file, capsys, scheme, str(files["none"])))
    print(
        f"{scheme}: spmm nnz max/mean startup {startup:.3f}, file {weighted:.3f}, unit {unit:.3f}"
    )
    assert startup == weighted <= 1.1 and unit > 1.5


@pytest.mark.mpi
def test_train_metis_at_startup_is_nnz_weighted(graph_file, part_files, tmp_path, capsys):
    """The measured per-rank traffic of `train --partition metis` is the plan of the
    nnz-weighted partition file (and not the plan of the unit-weight one)."""
    files = part_files
    measured = tmp_path / "measured.csv"
    argv = [*gcntrain_exe(), "train", str(graph_file), "--scheme", "p2p", "--partition", "metis"]
    res = run_mpi(P, [*argv, *ARGS, "--quiet", "--per-rank", str(measured)], timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    plans = {}
    for name, path in files.items():
        table = tmp_path / f"planned-{name}.csv"
        plan = _plan(graph_file, capsys, "p2p", str(path), per_rank=table)
        plans[name] = (read_table(table), _spmm_balance(plan))
    got = read_table(measured)
    assert got == plans["degree"][0] and got != plans["none"][0]
    assert len({r for r, _ in got}) == P and any(v[0] > 0 for v in got.values())
    assert plans["degree"][1] <= 1.1 < 1.5 < plans["none"][1]
