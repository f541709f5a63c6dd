"""``--norm batch`` under every registered scheme at np = 1..4 (issue 53 part 2): weights
equal serial's (exact configurations) and measured traffic equals the plan on every rank
and phase, BatchNorm's reductions included.

One MPI case, `batchnorm` (tests/mpi/worker_batchnorm.py), trains every scheme of the
registry on each of its own test configurations (plus a few grids splitting two axes at
np = 4) with GCN and GraphSAGE in float64 and GCN in float32; it runs in the one
`tests/mpi/worker_fast.py` launch of each rank count (tests/mpi/batch.py).  The tests below
read its verdict, one test per scheme and rank count.
"""

from __future__ import annotations

import json

import pytest

from gcntrain.schemes.registry import SCHEMES
from tests.mpi.batch import worker_case
from tests.mpi.worker_batchnorm import MODELS, TOLERANCE, extra_configurations

NPROCS = [1, 2, 3, 4]

#: (scheme, nprocs) for every scheme with configurations at that rank count (serial: 1)
CASES = [(name, n) for n in NPROCS for name, sch in SCHEMES.items() if sch.test_configurations(n)]


def _wanted(name: str, nprocs: int) -> list[tuple[str, str, str]]:
    """(model, options, partition) of every run of scheme `name` the case must hold."""
    sch = SCHEMES[name]
    confs = [(opts, part) for opts, part in sch.test_configurations(nprocs)]
    confs += [(opts, part) for s, opts, part in extra_configurations(nprocs) if s == name]
    return sorted(
        (label, json.dumps(opts, sort_keys=True), str(part))
        for label, _ in MODELS
        for opts, part in confs
    )


@pytest.mark.mpi
@pytest.mark.parametrize("scheme,nprocs", CASES)
@worker_case("batchnorm")
def test_batchnorm_equals_serial_and_traffic_equals_plan(worker_batches, scheme, nprocs):
    verdict = worker_batches.verdict(nprocs, "batchnorm")
    assert verdict["ranks"] == nprocs
    errors = [d for d in verdict["details"] if "error" in d]
    assert not errors, errors
    rows = [d for d in verdict["details"] if d["scheme"] == scheme]
    got = sorted(
        (d["model"], json.dumps(d["options"], sort_keys=True), str(d["partition"]))
        for d in rows
        if d["rank"] == 0
    )
    assert got == _wanted(scheme, nprocs)
    dtypes = {label: fields["dtype"] for label, fields in MODELS}
    for d in rows:
        where = f"{scheme} {d['options']} {d['model']} rank {d['rank']}"
        assert not d["plan_diffs"], f"{where}: measured != planned: {d['plan_diffs']}"
        assert {"bn_g", "bn_b"} <= set(d["params"]), where
        if d["exact"]:
            tol = TOLERANCE[dtypes[d["model"]]]
            assert d["rel_err"] <= tol, f"{where}: weights differ from serial by {d['rel_err']}"


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [n for n in NPROCS if n > 1])
@worker_case("batchnorm")
def test_batchnorm_reductions_are_messages(worker_batches, nprocs):
    """The statistics really cross ranks: where every rank holds a block of the rows with
    all their columns (1d, p2p), every rank sends BatchNorm bytes (phases ``*.norm``), which
    the plan has too (the case's measured = planned).  A layout whose ranks hold every row
    of their columns (2D 1 x P, 1.5D with one block) sends none."""
    verdict = worker_batches.verdict(nprocs, "batchnorm")
    rows = [d for d in verdict["details"] if d.get("scheme") in ("1d", "p2p")]
    assert len(rows) == 2 * len(MODELS) * nprocs
    assert all(d["norm_bytes"] > 0 for d in rows), rows
