"""Several MPI test cases in one job: `mpiexec -n P python tests/mpi/worker_fast.py CASE...`.

Runs the cases of `tests/mpi/worker.py` (and the few defined here) one after another in one
launch, so Python, mpi4py and the Numba cache load once per rank count instead of once per
case.  After each case rank 0 prints that case's verdict line as `worker.py` prints it
(``{"case", "ranks", "ok", "details", "sizes"}``, plus the case's ``seconds``); verdicts are
reduced over all ranks, so a failure on any rank fails the case.  An exception escaping a case
aborts the whole job (one rank's error cannot be agreed while the others wait in a
collective); the caller reports every case without a verdict line as failed, with the job's
stderr.

Two things are shared within the job, neither changing what a case checks:

- the serial reference of a (graph, configuration, masks) is trained once, by rank 0, and
  broadcast (every rank trained the same model before, all at once on the shared cores);
- Cora is read from its Planetoid files once per job (each case gets its own copy).

What the suite runs less of than `worker.py` (whose full matrix is
scripts/check_mpi_acceptance.py): the cases defined here (`equivfast`, `equiv3dfast`,
`equivplexusfast`, `equiv8`, `accuracy20`; each docstring says what it leaves out), and
`case_equivvertexcut` trains Cora with one model per rank count (`vertexcut_runs`; R-MAT
keeps both).  And no hand-written case trains a run that the registry-generated case
(`case_registry`) trains at the same rank count (`registry_covered`, as `worker.covered`):
such a run is a detail naming the `registry` case instead, which tests/test_mpi_schemes.py
checks the `registry` case passes.

Driven by `tests/mpi/batch.py` (tests/test_mpi_schemes.py, tests/test_checkpoint.py, and the
modules whose workers' cases join the launch: tests/test_batchnorm_schemes.py,
tests/test_p2p_reverse.py, tests/test_device_schemes.py).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the repository too: cases of test modules (`case_device`) and their workers import `tests.`
if str(Path(__file__).resolve().parents[2]) not in sys.path:
    sys.path.insert(1, str(Path(__file__).resolve().parents[2]))

import worker as W  # noqa: E402  (tests/mpi/worker.py, beside this file)
from cases import (  # noqa: E402
    CORA_GRIDS,
    CORA_VERTEXCUT_MODEL,
    EQUIV_RUNS,
    REGISTRY_GRAPH,
    REGISTRY_TOLERANCE,
    REGISTRY_TRAINING,
    registry_trains,
)
from worker_batchnorm import case_batchnorm  # noqa: E402
from worker_p2p_reverse import case_directed as case_p2preverse  # noqa: E402
from worker_p2p_reverse import case_gemat11  # noqa: E402

from gcntrain.comm.communicator import Comm  # noqa: E402
from gcntrain.model.trainer import TrainConfig  # noqa: E402

_plain_serial_fit = W.serial_fit
_plain_cora = W.cora
_serial_cache: dict[str, object] = {}
_cora_cache: list = []


def _key(g, cfg, masks) -> str:
    """Identity of a serial reference: graph contents and name, configuration, masks."""
    h = hashlib.sha256()
    h.update(g.name.encode())
    h.update(g.content_hash().encode())
    h.update(repr(cfg).encode())
    for name, m in sorted((masks or {}).items()):
        h.update(name.encode())
        h.update(b"-" if m is None else np.packbits(np.asarray(m, dtype=bool)).tobytes())
    return h.hexdigest()


def shared_serial_fit(g, cfg, masks=None):
    """`worker.serial_fit`, trained on rank 0 once per job and broadcast to every rank."""
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    key = W.bcast_object(_key(g, cfg, masks) if world.Get_rank() == 0 else None)
    if key not in _serial_cache:
        res = _plain_serial_fit(g, cfg, masks) if world.Get_rank() == 0 else None
        _serial_cache[key] = W.bcast_object(res)
    return _serial_cache[key]


def shared_cora():
    """Cora, read once per job; every call gets its own copy."""
    if not _cora_cache:
        _cora_cache.append(_plain_cora())
    return copy.deepcopy(_cora_cache[0])


_plain_vertexcut_runs = W.vertexcut_runs


def vertexcut_runs():
    """`worker.vertexcut_runs` with Cora in one model per rank count
    (`CORA_VERTEXCUT_MODEL`): what `worker.case_equivvertexcut` runs here."""
    from mpi4py import MPI

    model = CORA_VERTEXCUT_MODEL[MPI.COMM_WORLD.Get_size()]
    return [r for r in _plain_vertexcut_runs() if r[0] != "cora" or r[2] == model]


_registry_hash: list[str] = []


def registry_graph():
    """The `registry` case's graph (`REGISTRY_GRAPH`: R-MAT n = 509)."""
    return W.rmat_odd(9, **REGISTRY_GRAPH)


def _partition_name(part) -> str | None:
    """A case's partition as `registry_trains` names it: None or a name as given, "block"
    for `block_partition`'s vector, "given" for any other vector."""
    from gcntrain.partition.basic import block_partition

    if part is None or isinstance(part, str):
        return part
    p = np.asarray(part)
    return "block" if np.array_equal(p, block_partition(p.size, int(p.max()) + 1)) else "given"


def registry_covered(g, cfg, label, scheme, opts, part, masks=None) -> dict | None:
    """`worker.covered` here: a run of a hand-written case that the `registry` case trains
    too (the same graph, `registry_graph`, and training, `REGISTRY_TRAINING`, but for the
    hand-written case's epochs being no more than the registry's; the same scheme,
    options and partition, `registry_trains`, at this rank count; through node windows,
    as every run but a "-messages" one goes) is left out of the hand-written case: the
    `registry` case asserts the same of it (weights equal serial's within the same
    tolerance where exact, measured traffic equal to the plan on every rank and phase),
    and tests/test_mpi_schemes.py checks that each left-out run is one it passes."""
    from dataclasses import replace

    from mpi4py import MPI

    if label.endswith("-messages") or masks is not None:
        return None
    if not _registry_hash:
        _registry_hash.append(registry_graph().content_hash())
    reg = TrainConfig(**REGISTRY_TRAINING)
    if cfg.epochs > reg.epochs or replace(cfg, epochs=reg.epochs) != reg:
        return None
    if g.content_hash() != _registry_hash[0]:
        return None
    name = _partition_name(part)
    if not registry_trains(MPI.COMM_WORLD.Get_size(), scheme, opts, name):
        return None
    return {"covered_by": "registry", "registry_scheme": scheme, "options": opts, "partition": name}


W.serial_fit = shared_serial_fit
W.cora = shared_cora
W.vertexcut_runs = vertexcut_runs
W.covered = registry_covered


def case_equivfast(world):
    """`worker.case_equiv` on the runs of `EQUIV_RUNS` (Cora in float64, R-MAT n = 509 in
    float64 and float32): 1D, 1.5D, p2p on block, random and METIS partitions, 2D on every
    grid of `grids_2d`; weights after 5 epochs equal serial (1e-5 in float64, 1e-4 in
    float32) and measured bytes/messages equal the plan."""
    details, ok = [], True
    graphs = {
        "cora": W.cora(),
        "rmat-509": W.rmat_odd(9, edge_factor=8, seed=11, num_features=24, num_classes=4),
    }
    for gname, dtype in EQUIV_RUNS:
        g, tol = graphs[gname], {"float64": 1e-5, "float32": 1e-4}[dtype]
        cfg = TrainConfig(epochs=5, seed=3, dtype=dtype, early_stopping=0)
        cases = W.scheme_cases(g, world.size)
        good, det = W.check_cases(world, g, cfg, cases, tol, {"graph": gname, "dtype": dtype})
        ok &= good
        details += det
    return ok, details


def case_equiv3dfast(world):
    """`worker.case_equiv3d` with Cora (GCN) on the grids of `CORA_GRIDS` only: split-3D on
    every grid of `grids_3d` for R-MAT n = 509, GCN and GraphSAGE; weights after 5 epochs
    equal serial (float64, 1e-5), measured bytes/messages equal the plan."""
    details, ok = [], True
    rm = W.rmat_odd(9, edge_factor=8, seed=11, num_features=24, num_classes=4)
    cases = [(f"3d-{grid}", "3d", {"grid": grid}, None) for grid in W.grids_3d(world.size)]
    on_cora = [c for c in cases if c[2]["grid"] in CORA_GRIDS[world.size]]
    runs = [("cora", W.cora(), "gcn", on_cora)]
    runs += [("rmat-509", rm, m, cases) for m in ("gcn", "sage")]
    for gname, g, model, todo in runs:
        cfg = TrainConfig(epochs=5, seed=3, dtype="float64", early_stopping=0, model=model)
        good, det = W.check_cases(world, g, cfg, todo, 1e-5, {"graph": gname, "model": model})
        ok &= good
        details += det
    return ok, details


def case_equivplexusfast(world):
    """`worker.case_equivplexus` at np <= 4 with Cora (GCN: product first in layer 0) on the
    grids of `CORA_GRIDS` and --permute double on the last grid; R-MAT n = 509 GraphSAGE (a
    hidden layer wider than the input: both orders) on every grid, with --permute double and
    --block-rows on the last; R-MAT GCN on the last grid, plain and double.  Weights after 5
    epochs equal serial (float64, 1e-5), measured bytes/messages equal the plan."""
    rm = W.rmat_odd(9, edge_factor=8, seed=11, num_features=12, num_classes=4)
    cases, double, blocks = W.plexus_cases(world.size)
    on_cora = [c for c in cases if c[2]["grid"] in CORA_GRIDS[world.size]]
    runs = [
        ("cora", W.cora(), "gcn", (16,), on_cora + [double]),
        ("rmat-509", rm, "sage", (20, 6), cases + [double, blocks]),
        ("rmat-509", rm, "gcn", (20, 6), [cases[-1], double]),
    ]
    return W.check_model_runs(world, runs)


def case_equiv8(world):
    """`worker.case_equiv3d` and `case_equivplexus` at np = 8 without Cora (Cora runs at
    np = 1..4): split-3D 2 x 2 x 2 on R-MAT n = 509 GCN and GraphSAGE; Plexus 2 x 2 x 2 on
    R-MAT GraphSAGE and GCN (plain, --permute double, --block-rows); the n = 8 graph whose
    row and column chunks are empty on 8-long axes, every grid and order once per model (GCN
    on the plain orders and 1x8x1 double, GraphSAGE on the double ones); weights after 5
    epochs equal serial (float64, 1e-5), measured bytes/messages equal the plan."""
    assert world.size == 8, "equiv8 is the np = 8 case"
    details, ok = [], True
    rm = W.rmat_odd(9, edge_factor=8, seed=11, num_features=24, num_classes=4)
    for model in ("gcn", "sage"):
        cfg = TrainConfig(epochs=5, seed=3, dtype="float64", early_stopping=0, model=model)
        cases = [("3d-2x2x2", "3d", {"grid": "2x2x2"}, None)]
        good, det = W.check_cases(
            world, rm, cfg, cases, 1e-5, {"graph": "rmat-509", "model": model}
        )
        ok &= good
        details += det
    rm12 = W.rmat_odd(9, edge_factor=8, seed=11, num_features=12, num_classes=4)
    plain = ("plexus-2x2x2", "plexus", {"grid": "2x2x2"}, None)
    double = ("plexus-2x2x2-double", "plexus", {"grid": "2x2x2", "permute": "double"}, None)
    blocks = ("plexus-2x2x2-blocks", "plexus", {"grid": "2x2x2", "block_rows": 50}, None)
    tiny, more = W.tiny8_cases()
    runs = [
        ("rmat-509", rm12, "sage", (20, 6), [plain, double, blocks]),
        ("rmat-509", rm12, "gcn", (20, 6), [plain, double]),
        # every grid and order with each model, the two models taking turns
        ("tiny-8", tiny, "gcn", (2, 5), more[0::2] + [more[5]]),
        ("tiny-8", tiny, "sage", (2, 5), more[1::2]),
    ]
    good, det = W.check_model_runs(world, runs)
    return ok and good, details + det


#: (label, scheme, options, partition) of `case_accuracy20`: every kind of scheme at np = 4
ACCURACY_CASES = [
    ("1d", "1d", {}, None),
    ("1.5d-c2", "1.5d", {"replication": 2}, None),
    ("p2p-metis", "p2p", {}, "metis"),
    ("2d-2x2", "2d", {"grid": "2x2"}, None),
    ("3d-1x2x2", "3d", {"grid": "1x2x2"}, None),
    ("plexus-2x1x2", "plexus", {"grid": "2x1x2"}, None),
    ("plexus-2x2x1-double", "plexus", {"grid": "2x2x1", "permute": "double"}, None),
    ("vertexcut", "vertexcut", {}, "libra"),
]


def case_accuracy20(world):
    """Cora with the reference hyperparameters (float32, dropout, weight decay, the early
    stopping rule evaluated every epoch) for 20 epochs under every kind of scheme: each
    epoch's training loss and accuracies, the final test accuracy and every local row's
    predicted class equal the serial run's.  (The full 200-epoch run at np = 4 is
    `scripts/check_mpi_acceptance.py --case accuracy`; the serial accuracy itself is
    tests/test_kipf.py.)"""
    assert world.size == 4, "accuracy20 is the np = 4 case"
    from gcntrain.partition.metis import metis_partition

    g = W.cora()
    cfg = TrainConfig(seed=123, dtype="float32", epochs=20)
    ser = W.serial_fit(g, cfg)
    ok, details = True, []
    for label, scheme, opts, part in ACCURACY_CASES:
        if part == "metis":
            part = metis_partition(g.indptr, g.indices, world.size, seed=0)
        run = W.run_scheme(world, g, scheme, opts, part, cfg).result
        hist, shist = run.history, ser.history
        loss_err = max(
            (abs(a.loss - b.loss) / abs(b.loss) for a, b in zip(hist, shist)), default=1.0
        )
        same_acc = all(
            (a.train_acc, a.val_acc, a.test_acc) == (b.train_acc, b.val_acc, b.test_acc)
            for a, b in zip(hist, shist)
        )
        same_pred = bool(np.array_equal(run.predictions, ser.predictions[run.rows]))
        good = (
            len(hist) == len(shist) == 20
            and loss_err <= 1e-4
            and same_acc
            and same_pred
            and run.final["test_acc"] == ser.final["test_acc"]
        )
        ok &= good
        if not good or world.rank == 0:
            details.append(
                {
                    "scheme": label,
                    "rank": world.rank,
                    "epochs": len(hist),
                    "loss_rel_err": loss_err,
                    "same_accuracies": same_acc,
                    "same_predictions": same_pred,
                    "test_acc": run.final["test_acc"],
                    "serial_test_acc": ser.final["test_acc"],
                }
            )
    return ok, details


@contextlib.contextmanager
def _registry_extra():
    """The registry with the schemes the launch names in ``GCNTRAIN_TEST_REGISTRY_EXTRA``
    (`tests.mpi.batch.REGISTRY_EXTRA_ENV`: tests/test_scheme_plugin.py's throwaway ones)
    while inside: loaded as ``GCNTRAIN_SCHEMES`` loads a site's schemes when the registry is
    built (`registry.entries` reading it, `registry._load` checking each one's pricing),
    removed again after, so that the launch's other cases see the registered schemes only."""
    from gcntrain.schemes import registry

    spec = os.environ.get("GCNTRAIN_TEST_REGISTRY_EXTRA", "")
    before = os.environ.get(registry.EXTRA_ENV)
    os.environ[registry.EXTRA_ENV] = spec
    try:
        extra = [e for e in registry.entries() if e not in registry.ENTRIES]
    finally:
        if before is None:
            os.environ.pop(registry.EXTRA_ENV)
        else:
            os.environ[registry.EXTRA_ENV] = before
    added = {s.name: s for s in map(registry._load, extra) if s.name not in registry.SCHEMES}
    registry.SCHEMES.update(added)
    try:
        yield registry.SCHEMES
    finally:
        for name in added:
            registry.SCHEMES.pop(name, None)


def case_registry(world):
    """Every registered scheme (`SCHEMES`, with those ``GCNTRAIN_SCHEMES`` adds, and those
    the launch adds for this case: `_registry_extra`) on each of its own
    `Scheme.test_configurations` at this rank count: R-MAT n = 509 with GCN in float64 for
    6 epochs; an exact configuration equals serial within 1e-5, and every configuration's
    measured traffic equals its plan on every rank and phase."""
    with _registry_extra() as schemes:
        return _registry_runs(world, schemes)


def _registry_runs(world, schemes):
    g = registry_graph()
    cfg = TrainConfig(**REGISTRY_TRAINING)
    ser = W.serial_fit(g, cfg)
    ok, details = True, []
    for name, sch in list(schemes.items()):
        for opts, part in sch.test_configurations(world.size):
            _, exact, err, diffs = W.run_against_serial(world, g, cfg, sch, opts, part, ser)
            good = (err <= REGISTRY_TOLERANCE or not exact) and not diffs
            ok &= good
            if not good or world.rank == 0:
                details.append(W.scheme_detail(world, name, opts, part, exact, err, diffs))
    return ok, details


def _numbering_once_as_computed(world, path, cfg, details) -> bool:
    """Whether the numbering rank 0 computes and sends (`job.numbering.numbering_once`: METIS,
    p2p and 1.5d, and a block partition in the default locality order ``--reorder auto``) is,
    on every rank, the one the rank computes itself, under the job's own numbering key; a
    block partition with ``--reorder none``, or one rank, sends none."""
    from gcntrain.job.numbering import numbering_once
    from gcntrain.job.spec import JobSpec

    ok = True
    reps = [1] + ([2] if world.size % 2 == 0 else [])
    cases = [("p2p", {}, "metis")] + [("1.5d", {"replication": c}, "metis") for c in reps]
    cases += [("p2p", {}, "block"), ("p2p", {"reorder": "none"}, "block")]
    for scheme, opts, part in cases:
        spec = JobSpec(source=path, config=cfg, scheme=scheme, options=opts, partition=part)
        got = numbering_once(world, spec, spec.scheme_of(world.size))
        if opts.get("reorder") == "none" or world.size == 1:  # nothing to send
            good = got is None
        else:
            choice = {"scheme": scheme, "values": opts, "partition": part, "label": scheme}
            good = got is not None and _handed_as_computed(world, path, cfg, choice, got, [])
        ok &= good
        details.append({"once": f"{scheme} {opts} [{part}]", "same": good, "rank": world.rank})
    return ok


def _handed_as_computed(world, path, cfg, choice, handed, details) -> bool:
    """Whether the numbering ``--scheme auto`` handed over (where it did) is the chosen
    configuration's own: its key, and every array of the numbering the scheme computes."""
    from gcntrain.schemes.loading import open_source
    from gcntrain.schemes.registry import configured, get
    from gcntrain.simulate.run import numbering_key

    sch = get(choice["scheme"], world.size)
    sc = configured(sch, world.size, choice["values"], cfg)
    key = numbering_key(sch, world.size, sc, choice["partition"], 0)
    if handed is None:
        details.append({"handed": None, "label": choice["label"], "rank": world.rank})
        return True
    own = sch.numbering(
        open_source(path),
        sch.row_parts(world.size, sc),
        choice["partition"],
        0,
        sch.col_parts(world.size, sc),
        sch.locality_order(sc),
    )
    same = handed[0] == key
    for name in ("perm", "inv", "offsets", "col_offsets"):
        a, b = getattr(handed[1], name), getattr(own, name)
        same &= (a is None and b is None) or (
            a is not None and b is not None and np.array_equal(a, b)
        )
    details.append({"handed": choice["label"], "same": bool(same), "rank": world.rank})
    return bool(same)


def case_planners(world):
    """`working_ranks` on one node: the first `cores` ranks (and, with the node's own cores,
    a prefix of the ranks); and ``--scheme auto``'s choice (`auto.choose`, R-MAT n = 509,
    profile abci) the same whether one rank, two or all of them plan, each with its own
    empty choice cache."""
    import os
    import shutil
    import tempfile

    from gcntrain.comm.node import working_ranks
    from gcntrain.data.store import write_graph
    from gcntrain.job.auto import choose

    ok, details = True, []
    for cores in (1, 2, 3, world.size + 1):
        got = working_ranks(world, cores)
        want = list(range(min(cores, world.size)))
        ok &= got == want
        details.append({"cores": cores, "working": got, "rank": world.rank})
    own = working_ranks(world)
    ok &= 1 <= len(own) <= world.size and own == list(range(len(own)))
    details.append({"cores": None, "working": own, "rank": world.rank})
    top = tempfile.mkdtemp(prefix="planners-") if world.rank == 0 else None
    top = world.comm.bcast(top, root=0)
    path = os.path.join(top, "g.h5")
    if world.rank == 0:
        write_graph(path, W.rmat_odd(9, edge_factor=8, seed=5, num_features=16, num_classes=3))
    world.comm.Barrier()
    cfg = TrainConfig(epochs=2)
    keep = ("label", "predicted_epoch_seconds", "runner_up", "configurations", "cached")
    was = os.environ.get("GCNTRAIN_CACHE_DIR")
    choices = {}
    try:
        for cores in dict.fromkeys((1, 2, world.size)):
            os.environ["GCNTRAIN_CACHE_DIR"] = os.path.join(top, f"cache-{cores}")
            c, handed = choose(world, path, cfg, {}, None, 0, "abci", world.size, None, cores=cores)
            choices[cores] = {k: c[k] for k in keep}
            ok &= _handed_as_computed(world, path, cfg, c, handed, details)
    finally:
        if was is None:
            os.environ.pop("GCNTRAIN_CACHE_DIR", None)
        else:
            os.environ["GCNTRAIN_CACHE_DIR"] = was
    first = choices[1]
    ok &= first["cached"] is False and all(c == first for c in choices.values())
    ok &= _numbering_once_as_computed(world, path, cfg, details)
    world.comm.Barrier()  # every rank done with the files
    if world.rank == 0:
        details.append({"choices": {str(k): v for k, v in choices.items()}})
        shutil.rmtree(top, ignore_errors=True)
    return ok, details


def case_device(world):
    """tests/test_device_schemes.py's case: every scheme ported to the device on the
    host-emulated device equals its CPU run bit for bit and its plan (`device_case`)."""
    from tests.test_device_schemes import device_case

    return device_case(world, W)


CASES = {
    **W.CASES,
    "planners": case_planners,
    "equivfast": case_equivfast,
    "equiv3dfast": case_equiv3dfast,
    "equivplexusfast": case_equivplexusfast,
    "equiv8": case_equiv8,
    "accuracy20": case_accuracy20,
    "registry": case_registry,
    "batchnorm": case_batchnorm,
    "p2preverse": case_p2preverse,
    "gemat11": case_gemat11,
    "device": case_device,
}


def run_case(world, case: str) -> None:
    """Run one case and print its verdict line (rank 0); an escaping exception aborts."""
    t0 = time.perf_counter()
    try:
        ok, details = CASES[case](world)
    except Exception as e:  # a local failure must not hang the others: abort the job
        from gcntrain.comm.errors import handle_internal_error

        sys.stderr.write(f"worker_fast: case {case} raised on rank {world.rank}\n")
        sys.exit(handle_internal_error(e))
    finally:
        W.forget_sources()
    verdict = world.comm.allreduce(1 if ok else 0, op=world.MPI.MIN)
    text = json.dumps(details, default=float)
    lens = world.comm.allgather(len(text))
    allt = world.comm.gather(text, root=0)
    if world.rank == 0:
        merged = [d for t in allt for d in json.loads(t)]
        line = {"case": case, "ranks": world.size, "ok": bool(verdict), "details": merged}
        seconds = time.perf_counter() - t0
        print(json.dumps({**line, "sizes": lens, "seconds": seconds}), flush=True)


def main() -> int:
    world = Comm()
    for case in sys.argv[1:]:
        run_case(world, case)
        world.comm.Barrier()
    return 0


if __name__ == "__main__":
    sys.exit(main())
