"""Distributed schemes under MPI at np = 1..4: Ops equal to SerialOps op by op, training
equal to serial, measured traffic equal to the plan on every rank and phase, exact volumes.

The cases are those of `tests/mpi/worker.py` (the full matrix: scripts/check_mpi_acceptance.py)
and the reduced ones of `tests/mpi/worker_fast.py`; all the cases of one rank count run in one
mpiexec launch of `tests/mpi/worker_fast.py` (killed after a wall-clock limit; see
tests/mpi/batch.py), which reduces every rank's verdict, so a failure on any rank fails the test.
A hand-written case leaves out the runs that the registry-generated case (`registry`: every
registered scheme on its own `test_configurations`) trains too; `_check` asserts that each
one left out is a run of the `registry` case at that rank count, and that it passes there.
"""

from __future__ import annotations

import json

import pytest

from gcntrain.comm.grid import factorizations
from gcntrain.schemes.registry import SCHEMES
from tests.mpi.batch import worker_case
from tests.mpi.cases import (
    CORA_GRIDS,
    CORA_VERTEXCUT_MODEL,
    EQUIV_RUNS,
    REGISTRY_NPROCS,
    REGISTRY_TOLERANCE,
    registry_trains,
)

NPROCS = [1, 2, 3, 4]


def _check(batches, nprocs: int, case: str) -> dict:
    verdict = batches.verdict(nprocs, case)
    assert verdict["ranks"] == nprocs
    bad = [d for d in verdict["details"] if d.get("plan_diffs") or d.get("rel_err", 0) > 1e-4]
    assert verdict["ok"], f"{case} failed at np={nprocs}: {bad or verdict['details']}"
    left = [d for d in verdict["details"] if "covered_by" in d]
    if left:
        _registry_passes(batches, nprocs, left)
    return verdict


def _registry_rows(batches, nprocs: int) -> list[dict]:
    """The `registry` case's rows of registered schemes at `nprocs`, asserted to pass (the
    rule of `test_every_registered_scheme_on_its_own_test_configurations`)."""
    verdict = batches.verdict(nprocs, "registry")
    assert verdict["ranks"] == nprocs
    rows = [d for d in verdict["details"] if d.get("scheme") in SCHEMES or "scheme" not in d]
    bad = [
        d
        for d in rows
        if "scheme" not in d
        or d["plan_diffs"]
        or (d["exact"] and not d["rel_err"] <= REGISTRY_TOLERANCE)
    ]
    assert not bad, f"registry failed at np={nprocs}: {bad}"
    return rows


def _registry_passes(batches, nprocs: int, left: list[dict]) -> None:
    """The runs a hand-written case left out (`worker.covered`: rows with ``covered_by``)
    are runs the `registry` case trains at this rank count, and it passes them."""
    rows = _registry_rows(batches, nprocs)
    for d in left:
        name, opts, part = d["registry_scheme"], d["options"], d["partition"]
        assert d["covered_by"] == "registry" and registry_trains(nprocs, name, opts, part), d
        sch = SCHEMES[name]
        want = (sch.configure(nprocs, dict(opts)), part or sch.default_partition)
        assert any(
            r["rank"] == 0
            and r["scheme"] == name
            and (sch.configure(nprocs, dict(r["options"])), r["partition"] or sch.default_partition)
            == want
            for r in rows
        ), (d, "not among the registry case's runs")


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", NPROCS)
@worker_case("equivfast")
def test_weights_equal_serial_and_traffic_equals_plan(worker_batches, nprocs):
    """Cora in float64 (1e-5), R-MAT in float64 (1e-5) and float32 (1e-4): 1d, 1.5d, p2p
    block/random/METIS, 2d on 1 x P, P x 1 (and 2 x 2).  Cora in float32 is the 20-epoch
    case at np = 4 (`test_cora_at_np4_equals_serial_epoch_by_epoch`)."""
    verdict = _check(worker_batches, nprocs, "equivfast")
    labels = {(d["graph"], d["dtype"], d["scheme"]) for d in verdict["details"]}
    c = 2 if nprocs == 4 else 1
    grids = {f"2d-1x{nprocs}", f"2d-{nprocs}x1"} | ({"2d-2x2"} if nprocs == 4 else set())
    for g, dt in EQUIV_RUNS:
        for s in ("1d", f"1.5d-c{c}", "p2p-block", "p2p-random", "p2p-metis", *grids):
            assert (g, dt, s) in labels
        for s in ("1d-messages", "p2p-random-messages"):
            assert (g, dt, s) in labels


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", REGISTRY_NPROCS)
@worker_case("registry")
def test_every_registered_scheme_on_its_own_test_configurations(worker_batches, nprocs):
    """Generated from the registry: every scheme of `SCHEMES` on each of its
    `test_configurations` (R-MAT n = 509, GCN, float64): exact ones equal serial within
    1e-5, every one's measured traffic equals its plan.  A new scheme is in it by being
    registered (tests/test_scheme_plugin.py adds throwaway ones, to the same launch's case:
    their rows are that module's to judge; one of them fails its plan on purpose)."""
    verdict = worker_batches.verdict(nprocs, "registry")
    # every rank's failing rows are in the details (rank 0's passing ones too), and a job
    # that aborted leaves rows without a scheme
    rows = _registry_rows(worker_batches, nprocs)
    if len(rows) == len(verdict["details"]):  # no throwaway scheme: the case's own verdict
        assert verdict["ok"], f"registry failed at np={nprocs}: {verdict['details']}"
    got = sorted(
        (d["scheme"], json.dumps(d["options"], sort_keys=True), str(d["partition"]))
        for d in rows
        if d["rank"] == 0
    )
    want = sorted(
        (name, json.dumps(opts, sort_keys=True), str(part))
        for name, sch in SCHEMES.items()
        for opts, part in sch.test_configurations(nprocs)
    )
    assert got == want
    # every scheme has configurations of its own (serial: one rank only)
    assert {name for name, _, _ in got} == set(SCHEMES) - ({"serial"} if nprocs > 1 else set())


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", NPROCS)
@worker_case("equiv3dfast")
def test_split_3d_weights_equal_serial_and_traffic_equals_plan(worker_batches, nprocs):
    """Every ordered X x Y x Z = P (2 x 2 x 2 at np = 8: `test_3d_and_plexus_on_2x2x2`) for an
    R-MAT graph with n = 509 (divisible by no grid dimension), GCN and GraphSAGE, and for
    Cora (GCN) on the grids of `CORA_GRIDS`; float64 within 1e-5."""
    verdict = _check(worker_batches, nprocs, "equiv3dfast")
    labels = {(d["graph"], d["model"], d["scheme"]) for d in verdict["details"]}
    grids = ["x".join(map(str, f)) for f in factorizations(nprocs, 3)]
    for m in ("gcn", "sage"):
        for grid in grids:
            assert ("rmat-509", m, f"3d-{grid}") in labels
    cora = {s for g, _, s in labels if g == "cora"}
    assert cora == {f"3d-{grid}" for grid in CORA_GRIDS[nprocs]}


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", NPROCS)
@worker_case("equivplexusfast")
def test_plexus_weights_equal_serial_and_traffic_equals_plan(worker_batches, nprocs):
    """Every ordered X x Y x Z = P (2 x 2 x 2 at np = 8: `test_3d_and_plexus_on_2x2x2`): R-MAT
    n = 509 GraphSAGE with both evaluation orders in one model on every grid, Cora GCN on the
    grids of `CORA_GRIDS`; R-MAT GCN, --permute double and --block-rows on the last grid;
    float64 within 1e-5, measured traffic equal to the plan."""
    verdict = _check(worker_batches, nprocs, "equivplexusfast")
    labels = {(d["graph"], d["model"], d["scheme"]) for d in verdict["details"]}
    grids = ["x".join(map(str, f)) for f in factorizations(nprocs, 3)]
    for grid in grids:
        assert ("rmat-509", "sage", f"plexus-{grid}") in labels
    for grid in CORA_GRIDS[nprocs]:
        assert ("cora", "gcn", f"plexus-{grid}") in labels
    last = grids[-1]
    for g, m, extra in (
        ("cora", "gcn", "-double"),
        ("rmat-509", "sage", "-double"),
        ("rmat-509", "sage", "-blocks"),
        ("rmat-509", "gcn", ""),
        ("rmat-509", "gcn", "-double"),
    ):
        assert (g, m, f"plexus-{last}{extra}") in labels


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [8])
@worker_case("equiv8")
def test_3d_and_plexus_on_2x2x2(worker_batches, nprocs):
    """np = 8, the one grid with every dimension > 1: split-3D (R-MAT n = 509, GCN and
    GraphSAGE) and Plexus (R-MAT GraphSAGE and GCN, --permute double, --block-rows; an n = 8
    graph with empty row and column chunks on 8-long axes, every grid and order, each with
    both models between them) equal serial (float64, 1e-5) with measured traffic equal to the
    plan.  Cora runs at np = 1..4 above."""
    verdict = _check(worker_batches, nprocs, "equiv8")
    labels = {(d["graph"], d["model"], d["scheme"]) for d in verdict["details"]}
    for m in ("gcn", "sage"):
        assert ("rmat-509", m, "3d-2x2x2") in labels
        for extra in ("", "-double"):
            assert ("rmat-509", m, f"plexus-2x2x2{extra}") in labels
        assert ("tiny-8", m, "plexus-1x8x1-double") in labels  # widths 2..5 over 8 ranks
    assert ("rmat-509", "sage", "plexus-2x2x2-blocks") in labels
    tiny = {s for g, _, s in labels if g == "tiny-8"}
    grids = ("1x1x8", "8x1x1", "1x8x1", "2x4x1")
    assert tiny == {f"plexus-{g}-{p}" for g in grids for p in ("none", "double")}


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", NPROCS)
@worker_case("equivvertexcut")
def test_vertexcut_weights_equal_serial_and_traffic_equals_plan(worker_batches, nprocs):
    """Libra vertex cut, cd-0: R-MAT n = 509 with GCN and GraphSAGE, Cora with the model of
    `CORA_VERTEXCUT_MODEL` (each model at two rank counts), float64 within 1e-5, measured
    traffic equal to the plan on every rank and phase (a Libra partition file too); cd-2
    and 0c: traffic equal to the plan, drift from serial reported."""
    verdict = _check(worker_batches, nprocs, "equivvertexcut")
    labels = {(d["graph"], d["model"], d["scheme"]) for d in verdict["details"]}
    runs = [("rmat-509", "gcn"), ("rmat-509", "sage"), ("cora", CORA_VERTEXCUT_MODEL[nprocs])]
    for g, m in runs:
        for s in ("vertexcut-cd0", "vertexcut-delay-2", "vertexcut-delay-none"):
            assert (g, m, s) in labels
    assert ("rmat-509", "gcn", "vertexcut-cd0-file") in labels
    drift = [d["drift_rel_err"] for d in verdict["details"] if "drift_rel_err" in d]
    assert all(x == 0.0 for x in drift) if nprocs == 1 else max(drift) > 0


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", NPROCS)
@worker_case("equivhier")
def test_hier_weights_equal_serial_and_traffic_equals_plan(worker_batches, nprocs):
    """SuperGCN hier with 32-bit messages, pre / post / hybrid on METIS: Cora and R-MAT
    n = 509, GCN and GraphSAGE, float64 within 1e-5, measured traffic equal to the plan on
    every rank and phase; label propagation with LayerNorm equals serial too; Int2 and Int4
    (groups of 8 rows): traffic equal to the plan, Int2 reproducible for a seed, drift from
    serial reported."""
    verdict = _check(worker_batches, nprocs, "equivhier")
    labels = {(d["graph"], d.get("model"), d["scheme"]) for d in verdict["details"]}
    for g in ("cora", "rmat-509"):
        for m in ("gcn", "sage"):
            for a in ("pre", "post", "hybrid"):
                assert (g, m, f"hier-{a}") in labels
    for s in ("hier-lp-norm", "hier-int2", "hier-int4-g8"):
        assert ("rmat-509", None, s) in labels
    drift = [d["drift"] for d in verdict["details"] if "drift" in d]
    assert all(x == 0.0 for x in drift) if nprocs == 1 else max(drift) > 0


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [2, 4])
@worker_case("delayed")
def test_vertexcut_delayed_sends_the_planned_bucket_each_epoch(worker_batches, nprocs):
    """cd-3: every epoch's measured traffic equals that epoch's plan (bucket e mod 3, the
    roots' totals from epoch 3 on); 3 steady epochs move cd-0's bytes of one epoch."""
    verdict = _check(worker_batches, nprocs, "delayed")
    sent = verdict["details"][-1]["per_epoch_sent"]
    assert sent[3:6] == sent[6:9] and sent[0] < sent[3]


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", NPROCS)
@worker_case("ops")
def test_every_ops_method_of_every_scheme_equals_serial_ops(worker_batches, nprocs):
    """Op by op, on random matrices, independent of training (float64, 1e-12 relative);
    Plexus layer by layer at each call's placements, GCN and GraphSAGE (self term)."""
    verdict = _check(worker_batches, nprocs, "ops")
    schemes = {d["scheme"] for d in verdict["details"]}
    assert {"1d", "p2p", "1.5d-c1", f"2d-1x{nprocs}", f"2d-{nprocs}x1"} <= schemes
    assert {"1d-messages", "p2p-messages", "1.5d-c1-messages", "p2p-split"} <= schemes
    assert {f"3d-1x1x{nprocs}", f"3d-{nprocs}x1x1"} <= schemes
    grids = ["x".join(map(str, f)) for f in factorizations(nprocs, 3)]
    assert {f"plexus-{g}" for g in grids} | {f"plexus-{g}-double" for g in grids} <= schemes
    assert "vertexcut" in schemes and "hier" in schemes
    assert ("serial" in schemes) == (nprocs == 1)
    # generated: every registered scheme with configurations at np is among them (a
    # label is the scheme's name, then "-" and what sets the run apart)
    ran = {label.split("-")[0] for label in schemes}
    assert ran == {name for name, sch in SCHEMES.items() if sch.test_configurations(nprocs)}


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", NPROCS)
@worker_case("windows")
def test_node_windows_share_every_members_rows(worker_batches, nprocs):
    """`gcntrain.comm.shared.SharedRows`: every member reads every member's rows after one
    fence, across widths and dtypes, with the slot before intact; none when turned off."""
    verdict = _check(worker_batches, nprocs, "windows")
    steps = [d for d in verdict["details"] if "step" in d]
    assert len(steps) == (5 * nprocs if nprocs > 1 else 0)


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", NPROCS)
@worker_case("windowbits")
def test_node_windows_give_the_bits_of_the_multi_node_paths(worker_batches, nprocs):
    """1d, 1.5d and p2p through node windows equal the in-turn broadcasts / per-source
    products bit for bit; a window failing on one rank only leaves all on messages."""
    verdict = _check(worker_batches, nprocs, "windowbits")
    labels = {d["scheme"] for d in verdict["details"]}
    for s in ("1d", "p2p", "1.5d-c1"):
        assert {s, f"{s}-mpi-fails-on-one", f"{s}-no-room-on-one"} <= labels


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", NPROCS)
@worker_case("directed")
def test_directed_graph_uses_transposed_rows(worker_batches, nprocs):
    _check(worker_batches, nprocs, "directed")


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", [1, 3])
@worker_case("nomask")
def test_graph_without_validation_mask(worker_batches, nprocs):
    _check(worker_batches, nprocs, "nomask")


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", NPROCS)
@worker_case("volume")
def test_per_spmm_volume_matches_theory(worker_batches, nprocs):
    """1D receives (n - n_p) f words per rank; p2p sends connectivity-1 rows in total."""
    verdict = _check(worker_batches, nprocs, "volume")
    p2p = [d for d in verdict["details"] if d["scheme"] == "p2p"]
    assert p2p and all(d["rows_sent"] == d["km1"] for d in p2p)
    if nprocs > 1:
        assert any(d["km1"] > 0 for d in p2p)


@pytest.mark.mpi
@worker_case("accuracy20")
def test_cora_at_np4_equals_serial_epoch_by_epoch(worker_batches):
    """Cora, reference hyperparameters (float32), 20 epochs at np = 4 under every kind of
    scheme: each epoch's loss (1e-4) and accuracies, the final test accuracy and every row's
    prediction equal serial's.  The 200-epoch accuracy run of every scheme is
    `scripts/check_mpi_acceptance.py --case accuracy`; the serial accuracy is
    tests/test_kipf.py."""
    verdict = _check(worker_batches, 4, "accuracy20")
    labels = {d["scheme"] for d in verdict["details"]}
    assert labels == {
        "1d",
        "1.5d-c2",
        "p2p-metis",
        "2d-2x2",
        "3d-1x2x2",
        "plexus-2x1x2",
        "plexus-2x2x1-double",
        "vertexcut",
    }
    assert all(d["epochs"] == 20 and d["same_predictions"] for d in verdict["details"])


@pytest.mark.mpi
@pytest.mark.parametrize("nprocs", NPROCS)
@worker_case("planners")
def test_auto_chooses_alike_whichever_ranks_plan(worker_batches, nprocs):
    """``--scheme auto`` planned by one rank, two or all of them (one per core of a node
    with that many cores, `gcntrain.comm.node.working_ranks`) chooses the same, and hands
    over the chosen configuration's numbering as the scheme computes it; a METIS numbering
    computed by rank 0 and sent (`gcntrain.job.numbering`) is every rank's own."""
    verdict = _check(worker_batches, nprocs, "planners")
    said = [d for d in verdict["details"] if "choices" in d]
    assert len(said) == 1 and said[0]["choices"]["1"]["label"]
    handed = [d for d in verdict["details"] if d.get("handed")]
    assert handed and all(d["same"] for d in handed)
    once = [d for d in verdict["details"] if "once" in d]  # METIS by rank 0, sent
    assert len(once) >= 3 * nprocs and all(d["same"] for d in once)
