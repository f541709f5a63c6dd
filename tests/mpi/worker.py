"""MPI test worker: `mpiexec -n P python tests/mpi/worker.py CASE`.

Every rank checks its own part; verdicts are reduced over all ranks (a failure on one rank
fails all), rank 0 prints one JSON line {"case", "ranks", "ok", "details"}, and every rank
exits with the same status (0 ok, 1 failed).  Driven by tests/test_mpi_schemes.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from gcntrain.comm.communicator import Comm
from gcntrain.comm.counters import Tally
from gcntrain.comm.grid import factorizations
from gcntrain.comm.shared import windows_set
from gcntrain.data.convert import convert_source
from gcntrain.data.generate import rmat
from gcntrain.job.runner import load_rank, train_with
from gcntrain.job.spec import JobSpec
from gcntrain.model.normalize import support_kind, support_matrix
from gcntrain.model.ops import ParamSpec, SerialOps
from gcntrain.model.phase import Phase
from gcntrain.model.trainer import TrainConfig, fit
from gcntrain.partition.basic import block_partition, random_partition
from gcntrain.partition.hypergraph import column_nets, km1
from gcntrain.partition.metis import metis_partition
from gcntrain.schemes.loading import GraphSource
from gcntrain.schemes.registry import SCHEMES
from gcntrain.simulate.run import plan_training
from gcntrain.simulate.target import PlanTarget


def shared_dir() -> Path:
    here = Path(__file__).resolve().parents[2]
    for cand in (here.parent / "shared", Path("/work/shared")):
        if cand.is_dir():
            return cand
    raise FileNotFoundError("shared/ datasets not found beside the repository")


def cora():
    return convert_source(str(shared_dir() / "datasets" / "planetoid" / "ind.cora"))


def masks_of(g):
    return {"train": g.train_mask, "val": g.val_mask, "test": g.test_mask}


def grids_2d(size: int) -> list[str]:
    """The 2D grids of the acceptance list on `size` ranks: 1 x P, P x 1, and 2 x 2 at 4."""
    return sorted({f"1x{size}", f"{size}x1"} | ({"2x2"} if size == 4 else set()))


def grids_3d(size: int) -> list[str]:
    """The split-3D grids of the acceptance list: every ordered X x Y x Z = P up to 4 ranks,
    2 x 2 x 2 at 8."""
    if size == 8:
        return ["2x2x2"]
    return ["x".join(map(str, f)) for f in factorizations(size, 3)]


def scheme_cases(g, size):
    """(label, scheme, options, partition) per the acceptance list."""
    c = 2 if size == 4 else 1
    return [
        ("1d", "1d", {}, block_partition(g.n, size)),
        (f"1.5d-c{c}", "1.5d", {"replication": c}, block_partition(g.n, size // c)),
        ("p2p-block", "p2p", {}, block_partition(g.n, size)),
        ("p2p-random", "p2p", {}, random_partition(g.n, size, seed=5)),
        ("p2p-metis", "p2p", {}, metis_partition(g.indptr, g.indices, size, seed=0)),
        # one node here: the cases above go through node windows, these through messages
        ("1d-messages", "1d", {}, block_partition(g.n, size)),
        ("p2p-random-messages", "p2p", {}, random_partition(g.n, size, seed=5)),
    ] + [(f"2d-{grid}", "2d", {"grid": grid}, None) for grid in grids_2d(size)]


def rmat_odd(scale: int = 9, keep: int = 509, **kw):
    """An R-MAT graph cut to its first `keep` nodes (509: prime, so n is divisible by no
    grid dimension > 1), induced edges only."""
    from gcntrain.data.graph import Graph

    g = rmat(scale, **kw)
    A = g.adjacency()[:keep][:, :keep].tocsr()
    A.sort_indices()
    return Graph(
        indptr=A.indptr.astype(np.int64),
        indices=A.indices.astype(np.int32),
        features=g.features[:keep],
        labels=g.labels[:keep],
        train_mask=g.train_mask[:keep],
        val_mask=g.val_mask[:keep],
        test_mask=g.test_mask[:keep],
        name=f"rmat-{keep}",
        num_classes=g.num_classes,
        directed=g.directed,
    )


_sources: dict[int, tuple[object, GraphSource]] = {}


def source_of(g):
    """One `GraphSource` per graph of a case, so that the runs and plans of the case hash
    the graph's contents once (no case changes a graph in place); `forget_sources` after
    the case lets its graphs go."""
    if id(g) not in _sources:
        _sources[id(g)] = (g, GraphSource(g, g.name))  # holding g keeps its id unique
    return _sources[id(g)][1]


def forget_sources() -> None:
    _sources.clear()


def node_windows(on: bool):
    """`GCNTRAIN_NODE_WINDOWS` set to 1 or 0 while inside (the recommender reads it too)."""
    return windows_set(on)


def run_scheme(world, g, scheme, opts, part, cfg):
    world.tally = Tally()
    return train_with(world, JobSpec(source_of(g), cfg, scheme, opts, part))


def plan_diffs(run, g, cfg, scheme, opts, part, rank) -> list[str]:
    """Measured vs planned, every phase of this rank, whole run (setup to final)."""
    # one rank plans (the plan covers every rank) and shares it: the ranks share the cores
    planned = None
    if rank == 0:
        target = PlanTarget(source_of(g), cfg, scheme, run.layout.size, opts, part)
        planned = plan_training(target).table.phases()
    planned = bcast_object(planned)
    measured = run.phases().phases
    out = []
    for k in sorted(set(planned) | set(measured)):
        a = measured.get(k, np.zeros(4, np.int64))
        b = planned[k][rank] if k in planned else np.zeros(4, np.int64)
        if not np.array_equal(a, b):
            out.append(f"{k}: measured {a.tolist()} planned {b.tolist()}")
    return out


def run_against_serial(world, g, cfg, sch, opts, part, ser):
    """``(run, exact, err, diffs)`` of the registered scheme `sch` with options `opts` and
    partition `part`: the run, whether the configuration is exact, its weights' relative
    error to serial's (`ser`, `serial_fit`'s) and its measured traffic against the plan
    (`plan_diffs`, this rank)."""
    exact = sch.is_exact(sch.configure(world.size, dict(opts)))
    run = run_scheme(world, g, sch.name, dict(opts), part, cfg)
    err = rel_err(run.result.weights, ser.weights)
    diffs = plan_diffs(run, g, cfg, sch.name, dict(opts), part, world.rank)
    return run, exact, err, diffs


def scheme_detail(world, name, opts, part, exact, err, diffs, **extra) -> dict:
    """A case's detail of one scheme's run (`run_against_serial`'s figures): the scheme,
    its options, partition, exactness, this rank, the weights' error, `extra` and the
    first three plan differences."""
    return {
        "scheme": name,
        "options": opts,
        "partition": part,
        "exact": exact,
        "rank": world.rank,
        "rel_err": err,
        **extra,
        "plan_diffs": diffs[:3],
    }


def bcast_object(obj):
    """Rank 0's `obj` on every rank.  The other ranks wait for rank 0's solo work (a plan, a
    serial reference) in `gcntrain.comm.agree.idle_barrier`: waiting inside an MPI call
    they would spin on the cores that rank 0 works on (ranks oversubscribe the cores)."""
    from mpi4py import MPI

    from gcntrain.comm.agree import idle_barrier

    world = MPI.COMM_WORLD
    if world.Get_size() == 1:
        return obj
    idle_barrier(world)
    return world.bcast(obj, root=0)


def rel_err(ws_a, ws_b) -> float:
    err = 0.0
    for a, b in zip(ws_a, ws_b):
        for k in a:
            err = max(err, float(np.abs(a[k] - b[k]).max() / max(np.abs(b[k]).max(), 1e-30)))
    return err


def serial_fit(g, cfg, masks=None):
    S = support_matrix(g, support_kind(cfg.model, cfg.aggregator))
    return fit(SerialOps(S), g.features, g.labels, masks or masks_of(g), g.num_classes, cfg)


def covered(g, cfg, label, scheme, opts, part, masks=None) -> dict | None:
    """Where another case trains this run of `check_cases` too, so that `check_cases` may
    leave it out: a detail naming that case (``{"covered_by": ...}`` and what it says the
    run is), or None.  Here (this module run alone, the full matrix of
    scripts/check_mpi_acceptance.py) None: every run trains; `tests/mpi/worker_fast.py`
    replaces it with `registry_covered` (the runs its `registry` case trains)."""
    return None


def check_cases(world, g, cfg, cases, tol, label_extra, masks=None):
    """Each (label, scheme, options, partition) of `cases` trained on `g` with `cfg`: its
    weights equal serial's within `tol` and its measured traffic equals the plan on this
    rank; a run that `covered` names another case for is left out, with a detail (rank
    0) saying which case trains it."""
    by = [covered(g, cfg, *case, masks) for case in cases]
    ser = serial_fit(g, cfg, masks) if any(b is None for b in by) else None
    ok, details = True, []
    for (label, scheme, opts, part), other in zip(cases, by):
        if other is not None:
            if world.rank == 0:
                details.append({**label_extra, "scheme": label, "rank": 0, **other})
            continue
        with node_windows(not label.endswith("-messages")):
            run = run_scheme(world, g, scheme, opts, part, cfg)
        err = rel_err(run.result.weights, ser.weights)
        diffs = plan_diffs(run, g, cfg, scheme, opts, part, world.rank)
        good = err <= tol and not diffs
        ok &= good
        if not good or world.rank == 0:
            details.append(
                {
                    **label_extra,
                    "scheme": label,
                    "rank": world.rank,
                    "rel_err": err,
                    "plan_diffs": diffs[:3],
                }
            )
    return ok, details


def case_equiv(world):
    """Weights after 5 epochs equal serial; measured bytes/messages equal the plan."""
    details, ok = [], True
    graphs = {
        "cora": cora(),
        "rmat-509": rmat_odd(9, edge_factor=8, seed=11, num_features=24, num_classes=4),
    }
    for gname, g in graphs.items():
        for dtype, tol in (("float64", 1e-5), ("float32", 1e-4)):
            cfg = TrainConfig(epochs=5, seed=3, dtype=dtype, early_stopping=0)
            good, det = check_cases(
                world, g, cfg, scheme_cases(g, world.size), tol, {"graph": gname, "dtype": dtype}
            )
            ok &= good
            details += det
    return ok, details


def case_equiv3d(world):
    """Split-3D on every grid of `grids_3d`: weights after 5 epochs equal serial (float64,
    1e-5), measured bytes/messages equal the plan; Cora (GCN) and R-MAT (GCN, GraphSAGE)."""
    details, ok = [], True
    runs = [
        ("cora", cora(), "gcn"),
        *[
            ("rmat-509", rmat_odd(9, edge_factor=8, seed=11, num_features=24, num_classes=4), m)
            for m in ("gcn", "sage")
        ],
    ]
    cases = [(f"3d-{grid}", "3d", {"grid": grid}, None) for grid in grids_3d(world.size)]
    for gname, g, model in runs:
        cfg = TrainConfig(epochs=5, seed=3, dtype="float64", early_stopping=0, model=model)
        good, det = check_cases(world, g, cfg, cases, 1e-5, {"graph": gname, "model": model})
        ok &= good
        details += det
    return ok, details


def case_equivplexus(world):
    """Plexus on every grid of `grids_3d`: weights after 5 epochs equal serial (float64,
    1e-5), measured bytes/messages equal the plan; Cora (GCN: product first in layer 0) and
    R-MAT n = 509 (GraphSAGE with a hidden layer wider than the input, so both
    orders occur; GCN on the last grid), plus --permute double and --block-rows on the last
    grid."""
    rm = rmat_odd(9, edge_factor=8, seed=11, num_features=12, num_classes=4)
    cases, double, blocks = plexus_cases(world.size)
    runs = [
        ("cora", cora(), "gcn", (16,), cases + [double]),
        ("rmat-509", rm, "sage", (20, 6), cases + [double, blocks]),
        ("rmat-509", rm, "gcn", (20, 6), [cases[-1], double]),
    ]
    if world.size == 8:  # empty row and column chunks: n = 8, widths 3 -> 2 -> 5 -> 3
        tiny, more = tiny8_cases()
        runs += [("tiny-8", tiny, m, (2, 5), more) for m in ("gcn", "sage")]
    return check_model_runs(world, runs)


def plexus_cases(size: int) -> tuple[list, tuple, tuple]:
    """(a Plexus case per grid of `grids_3d(size)`, --permute double on the last grid,
    --block-rows 50 on the last grid (reading 2D blocks of the file at np = 4))."""
    grids = grids_3d(size)
    cases = [(f"plexus-{grid}", "plexus", {"grid": grid}, None) for grid in grids]
    last = grids[-1]
    double = (f"plexus-{last}-double", "plexus", {"grid": last, "permute": "double"}, None)
    blocks = (f"plexus-{last}-blocks", "plexus", {"grid": last, "block_rows": 50}, None)
    if size == 4:  # 2D loading blocks of the graph file
        blocks[2]["load_grid"] = "2x2"
    return cases, double, blocks


def tiny8_cases() -> tuple[object, list]:
    """The n = 8 graph whose row and column chunks are empty on 8-long axes, and its Plexus
    cases: grids 1x1x8, 8x1x1, 1x8x1, 2x4x1, each with --permute none and double (one-row
    blocks)."""
    tiny = rmat(3, edge_factor=2, seed=4, num_features=3, num_classes=3)
    more = [
        (f"plexus-{grid}-{p}", "plexus", {"grid": grid, "permute": p, "block_rows": 1}, None)
        for grid in ("1x1x8", "8x1x1", "1x8x1", "2x4x1")
        for p in ("none", "double")
    ]
    return tiny, more


def check_model_runs(world, runs) -> tuple[bool, list]:
    """`check_cases` for each (graph name, graph, model, hidden widths, cases) of `runs`:
    5 epochs in float64, weights within 1e-5 of serial; (all good, details)."""
    details, ok = [], True
    for gname, g, model, hidden, cases in runs:
        cfg = TrainConfig(
            epochs=5, seed=3, dtype="float64", early_stopping=0, model=model, hidden=hidden
        )
        good, det = check_cases(world, g, cfg, cases, 1e-5, {"graph": gname, "model": model})
        ok &= good
        details += det
    return ok, details


def with_self_loops(g, every: int = 3):
    """`g` with a stored self-loop on every `every`-th node."""
    from dataclasses import replace

    A = g.adjacency().tolil()
    for i in range(0, g.n, every):
        A[i, i] = 1.0
    A = A.tocsr()
    A.sort_indices()
    return replace(
        g,
        indptr=A.indptr.astype(np.int64),
        indices=A.indices.astype(np.int32),
        name=g.name + "-loops",
    )


def with_duplicates(g, every: int = 5):
    """`g` storing the first entry of every `every`-th row twice (a graph file may)."""
    from dataclasses import replace

    rows, cols = [], []
    for i in range(g.n):
        row = g.indices[g.indptr[i] : g.indptr[i + 1]].tolist()
        if row and i % every == 0:
            row = [row[0], *row]
        rows.append(len(row))
        cols += row
    indptr = np.concatenate(([0], np.cumsum(rows))).astype(np.int64)
    return replace(g, indptr=indptr, indices=np.asarray(cols, np.int32), name=g.name + "-dups")


def vertexcut_runs():
    """(graph name, graph, model) of the vertex-cut acceptance list, plus GCN on an R-MAT
    graph with stored self-loops (the identity beside a loop held off the root) and
    duplicate entries (summed, as serial sums them)."""
    rm = rmat_odd(9, edge_factor=8, seed=11, num_features=24, num_classes=4)
    runs = [(gn, g, m) for gn, g in (("cora", cora()), ("rmat-509", rm)) for m in ("gcn", "sage")]
    odd = with_duplicates(with_self_loops(rm))
    return runs + [("rmat-509-loops-dups", odd, "gcn"), ("rmat-509-loops-dups", odd, "sage")]


def case_equivvertexcut(world):
    """Vertex cut (Libra) cd-0: weights after 5 epochs equal serial (float64, 1e-5), measured
    bytes/messages equal the plan on every rank and phase; Cora and R-MAT n = 509, GCN and
    GraphSAGE; a Libra partition file too (R-MAT, GCN).  cd-2 and 0c: measured equals the
    plan, and their drift from serial is reported."""
    import tempfile

    from gcntrain.data.partition_file import write_partition
    from gcntrain.partition.methods import run_method

    details, ok = [], True
    for gname, g, model in vertexcut_runs():
        cfg = TrainConfig(epochs=5, seed=3, dtype="float64", early_stopping=0, model=model)
        cases = [("vertexcut-cd0", "vertexcut", {}, "libra")]
        tmp = None
        if gname == "rmat-509" and model == "gcn":
            tmp = tempfile.mkdtemp() if world.rank == 0 else None
            tmp = bcast_object(tmp)
            path = f"{tmp}/libra.h5"
            if world.rank == 0:
                res = run_method(
                    "libra", g.indptr, g.indices, world.size, seed=9, graph_hash=g.content_hash()
                )
                write_partition(path, res)
            world.barrier()
            cases.append(("vertexcut-cd0-file", "vertexcut", {}, path))
        good, det = check_cases(world, g, cfg, cases, 1e-5, {"graph": gname, "model": model})
        ok &= good
        details += det
        # the plan's SpMM nonzeros per rank are the entries of the rank's local support
        run = run_scheme(world, g, "vertexcut", {}, "libra", cfg)
        nnz = None
        if world.rank == 0:
            sim = plan_training(PlanTarget(source_of(g), cfg, "vertexcut", world.size, {}, "libra"))
            nnz = SCHEMES["vertexcut"]._local_nnz(sim.ctx).tolist()
        nnz = bcast_object(nnz)
        if nnz[world.rank] != run.ops._S.nnz:
            ok = False
            details.append({"graph": gname, "rank": world.rank, "nnz": [run.ops._S.nnz, nnz]})
        ser = serial_fit(g, cfg)
        for delay in ("2", "none"):
            label = f"vertexcut-delay-{delay}"
            other = covered(g, cfg, label, "vertexcut", {"delay": delay}, "libra")
            if other is not None:
                if world.rank == 0:
                    where = {"graph": gname, "model": model, "scheme": label, "rank": 0}
                    details.append({**where, **other})
                continue
            run = run_scheme(world, g, "vertexcut", {"delay": delay}, "libra", cfg)
            diffs = plan_diffs(run, g, cfg, "vertexcut", {"delay": delay}, "libra", world.rank)
            ok &= not diffs
            if diffs or world.rank == 0:
                details.append(
                    {
                        "graph": gname,
                        "model": model,
                        "scheme": label,
                        "rank": world.rank,
                        "drift_rel_err": rel_err(run.result.weights, ser.weights),
                        "plan_diffs": diffs[:3],
                    }
                )
    return ok, details


def case_equivhier(world):
    """SuperGCN hier: pre, post and hybrid with 32-bit messages on METIS partitions: weights
    after 5 epochs equal serial (float64, 1e-5) and measured bytes/messages equal the plan on
    every rank and phase; Cora and R-MAT n = 509, GCN and GraphSAGE.  R-MAT: masked label
    propagation with LayerNorm equals serial with both; Int2 (per row) and Int4 (groups of 8
    rows): measured equals the plan, Int2 twice with one seed gives identical weights, the
    drift from serial is reported."""
    details, ok = [], True
    rm = rmat_odd(9, edge_factor=8, seed=11, num_features=24, num_classes=4)
    for gname, g in (("cora", cora()), ("rmat-509", rm)):
        metis = metis_partition(g.indptr, g.indices, world.size, seed=0)
        for model in ("gcn", "sage"):
            cfg = TrainConfig(epochs=5, seed=3, dtype="float64", early_stopping=0, model=model)
            cases = [(f"hier-{a}", "hier", {"aggr": a}, metis) for a in ("pre", "post", "hybrid")]
            good, det = check_cases(world, g, cfg, cases, 1e-5, {"graph": gname, "model": model})
            ok &= good
            details += det
    g = rm
    metis = metis_partition(g.indptr, g.indices, world.size, seed=0)
    cfg = TrainConfig(
        epochs=5, seed=3, dtype="float64", early_stopping=0, label_prop=0.5, norm="layer"
    )
    good, det = check_cases(
        world, g, cfg, [("hier-lp-norm", "hier", {}, metis)], 1e-5, {"graph": "rmat-509"}
    )
    ok &= good
    details += det
    cfg = TrainConfig(epochs=5, seed=3, dtype="float32", early_stopping=0)
    ser = serial_fit(g, cfg)
    for label, opts, twice in (
        ("hier-int2", {"quant_bits": "2"}, True),
        ("hier-int4-g8", {"quant_bits": "4", "quant_group": "8"}, False),
    ):
        a = run_scheme(world, g, "hier", opts, metis, cfg)
        diffs = plan_diffs(a, g, cfg, "hier", opts, metis, world.rank)
        same = True
        if twice:
            b = run_scheme(world, g, "hier", opts, metis, cfg)
            same = rel_err(a.result.weights, b.result.weights) == 0.0
        good = same and not diffs
        ok &= good
        if not good or world.rank == 0:
            details.append(
                {
                    "graph": "rmat-509",
                    "scheme": label,
                    "rank": world.rank,
                    "reproducible": same,
                    "drift": rel_err(a.result.weights, ser.weights),
                    "plan_diffs": diffs[:3],
                }
            )
    return ok, details


def _agg_traffic(tally) -> np.ndarray:
    """(4,) training aggregation traffic of one tally (every L*.fwd.agg / L*.bwd.agg)."""
    out = np.zeros(4, dtype=np.int64)
    for k, v in tally.phases.items():
        if k.startswith("L") and k.endswith(".agg"):
            out += np.asarray(v, dtype=np.int64)
    return out


def case_delayed(world):
    """cd-R sends in every epoch exactly what the plan says for that epoch (bucket e mod R,
    and from epoch R on the roots' totals), every rank and phase; over R steady epochs its
    training aggregation bytes equal cd-0's of one epoch."""
    g = cora()
    ok, details = True, []
    cfg = TrainConfig(epochs=9, seed=3, dtype="float32", early_stopping=0, model="sage")
    r = 3
    exact = run_scheme(world, g, "vertexcut", {"delay": "0"}, "libra", cfg)
    run = run_scheme(world, g, "vertexcut", {"delay": str(r)}, "libra", cfg)
    planned = None
    if world.rank == 0:
        target = PlanTarget(source_of(g), cfg, "vertexcut", world.size, {"delay": str(r)}, "libra")
        t = plan_training(target).table
        planned = [t.epoch_phases(e) for e in range(cfg.epochs)]
    planned = bcast_object(planned)
    for e in range(cfg.epochs):
        measured = run.epoch_tallies[e].phases
        for k in sorted(set(planned[e]) | set(measured)):
            a = np.asarray(measured.get(k, np.zeros(4, np.int64)))
            b = planned[e][k][world.rank] if k in planned[e] else np.zeros(4, np.int64)
            if not np.array_equal(a, b):
                ok = False
                details.append({"epoch": e, "phase": k, "measured": a.tolist(), "plan": b.tolist()})
    one = _agg_traffic(exact.epoch_tallies[r])
    window = sum(_agg_traffic(run.epoch_tallies[e]) for e in range(r, 2 * r))
    good = bool(np.array_equal(one[:2], window[:2]) and one[0] > 0) or world.size == 1
    ok &= good
    if not good or world.rank == 0:
        details.append(
            {
                "rank": world.rank,
                "cd0_epoch_bytes": one[:2].tolist(),
                f"cd{r}_bytes_over_{r}_epochs": window[:2].tolist(),
                "per_epoch_sent": [int(_agg_traffic(t)[0]) for t in run.epoch_tallies],
            }
        )
    return ok, details


def case_directed(world):
    """A directed graph (S != S^T): the transposed rows are exchanged; still exact."""
    g = rmat(8, edge_factor=8, seed=2, num_features=10, num_classes=3, symmetrize=False)
    ok, details = True, []
    for model in ("gcn", "sage"):
        cfg = TrainConfig(model=model, epochs=4, seed=1, dtype="float64", early_stopping=0)
        cases = scheme_cases(g, world.size) + [("vertexcut", "vertexcut", {}, "libra")]
        good, det = check_cases(world, g, cfg, cases[:4] + cases[5:], 1e-10, {"model": model})
        ok &= good
        details += det
    return ok, details


def case_nomask(world):
    """Without validation/test masks the schedule (and so the plan) has no stop decisions."""
    g = rmat(8, edge_factor=8, seed=9, num_features=6, num_classes=3)
    g.val_mask = None
    g.test_mask = None
    cfg = TrainConfig(epochs=4, seed=2, dtype="float64", early_stopping=0)
    return check_cases(
        world, g, cfg, scheme_cases(g, world.size)[:3], 1e-10, {}, {"train": g.train_mask}
    )


def case_accuracy(world):
    """Full Cora training: test accuracy under each scheme equals the serial run."""
    g = cora()
    ok, details = True, []
    cfg = TrainConfig(seed=123, dtype="float32")
    ser = serial_fit(g, cfg)
    cases = scheme_cases(g, world.size) + [
        ("3d-1x2x2", "3d", {"grid": "1x2x2"}, None),
        ("plexus-2x1x2", "plexus", {"grid": "2x1x2"}, None),
        ("plexus-2x2x1-double", "plexus", {"grid": "2x2x1", "permute": "double"}, None),
        ("vertexcut", "vertexcut", {}, "libra"),
    ]
    for label, scheme, opts, part in cases:
        if label in ("p2p-block", "p2p-random") or (scheme == "2d" and label != "2d-2x2"):
            continue
        run = run_scheme(world, g, scheme, opts, part, cfg)
        a, b = run.result.final["test_acc"], ser.final["test_acc"]
        good = a == b and len(run.result.history) == len(ser.history)
        ok &= good
        if world.rank == 0:
            details.append(
                {
                    "scheme": label,
                    "test_acc": a,
                    "serial_test_acc": b,
                    "epochs": len(run.result.history),
                    "serial_epochs": len(ser.history),
                }
            )
    return ok, details


def case_volume(world):
    """Per-SpMM traffic: 1D receives (n - n_p) f words; p2p sends km1 rows in total."""
    ok, details = True, []
    rng = np.random.default_rng(17)
    cfg = TrainConfig(dtype="float64")
    for trial in range(3):
        g = rmat(
            8 + trial, edge_factor=4 + 4 * trial, seed=40 + trial, num_features=4, num_classes=2
        )
        f = 5
        part = random_partition(g.n, world.size, seed=trial)
        S = support_matrix(g, "gcn")
        for scheme in ("1d", "p2p"):
            world.tally = Tally()
            sch = SCHEMES[scheme]
            _, _, layout, local = load_rank(world, JobSpec(g, cfg, scheme, {}, part))
            ops = sch.setup(world, layout, local, "gcn")
            X = rng.random((local.orig_ids.size, f))
            got = ops.aggregate(X, phase=Phase("aggregate", 0, "fwd"))
            probe = world.tally.phases["L0.fwd.agg"]
            sent, recv = probe[0] // (f * 8), probe[1] // (f * 8)
            tot = world.allreduce(np.array([sent, recv], dtype=np.int64), "report")
            if scheme == "1d":
                expect_recv = g.n - local.orig_ids.size
                good = (
                    recv == expect_recv
                    and got.shape == (local.orig_ids.size, f)
                    and int(tot[1]) == (world.size - 1) * g.n
                )
                if world.rank == 0:
                    details.append(
                        {
                            "trial": trial,
                            "scheme": "1d",
                            "recv_rows_rank0": int(recv),
                            "n_minus_np": int(expect_recv),
                            "total_recv_words": int(tot[1]) * f,
                        }
                    )
            else:
                net_ptr, pins = column_nets(S.indptr, S.indices)
                k = km1(net_ptr, pins, part)
                good = int(tot[0]) == k and int(tot[1]) == k
                if world.rank == 0:
                    details.append(
                        {"trial": trial, "scheme": "p2p", "rows_sent": int(tot[0]), "km1": k}
                    )
            ok &= bool(good)
    return ok, details


def window_cases(size: int) -> list[tuple[str, str, dict]]:
    """(label, scheme, options) of the schemes with node windows on `size` ranks."""
    out = [("1d", "1d", {}), ("p2p", "p2p", {}), ("1.5d-c1", "1.5d", {"replication": 1})]
    if size % 2 == 0:
        out.append(("1.5d-c2", "1.5d", {"replication": 2}))
    return out


def _products(ops, rng_seed: int, rows: int) -> list[np.ndarray]:
    """S @ X and S^T @ X at two widths and dtypes (the second grows the windows)."""
    out = []
    for width, dtype in ((5, np.float64), (9, np.float32), (5, np.float64)):
        X = np.random.default_rng(rng_seed).random((rows, width)).astype(dtype)
        out.append(ops.aggregate(X, phase=Phase("aggregate", 0, "fwd")))
        out.append(ops.aggregate_t(X, phase=Phase("aggregate", 0, "bwd")))
    return out


def case_windowbits(world):
    """Products through node windows equal, bit for bit, the in-turn broadcasts (1D, 1.5D)
    and the per-source products (p2p) used across nodes, on a directed and an undirected
    graph; a window that cannot be made on one rank only (MPI failing there, or no room in
    /dev/shm there) leaves every rank on messages, with the same sums, and no hang."""
    from mpi4py import MPI

    import gcntrain.comm.shared as shm

    ok, details = True, []
    graphs = {
        "undirected": rmat_odd(8, 251, edge_factor=6, seed=21, num_features=7, num_classes=4),
        "directed": rmat_odd(
            7, 127, edge_factor=6, seed=22, num_features=7, num_classes=4, symmetrize=False
        ),
    }
    real_alloc, real_free = shm.allocate_window, shm.shm_free_bytes

    def alloc_fails_on_last(comm, nbytes):
        # the allocation is collective: the last rank takes part, then reports a failure
        win = real_alloc(comm, nbytes)
        if comm.rank == comm.size - 1:
            raise MPI.Exception(MPI.ERR_NO_MEM)
        return win

    faults = {
        "": None,
        "-mpi-fails-on-one": ("allocate_window", alloc_fails_on_last),
        "-no-room-on-one": ("shm_free_bytes", lambda *a: 0.0 if world.rank == 0 else 1e18),
    }
    cfg = TrainConfig(dtype="float64")
    for gname, g in graphs.items():
        for label, scheme, opts in window_cases(world.size):
            sch = SCHEMES[scheme]
            part = random_partition(
                g.n, sch.row_parts(world.size, sch.configure(world.size, opts)), seed=4
            )
            _, _, layout, local = load_rank(world, JobSpec(g, cfg, scheme, opts, part))
            for fault, patch in faults.items():
                if patch is not None:
                    setattr(shm, *patch)
                try:
                    ops = sch.setup(world, layout, local, "gcn")
                    owner = ops.broadcasts if hasattr(ops, "broadcasts") else ops
                    opened = owner.shared is not None
                    got = _products(ops, 3, local.orig_ids.size)
                    kept = owner.shared is not None
                finally:
                    shm.allocate_window, shm.shm_free_bytes = real_alloc, real_free
                ops.close(phase=Phase("control"))
                if patch is None:  # the multi-node paths: in-turn broadcasts, per source
                    if hasattr(ops, "broadcasts"):
                        ops.broadcasts.ahead = False
                    else:
                        ops.one_pass = False
                # (after a fallback: the one-node messages it fell back to; at more than
                # BCAST_DEPTH received blocks they add the own block first, other bits)
                want = _products(ops, 3, local.orig_ids.size)
                same = all(np.array_equal(a, b) for a, b in zip(got, want))
                # windows on one node wherever a product has two or more members; kept
                # only where every member of the product could make them (the no-room
                # fault is on world rank 0: 1.5D's other process columns keep theirs)
                group = ops.broadcasts.comm if hasattr(ops, "broadcasts") else ops.world
                has0 = group.comm.allreduce(int(world.rank == 0), op=MPI.MAX) == 1
                spared = fault == "-no-room-on-one" and not has0
                members = world.size if scheme != "1.5d" else world.size // opts["replication"]
                good = same and opened == (members > 1)
                good &= kept == (opened and (patch is None or spared))
                ok &= good
                if not good or world.rank == 0:
                    details.append(
                        {
                            "graph": gname,
                            "scheme": label + fault,
                            "rank": world.rank,
                            "same": same,
                            "opened": opened,
                            "kept": kept,
                        }
                    )
    return ok, details


def case_windows(world):
    """`SharedRows` over one node: ragged segments (some empty) written by their members and
    read whole by every member, widths growing and shrinking, float32 and float64; the slot
    before stays intact (two alternate); no windows with `GCNTRAIN_NODE_WINDOWS=0` or alone."""
    from gcntrain.comm.shared import SharedRows

    counts = np.array([3, 0, 5, 2, 4][: world.size], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(counts)))
    ok, details = True, []
    with node_windows(False):
        off = SharedRows.open(world, counts)
    rows = SharedRows.open(world, counts)
    ok &= off is None and ((rows is None) == (world.size == 1))
    details.append({"rank": world.rank, "off": off is None, "on": rows is not None})
    if rows is None:
        return ok, details

    def expected(k: int, width: int, dtype) -> np.ndarray:
        owner = np.repeat(np.arange(world.size), counts)
        row = np.arange(int(offsets[-1]))
        col = np.arange(width)
        return (1000 * owner[:, None] + 10 * row[:, None] + col + 0.5 * k).astype(dtype)

    prev = None
    for k, (width, dtype) in enumerate([(2, "f8"), (3, "f4"), (1, "f8"), (6, "f8"), (6, "f4")]):
        arr = rows.next(width, dtype)
        want = expected(k, width, dtype)
        rows.mine(arr)[...] = rows.mine(want)
        # until this fence no member writes the previous product's slot again
        good = prev is None or np.array_equal(prev[0], prev[1])
        rows.publish("test")
        good &= arr.shape == want.shape and arr.dtype == want.dtype and np.array_equal(arr, want)
        prev = (arr.copy(), arr)
        ok &= bool(good)
        details.append({"rank": world.rank, "step": k, "ok": bool(good)})
    rows.free()
    return ok, details


def ops_cases(size: int) -> list[tuple[str, str, dict]]:
    """(label, scheme, options) of every registered scheme valid on `size` ranks."""
    out = [("serial", "serial", {})] if size == 1 else []
    out += [("1d", "1d", {}), ("p2p", "p2p", {}), ("1.5d-c1", "1.5d", {"replication": 1})]
    # one node here, so the default cases go through node windows; "-messages": the
    # one-node messages (`GCNTRAIN_NODE_WINDOWS=0`), "-inturn": the blocking MPI broadcasts
    # used across nodes, "-split": p2p's product per source used across nodes
    out += [("1d-inturn", "1d", {}), ("p2p-split", "p2p", {})]
    out += [("1d-messages", "1d", {}), ("p2p-messages", "p2p", {})]
    out += [("1.5d-c1-messages", "1.5d", {"replication": 1})]
    if size % 2 == 0:
        out.append(("1.5d-c2", "1.5d", {"replication": 2}))
        out.append(("1.5d-c2-inturn", "1.5d", {"replication": 2}))
    out += [(f"2d-{grid}", "2d", {"grid": grid}) for grid in grids_2d(size)]
    out += [(f"3d-{grid}", "3d", {"grid": grid}) for grid in grids_3d(size)]
    out += [("vertexcut", "vertexcut", {})]
    out += [("hier", "hier", {}), ("hier-pre", "hier", {"aggr": "pre"})]
    return out


def _block(ops, A: np.ndarray, width: int) -> np.ndarray:
    lo, hi = ops.col_range(width)
    return np.ascontiguousarray(A[ops.rows][:, lo:hi])


def _rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return np.inf
    return float(np.abs(a - b).max(initial=0.0) / max(np.abs(b).max(initial=0.0), 1e-300))


def _xent_errors(
    ops, ser, block, rows, logits, labels, masks, ph, counted=None
) -> tuple[float, float]:
    """Errors of ``ops.xent`` (sums, gradient block) on the block `block` cuts of the logits,
    labels and masks of `rows`, against the serial call.  `counted`: per mask, the local rows
    that count (the trainer's rule for replicas); the gradient is compared on them."""
    C = logits.shape[1]
    kw = {"width": C, "grad_index": 1, "grad_divisor": 7.0, "phase": ph}
    local = [m[rows] for m in masks]
    if counted is not None:
        local = [m & c for m, c in zip(local, counted)]
    sums, grad = ops.xent(block(logits), labels[rows], local, **kw)
    ssums, sgrad = ser.xent(logits, labels, masks, **kw)
    want = block(sgrad)
    if counted is not None:
        want[~counted[1]] = 0
    return _rel(sums, ssums), _rel(grad, want)


def ops_errors(ops, ser: SerialOps, n: int, num_classes: int, seed: int) -> dict[str, float]:
    """Relative error of every Ops method against SerialOps on random matrices (float64)."""
    rng = np.random.default_rng(seed)
    f_in, f_out, C = 7, 5, num_classes
    X = rng.standard_normal((n, f_in))
    W = rng.standard_normal((f_in, f_out))
    b = rng.standard_normal(f_out)
    dZ = rng.standard_normal((n, f_out))
    logits = rng.standard_normal((n, C))
    labels = rng.integers(-1, C, n)
    masks = [rng.random(n) < 0.4, rng.random(n) < 0.3]
    ph = Phase("aggregate", 0, "fwd")
    wspec, bspec = ParamSpec(0, "W", (f_in, f_out)), ParamSpec(0, "b", (f_out,))
    Xl, dZl = _block(ops, X, f_in), _block(ops, dZ, f_out)
    Wl = ops.shard_param(W, wspec, phase=ph)
    bl = ops.shard_param(b, bspec, phase=ph)
    Xs = sp.csr_matrix(np.where(rng.random(X.shape) < 0.3, X, 0.0))
    # rows past `ops.counted` are replicas (vertex-cut clones): sums count the first rows;
    # gradients are held as partial rows whose sum over the copies is the gradient
    k = len(ops.rows) if ops.counted is None else ops.counted
    dZg = dZl.copy()
    dZg[k:] = 0
    Xg = Xl.copy()
    Xg[k:] = 0
    agg_t = ops.aggregate_t(Xg, phase=ph)
    if ops.counted is not None:  # sum the partial rows of every vertex over the ranks
        whole = np.zeros((n, f_in))
        np.add.at(whole, ops.rows, agg_t)
        agg_t = _block(ops, ops.world.allreduce(whole, "test"), f_in)
    err = {
        "aggregate": _rel(ops.aggregate(Xl, phase=ph), _block(ops, ser.S @ X, f_in)),
        "aggregate_t": _rel(agg_t, _block(ops, ser.T @ X, f_in)),
        "matmul": _rel(ops.matmul(Xl, Wl, phase=ph), _block(ops, X @ W, f_out)),
        "matmul_sparse": _rel(
            ops.matmul(sp.csr_matrix(_block(ops, Xs.toarray(), f_in)), Wl, phase=ph),
            _block(ops, Xs @ W, f_out),
        ),
        "gather_param": _rel(ops.gather_param(Wl, wspec, phase=ph), W)
        + _rel(ops.gather_param(bl, bspec, phase=ph), b),
        "param_sum_sq": _rel(ops.param_sum_sq(Wl, wspec, phase=ph), np.sum(W * W)),
        "bias_grad": _rel(
            ops.gather_param(ops.bias_grad(dZg, bspec, phase=ph), bspec, phase=ph), dZ.sum(0)
        ),
        "row_normalize": _rel(
            ops.row_normalize(Xl, width=f_in, phase=ph),
            _block(ops, ser.row_normalize(X, width=f_in, phase=ph), f_in),
        ),
        "dropout": _rel(
            ops.dropout(Xl, (3, 5), 0.4, width=f_in, phase=ph),
            _block(ops, ser.dropout(X, (3, 5), 0.4, width=f_in, phase=ph), f_in),
        ),
        "dropout_backward": _rel(
            ops.dropout_backward(Xl, (3, 6), 0.4, width=f_in, phase=ph),
            _block(ops, ser.dropout_backward(X, (3, 6), 0.4, width=f_in, phase=ph), f_in),
        ),
        "predict": _rel(
            ops.predict(_block(ops, logits, C), width=C, phase=ph),
            ser.predict(logits, width=C, phase=ph)[ops.rows],
        ),
        "agree": float(ops.agree(ops.rank == 0, phase=ph) is not True),
    }
    dH, dW = ops.matmul_grads(Xl, Wl, dZl, need_input_grad=True, phase=ph)
    sdH, sdW = ser.matmul_grads(X, W, dZ, need_input_grad=True, phase=ph)
    err["matmul_grads.dH"] = _rel(dH, _block(ops, sdH, f_in))
    _, dW = ops.matmul_grads(Xl, Wl, dZg, need_input_grad=False, phase=ph)
    gW = ops.reduce_weight_grad(dW, wspec, phase=ph)
    err["reduce_weight_grad"] = _rel(ops.gather_param(gW, wspec, phase=ph), sdW)
    counted = [np.arange(len(ops.rows)) < k] * len(masks)
    err["xent.sums"], err["xent.grad"] = _xent_errors(
        ops, ser, lambda A: _block(ops, A, C), ops.rows, logits, labels, masks, ph, counted
    )
    # node sums count each node once; element sums every element of the local block
    err["node_sum"] = _rel(ops.node_sum(np.array([float(k)]), phase=ph), [n])
    err["element_sum"] = _rel(ops.element_sum(np.array([Xl[:k].size]), phase=ph), [X.size])
    return err


def plexus_ops_errors(ops, ser: SerialOps, n: int, num_classes: int, seed: int) -> dict:
    """Plexus: every Ops method against SerialOps, layer by layer at the placements of the
    layout's model (each operand's block cut where that call expects it)."""
    from gcntrain.schemes.plexus import INPUT, agg_out, mm_out

    lay = ops.layout
    rng = np.random.default_rng(seed)

    def blk(A, place, width):
        lo, hi = ops._cols(place, width)
        return np.ascontiguousarray(A[lay.rows_of(place, ops.rank)][:, lo:hi])

    err = {}

    def put(name, value):
        err[name] = max(err.get(name, 0.0), value)

    for i, (pl, m) in enumerate(zip(lay.plans, lay.model)):
        f_in, f_out = int(m["f_in"]), int(m["f_out"])
        fwd, bwd = Phase("aggregate", i, "fwd"), Phase("aggregate", i, "bwd")
        w = f_in if pl.agg == pl.inp else f_out
        X, D = rng.standard_normal((n, w)), rng.standard_normal((n, w))
        put(
            "aggregate",
            _rel(ops.aggregate(blk(X, pl.agg, w), phase=fwd), blk(ser.S @ X, agg_out(pl.agg), w)),
        )
        put(
            "aggregate_t",
            _rel(ops.aggregate_t(blk(D, agg_out(pl.agg), w), phase=bwd), blk(ser.T @ D, pl.agg, w)),
        )
        W, b = rng.standard_normal((f_in, f_out)), rng.standard_normal(f_out)
        H, dZ = rng.standard_normal((n, f_in)), rng.standard_normal((n, f_out))
        wspec, bspec = ParamSpec(i, "W", (f_in, f_out)), ParamSpec(i, "b", (f_out,))
        Wl, bl = ops.shard_param(W, wspec, phase=fwd), ops.shard_param(b, bspec, phase=fwd)
        put("gather_param", _rel(ops.gather_param(Wl, wspec, phase=fwd), W))
        put("gather_param", _rel(ops.gather_param(bl, bspec, phase=fwd), b))
        put("param_sum_sq", _rel(ops.param_sum_sq(Wl, wspec, phase=fwd), np.sum(W * W)))
        put("param_sum_sq", _rel(ops.param_sum_sq(bl, bspec, phase=fwd), np.sum(b * b)))
        terms = [("", pl.mm, mm_out(pl.mm))]
        if pl.self_first is not None:
            terms.append(("self", pl.inp, pl.out))
        for term, src, dst in terms:
            mm = Phase("matmul", i, "fwd", term=term)
            put(
                f"matmul{term}",
                _rel(ops.matmul(blk(H, src, f_in), Wl, phase=mm), blk(H @ W, dst, f_out)),
            )
            Hs = sp.csr_matrix(np.where(rng.random(H.shape) < 0.3, H, 0.0))
            got = ops.matmul(sp.csr_matrix(blk(Hs.toarray(), src, f_in)), Wl, phase=mm)
            put(f"matmul_sparse{term}", _rel(got, blk(Hs @ W, dst, f_out)))
            mg = Phase("matmul", i, "bwd", term=term)
            dH, dWp = ops.matmul_grads(
                blk(H, src, f_in), Wl, blk(dZ, dst, f_out), need_input_grad=True, phase=mg
            )
            put(f"matmul_grads.dH{term}", _rel(dH, blk(dZ @ W.T, src, f_in)))
            gW = ops.reduce_weight_grad(dWp, wspec, phase=mg)
            put(f"reduce_weight_grad{term}", _rel(ops.gather_param(gW, wspec, phase=mg), H.T @ dZ))
        gb = ops.bias_grad(blk(dZ, pl.out, f_out), bspec, phase=fwd)
        put("bias_grad", _rel(ops.gather_param(gb, bspec, phase=fwd), dZ.sum(0)))
        dp = Phase("dropout", i, "fwd")
        put(
            "dropout",
            _rel(
                ops.dropout(blk(H, pl.inp, f_in), (3, 5), 0.4, width=f_in, phase=dp),
                blk(ser.dropout(H, (3, 5), 0.4, width=f_in, phase=dp), pl.inp, f_in),
            ),
        )
        put(
            "dropout_backward",
            _rel(
                ops.dropout_backward(blk(H, pl.inp, f_in), (3, 6), 0.4, width=f_in, phase=dp),
                blk(ser.dropout_backward(H, (3, 6), 0.4, width=f_in, phase=dp), pl.inp, f_in),
            ),
        )
    out, C, ph = lay.output, num_classes, Phase("loss")
    logits = rng.standard_normal((n, C))
    labels = rng.integers(-1, C, n)
    masks = [rng.random(n) < 0.4, rng.random(n) < 0.3]
    rows = lay.rows_of(out, ops.rank)
    assert np.array_equal(rows, ops.rows)
    e_sums, e_grad = _xent_errors(
        ops, ser, lambda A: blk(A, out, C), rows, logits, labels, masks, ph
    )
    put("xent.sums", e_sums)
    put("xent.grad", e_grad)
    put(
        "predict",
        _rel(
            ops.predict(blk(logits, out, C), width=C, phase=ph),
            ser.predict(logits, width=C, phase=ph)[rows],
        ),
    )
    put("node_sum", _rel(ops.node_sum(np.array([float(len(rows))]), phase=ph), [n]))
    f0 = lay.num_features
    F = rng.standard_normal((n, f0))
    Fl = blk(F, INPUT, f0)
    put(
        "row_normalize",
        _rel(
            ops.row_normalize(Fl, width=f0, phase=ph),
            blk(ser.row_normalize(F, width=f0, phase=ph), INPUT, f0),
        ),
    )
    put("element_sum", _rel(ops.element_sum(np.array([Fl.size]), phase=ph), [F.size]))
    put("agree", float(ops.agree(ops.rank == 0, phase=ph) is not True))
    return err


def case_ops(world):
    """Every Ops method of every scheme equals SerialOps on random matrices (float64,
    1e-12 relative), independent of training; a directed and an undirected graph."""
    ok, details = True, []
    graphs = {
        "rmat-undirected": rmat_odd(8, 251, edge_factor=6, seed=21, num_features=7, num_classes=4),
        "rmat-directed": rmat_odd(
            7, 127, edge_factor=6, seed=22, num_features=7, num_classes=4, symmetrize=False
        ),
    }
    for gname, g in graphs.items():
        for model, agg in (("gcn", "mean"), ("sage", "mean")):
            kind = support_kind(model, agg)
            ser = SerialOps(support_matrix(g, kind))
            cases = ops_cases(world.size) + [
                (
                    f"plexus-{grid}{'-double' if permute == 'double' else ''}",
                    "plexus",
                    {"grid": grid, "permute": permute},
                )
                for grid in grids_3d(world.size)
                for permute in ("none", "double")
            ]
            mcfg = TrainConfig(dtype="float64", model=model, aggregator=agg)
            for label, scheme, opts in cases:
                sch = SCHEMES[scheme]
                part = random_partition(
                    g.n, sch.row_parts(world.size, sch.configure(world.size, opts)), seed=4
                )
                if scheme == "vertexcut":
                    part = "libra"
                _, _, layout, local = load_rank(world, JobSpec(g, mcfg, scheme, opts, part))
                ops = sch.setup(world, layout, local, kind)
                # windows on one node wherever a product has more than one member
                windowed = ops.broadcasts if hasattr(ops, "broadcasts") else ops
                if scheme in ("1d", "p2p") or label.startswith("1.5d-c1"):
                    assert (windowed.shared is not None) == (world.size > 1), label
                if label.endswith("-inturn"):
                    assert ops.broadcasts.ahead
                    ops.broadcasts.ahead = False
                if label.endswith("-messages"):
                    ops.close(phase=Phase("control"))  # frees the windows: messages
                if label.endswith("-split"):
                    assert ops.one_pass == (world.size > 1)
                    ops.close(phase=Phase("control"))
                    ops.one_pass = False
                errors = plexus_ops_errors if scheme == "plexus" else ops_errors
                err = errors(ops, ser, g.n, g.num_classes, seed=7)
                ops.close(phase=Phase("control"))
                worst = max(err.values())
                good = worst <= 1e-12
                ok &= good
                if not good or world.rank == 0:
                    details.append(
                        {
                            "graph": gname,
                            "model": model,
                            "scheme": label,
                            "rank": world.rank,
                            "worst": worst,
                            "bad": {k: v for k, v in err.items() if v > 1e-12},
                        }
                    )
    return ok, details


class Interrupted(Exception):
    """Raised by every rank's epoch callback at the same epoch (a simulated preemption)."""


def resume_cases(size: int) -> list[tuple[str, str, dict, object]]:
    """(label, scheme, options, partition) of every scheme valid on `size` ranks, with
    delayed vertex cut (state carried across epochs) and quantized hier."""
    out = [("serial", "serial", {}, None)] if size == 1 else []
    out += [
        ("1d", "1d", {}, None),
        ("1.5d", "1.5d", {"replication": 2 if size % 2 == 0 else 1}, None),
        ("p2p", "p2p", {}, "random"),
        ("2d", "2d", {}, None),
        ("3d", "3d", {}, None),
        ("plexus", "plexus", {"permute": "double"}, None),
        ("vertexcut-cd0", "vertexcut", {}, "libra"),
        ("vertexcut-cd2", "vertexcut", {"delay": "2"}, "libra"),
        ("hier-int4", "hier", {"quant_bits": "4"}, None),
    ]
    return out


def case_resume(world):
    """Every scheme: a run interrupted after epoch 5 (checkpoints every 2 epochs) and resumed
    from its newest checkpoint (epoch 4) ends with weights bit-identical to the uninterrupted
    run's (same seed and ranks), and records every epoch."""
    import shutil
    import tempfile

    g = rmat_odd(9, edge_factor=8, seed=11, num_features=24, num_classes=4)
    cfg = TrainConfig(epochs=8, seed=3, dtype="float64", early_stopping=0, dropout=0.5)
    ok, details = True, []
    root = bcast_object(tempfile.mkdtemp() if world.rank == 0 else None)

    def stop_after_5(rec):
        if rec.epoch == 5:
            raise Interrupted

    for label, scheme, opts, part in resume_cases(world.size):
        ck = f"{root}/{label}"
        full = run_scheme(world, g, scheme, opts, part, cfg)
        sub = world.split(color=0)  # the interrupted run's exchanges stay on their own comm
        try:
            train_with(
                sub,
                JobSpec(source_of(g), cfg, scheme, opts, part),
                callback=stop_after_5,
                checkpoint=ck,
                checkpoint_every=2,
            )
            interrupted = False
        except Interrupted:
            interrupted = True
        world.tally = Tally()
        again = train_with(world, JobSpec(source_of(g), cfg, scheme, opts, part), resume=ck)
        same = all(
            np.array_equal(a[k], b[k])
            for a, b in zip(again.result.weights, full.result.weights)
            for k in a
        )
        epochs = [r.epoch for r in again.result.history]
        good = interrupted and same and epochs == list(range(1, 9))
        good &= again.extra.get("resumed_from", {}).get("epoch") == 4
        ok &= bool(good)
        if not good or world.rank == 0:
            details.append(
                {
                    "scheme": label,
                    "rank": world.rank,
                    "interrupted": interrupted,
                    "bit_identical": same,
                    "rel_err": rel_err(again.result.weights, full.result.weights),
                    "epochs": epochs,
                }
            )
    world.comm.Barrier()
    if world.rank == 0:
        shutil.rmtree(root, ignore_errors=True)
    return ok, details


CASES = {
    "resume": case_resume,
    "equiv": case_equiv,
    "equiv3d": case_equiv3d,
    "equivplexus": case_equivplexus,
    "equivvertexcut": case_equivvertexcut,
    "equivhier": case_equivhier,
    "delayed": case_delayed,
    "directed": case_directed,
    "accuracy": case_accuracy,
    "nomask": case_nomask,
    "volume": case_volume,
    "ops": case_ops,
    "windows": case_windows,
    "windowbits": case_windowbits,
}


def main(cases: dict | None = None) -> int:
    """Run case ``sys.argv[1]`` of `cases` (default: this module's) on every rank; rank 0
    prints the reduced verdict and every rank's details as one JSON line."""
    case = sys.argv[1]
    world = Comm()
    try:
        ok, details = (CASES if cases is None else cases)[case](world)
    except Exception as e:  # a local failure must not hang the others: abort the job
        from gcntrain.comm.errors import handle_internal_error

        return handle_internal_error(e)
    verdict = world.allreduce(np.array([1 if ok else 0], dtype=np.int64), "report", op="min")
    # gather the per-rank details of failing ranks to rank 0 as JSON text
    text = json.dumps(details, default=float).encode()
    lens = world.comm.allgather(len(text))
    allt = world.comm.gather(text, root=0)
    if world.rank == 0:
        merged = []
        for t in allt:
            merged.extend(json.loads(t.decode()))
        print(
            json.dumps(
                {
                    "case": case,
                    "ranks": world.size,
                    "ok": bool(verdict[0]),
                    "details": merged,
                    "sizes": lens,
                }
            ),
            flush=True,
        )
    return 0 if verdict[0] else 1


if __name__ == "__main__":
    sys.exit(main())
