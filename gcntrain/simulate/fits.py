"""The figures of `gcntrain bench` that only training runs show (`gcntrain.simulate.calibrate`):
each solved from real `gcntrain train` epochs against the model's prediction of the same
run with the figures measured so far.

* `product_scales`: the graph and dense products timed inside serial one-thread epochs on
  R-MAT 12, 14 (and 16) over their times predicted from the micro-benchmark rates;
* the cost per Ops call (`call_costs`), from training runs on a tiny graph (R-MAT
  `TINY_SCALE`, 256 nodes) whose epochs are almost all per-call cost: one thread (Python,
  wrappers), a thread on every core (waking a parallel kernel's threads); and the cost per
  MPI operation (the counted communication layer around each call) from a two-rank 1d run
  of one thread each; each is what the run's median epoch leaves unexplained by the
  profile so far, per call or per operation;
* the element-wise rate (`elementwise_rate`): the serial epochs' measured time outside the
  graph and dense products (``t_other``) less the per-call cost, per element;
* the oversubscribed synchronisation (`oversubscribed_fit`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from gcntrain import status
from gcntrain.schemes.registry import AUTO, OVERHEAD_CALIBRATION
from gcntrain.simulate import measure as M
from gcntrain.simulate.launch import (
    gcntrain_cmd,
    generate_rmat,
    serial_epochs,
    training_json,
)
from gcntrain.simulate.profile_text import profile_text

#: the one-process reference scheme the serial calibration runs train with
REFERENCE = AUTO[0]
#: the R-MAT scale of the per-call fits' graph (256 nodes: compute is a few per cent)
TINY_SCALE = 8
#: training runs per graph in the oversubscribed fit (full bench): their median, as one run
#: slowed by the rest of the machine would skew a fit
FIT_RUNS = 3


#: figures of a profile without thread tables (one core, no sharing to price)
NO_TABLES = {"threads": None, "node_scaling": None}


def _plan(figs: dict, graph: str, scheme: str, P: int, epochs: int = 3):
    """(plan, layer widths) of a `gcntrain train` run of `scheme` on `P` ranks of `graph`,
    made once per bench (kept in ``figs["plans"]``: the fits price the same runs again and
    again with other figures)."""
    from gcntrain.model.trainer import TrainConfig
    from gcntrain.simulate.run import plan_training
    from gcntrain.simulate.target import PlanTarget

    plans = figs.setdefault("plans", {})
    key = (graph, scheme, P, epochs)
    if key not in plans:
        cfg = TrainConfig(epochs=epochs)
        sim = plan_training(PlanTarget(graph, cfg, scheme, P))
        plans[key] = (sim, [sim.num_features, *cfg.hidden, sim.num_classes])
    return plans[key]


def _price(figs: dict, name: str, sim, widths, P: int, cores=None, **fig) -> dict:
    """The model's prediction (`gcntrain.simulate.timing.predict`) of a planned run on `P`
    ranks of one node, with the figures so far updated by `fig`; `cores`: price on a node
    of that many cores (a run of one thread per rank)."""
    from gcntrain.simulate.machine import parse_machine
    from gcntrain.simulate.timing import placement, predict

    prof = parse_machine(profile_text(name, {**figs, **fig}), "<bench>")
    if cores is not None:
        prof = replace(prof, cores=int(cores))
    return predict(sim, placement(prof, P, 1, P), widths)


def _model(figs: dict, name: str, graph: str, scheme: str, P: int, cores=None, **fig):
    """(epoch seconds, compute parts, Ops calls per epoch, element-wise elements) the model
    predicts for a run of `scheme` on `P` ranks of one node of `graph` (`_price`)."""
    from gcntrain.simulate.timing import epoch_counts

    sim, widths = _plan(figs, graph, scheme, P)
    got = _price(figs, name, sim, widths, P, cores, **fig)
    calls, elems = epoch_counts(sim, widths)
    return got["epoch_seconds"], got["breakdown"].get("compute_parts", {}), calls, elems


def product_scales(measured: list[dict], predicted: list[dict]) -> tuple[float, float]:
    """(SpMM, GEMM) time factors: the graph and dense products timed inside the serial
    epochs, summed over the graphs, over their times predicted from the micro-benchmark
    rates (1 where a part is not predicted).  The micro-benchmark runs one product with its
    operands out of the caches; inside an epoch the products of these graphs ran up to 45 %
    faster (docs/simulator.md), and pricing them at the micro-benchmark's rates left no
    time for the element-wise work."""

    def ratio(key_m: str, key_p: str) -> float:
        m = sum(x[key_m] for x in measured)
        p = sum(x.get(key_p, 0.0) for x in predicted)
        return m / p if p > 0 and m > 0 else 1.0

    return ratio("t_aggregation", "spmm"), ratio("t_dense", "gemm")


def elementwise_rate(unexplained, calls, elems, overhead: float) -> float:
    """Elements per second of element-wise work: the epochs' unexplained seconds less their
    per-call cost, over their elements (least squares through the origin, summed over the
    graphs; at least 1e-3 of the time where the per-call cost explains everything)."""
    rest = np.asarray(unexplained, np.float64) - np.asarray(calls, np.float64) * overhead
    e = np.asarray(elems, np.float64)
    floor = 1e-3 * np.abs(np.asarray(unexplained, np.float64))
    return float(e.sum() / np.maximum(rest, floor).sum())


def call_costs(figs, name, tiny, epochs, runs, mpiexec, elems_fit) -> dict:
    """{"overhead", "overhead_all", "mpi_op", "other"} (module docstring): the one-thread
    cost per call and the element-wise rate are solved together (two rounds: the tiny
    graph's element-wise work is priced with the rate of the round before); the cost per
    MPI operation is the two-rank run's unexplained time over the operations the model
    counts for it (the prediction is linear in that cost)."""
    out = {"other": 1e21, "overhead_all": 0.0, "mpi_op": 0.0}
    got = [serial_epochs(tiny, REFERENCE, epochs)["epoch_seconds"] for _ in range(runs)]
    got = float(np.median(got))
    unexplained, calls, elems = elems_fit
    for _ in range(2):
        pred, _, n_calls, _ = _model(
            figs, name, tiny, REFERENCE, 1, cores=1, **NO_TABLES, other=out["other"], overhead=1e-30
        )
        out["overhead"] = max(1e-7, (got - pred) / n_calls)
        out["other"] = elementwise_rate(unexplained, calls, elems, out["overhead"]) / 1e9
    cores = figs["cores"]
    if cores >= 2:
        t_all = serial_epochs(tiny, REFERENCE, epochs, cores)["epoch_seconds"]
        fig = {**out, "overhead": 1e-30, "overhead_all": 0.0}
        pred, _, n_calls, _ = _model(figs, name, tiny, REFERENCE, 1, **fig)
        out["overhead_all"] = max(out["overhead"], (t_all - pred) / n_calls)
    if mpiexec is not None and cores >= 2:
        cmd = [mpiexec, "-n", "2", *gcntrain_cmd(), "train", tiny]
        cmd += ["--scheme", OVERHEAD_CALIBRATION, "--threads", "1", "--epochs", str(epochs)]
        times = [training_json(cmd)["epoch_seconds"] for _ in range(runs)]
        fig = {**out, "mpi_op": 0.0}
        pred, _, _, _ = _model(figs, name, tiny, OVERHEAD_CALIBRATION, 2, cores=2, **fig)
        fig["mpi_op"] = 1e-5
        per_op, _, _, _ = _model(figs, name, tiny, OVERHEAD_CALIBRATION, 2, cores=2, **fig)
        ops = (per_op - pred) / 1e-5  # MPI operations on the critical path per epoch
        out["mpi_op"] = max(0.0, (float(np.median(times)) - pred) / ops) if ops > 0 else 0.0
    return out


def epoch_scaling(figs: dict, one: dict, graph: str, epochs: int, runs: int, log) -> None:
    """One process's SpMM and GEMM thread scaling as the epochs show it: the graph and dense
    products timed inside serial epochs of `graph` at half and all cores (median of `runs`)
    over their times on one thread (`one`).  They replace the micro-benchmark's figures at
    those counts: where a process's threads land varies from process to process (on the
    development machine x1.2 in some, x1.8 in others), and training runs are the processes
    the model prices."""
    for T in M.thread_counts(figs["cores"]):
        if T == 1:
            continue
        got = [serial_epochs(graph, REFERENCE, epochs, T) for _ in range(runs)]
        agg = float(np.median([g["t_aggregation"] for g in got]))
        dense = float(np.median([g["t_dense"] for g in got]))
        if agg > 0:
            figs["threads"]["spmm"][T] = one["t_aggregation"] / agg
        if dense > 0:
            figs["threads"]["gemm"][T] = one["t_dense"] / dense
    log(
        "threads, in the epochs    "
        + "; ".join(
            f"{k} " + ", ".join(f"x{v:.2f} at {T}" for T, v in sorted(figs["threads"][k].items()))
            for k in ("spmm", "gemm")
        )
    )


def _critical_part(figs, name, graph, kind: str, T: int, speedup: float) -> float:
    """The model's seconds of `kind` work ("spmm", "gemm") on the critical rank of a 1d run
    of `T` one-thread ranks of `graph`, with ``node_scaling[kind][T]`` set to `speedup`."""
    table = {k: dict(v) for k, v in figs["node_scaling"].items()}
    table[kind][T] = speedup
    fig = {"other": 1e21, "overhead": 1e-30, **figs, "node_scaling": table}
    _, parts, _, _ = _model(fig, name, graph, OVERHEAD_CALIBRATION, T, cores=T)
    return float(parts.get(kind, 0.0))


def solve_node_speedup(part, measured: float, T: int, steps: int = 30) -> float | None:
    """S in [T / 8, T] with ``part(S) = measured`` (`part` falls as S grows: more throughput
    of the node's one-thread processes, less time), by bisection on log S; T where even
    unshared ranks (S = T) take longer than measured, T / 8 where the node would have to be
    slower than that; None where the model prices no such work."""
    lo, hi = T / 8.0, float(T)
    if not measured > 0 or part(hi) <= 0:
        return None
    if part(hi) >= measured:
        return hi
    if part(lo) <= measured:
        return lo
    for _ in range(steps):
        mid = float(np.sqrt(lo * hi))
        lo, hi = (mid, hi) if part(mid) > measured else (lo, mid)
    return float(np.sqrt(lo * hi))


def process_scaling(figs, name, graph, epochs, runs, mpiexec, log) -> None:
    """The node's SpMM and GEMM scaling over one-thread processes as the epochs show it:
    1d on half and all cores' worth of one-thread ranks of `graph` (median of `runs`), the
    critical rank's graph and dense products (communication inside them removed) against
    the model's price of the same rank, solved for the node's speed-up at that count
    (`solve_node_speedup`).  They replace the micro-benchmark's figures there, as
    `epoch_scaling` does for one process's threads: the micro-benchmark streams one product
    with cold caches, while training ranks repeat theirs over a working set that may stay in
    the shared cache (on a 2-core VM with a 105 MiB L3, two one-thread ranks did their SpMM
    at x2.0 of one where the micro-benchmark measured x1.65)."""
    for T in M.thread_counts(figs["cores"]):
        if T == 1:
            continue
        cmd = [mpiexec, "-n", str(T), *gcntrain_cmd(), "train", graph]
        cmd += ["--scheme", OVERHEAD_CALIBRATION, "--threads", "1", "--epochs", str(epochs)]
        got = [training_json(cmd)["epoch_breakdown"] for _ in range(runs)]
        for kind, key in (("spmm", "aggregation"), ("gemm", "dense")):
            measured = float(np.median([g.get(key, 0.0) for g in got]))
            speedup = solve_node_speedup(
                lambda s, k=kind, n=T: _critical_part(figs, name, graph, k, n, s), measured, T
            )
            if speedup is not None:
                figs["node_scaling"][kind][T] = speedup
    log(
        "processes, in the epochs  "
        + "; ".join(
            f"{k} "
            + ", ".join(f"x{v:.2f} at {T}" for T, v in sorted(figs["node_scaling"][k].items()))
            for k in ("spmm", "gemm")
        )
    )


def serial_fits(
    figs: dict, name: str, tmp: str, epochs: int, runs: int, mpiexec, log, epoch_threads=True
) -> None:
    """The fits of the module docstring into `figs`: ``spmm`` and ``gemm`` scaled to the
    epochs, ``product_scales``, ``overhead``, ``overhead_all``, ``mpi_op``,
    ``other``; the graphs made (``graphs``: scale -> file, `TINY_SCALE` included)."""
    with status.phase("generating the timing graphs"):
        figs["graphs"] = {
            s: generate_rmat(str(Path(tmp) / f"rmat{s}.h5"), s)
            for s in (TINY_SCALE, *figs["scales"])
        }
    got, pred, calls, elems = [], [], [], []
    one = {"cores": 1, "other": 1e21, "overhead": 1e-30, **NO_TABLES}
    for scale in figs["scales"]:
        g = figs["graphs"][scale]
        with status.phase(f"timing serial epochs on R-MAT {scale}"):
            got.append(serial_epochs(g, REFERENCE, epochs))
        with status.phase(f"pricing them on R-MAT {scale}"):
            _, parts, n_calls, n_elems = _model(figs, name, g, REFERENCE, 1, **one)
        pred.append(parts)
        calls.append(n_calls)
        elems.append(n_elems)
    k_spmm, k_gemm = product_scales(got, pred)
    figs["spmm"] = {w: r / k_spmm for w, r in figs["spmm"].items()}
    if figs.get("spmm_row_ns"):  # the kernel's whole time scales, its rows with its entries
        figs["spmm_row_ns"] = {w: v * k_spmm for w, v in figs["spmm_row_ns"].items()}
    figs["gemm"] = {kn: r / k_gemm for kn, r in figs["gemm"].items()}
    figs["product_scales"] = (k_spmm, k_gemm)
    log(
        f"products in the epochs    SpMM x{k_spmm:.2f}, GEMM x{k_gemm:.2f} of the "
        "micro-benchmark's time: rates scaled to the epochs"
    )
    # the element-wise work is what the epoch spends outside its products, as timed in the
    # run: the epoch less the *predicted* products (scaled by one factor for all graphs)
    # carried each graph's product-time error into it (on a 16-core node the R-MAT 14
    # products came out above the whole epoch, and the rate 2.5x too slow)
    unexplained = [g["t_other"] for g in got]
    for scale, g in zip(figs["scales"], got):
        log(
            f"serial epoch, R-MAT {scale}    {g['epoch_seconds'] * 1e3:.1f} ms measured: "
            f"SpMM {g['t_aggregation'] * 1e3:.1f}, GEMM {g['t_dense'] * 1e3:.1f}, "
            f"other {g['t_other'] * 1e3:.1f} ms"
        )
    if epoch_threads:
        largest = figs["graphs"][figs["scales"][-1]]
        epoch_scaling(figs, got[-1], largest, epochs, runs, log)
        figs["epoch_scaling"] = "threads"
        if mpiexec is not None and figs.get("node_scaling"):
            process_scaling(figs, name, largest, epochs, runs, mpiexec, log)
            figs["epoch_scaling"] = "threads and processes"
    tiny = figs["graphs"][TINY_SCALE]
    figs.update(call_costs(figs, name, tiny, epochs, runs, mpiexec, (unexplained, calls, elems)))
    log(
        f"per Ops call              {figs['overhead'] * 1e6:.1f} us on one thread, "
        f"{figs['overhead_all'] * 1e6:.1f} us on {figs['cores']}, "
        f"{figs['mpi_op'] * 1e6:.1f} us per MPI operation (R-MAT {TINY_SCALE})"
    )
    log(f"element-wise              {figs['other']:.3f} G elements/s")


def oversubscribed_fit(
    mpiexec: str,
    graphs: list[str],
    name: str,
    figs: dict,
    epochs: int = 8,
    runs: int = FIT_RUNS,
    tiny: str | None = None,
) -> tuple[float, float, float, list[float], list[float]]:
    """(floor, saturated seconds per synchronising step, slice, measured, predicted without
    them) from real training runs at twice as many ranks as cores.

    Busy-polling ranks that share cores lose up to a scheduler slice at every
    synchronisation to a partner still computing, which no micro-benchmark of collectives
    reproduces; the loss grows with the compute between synchronisations up to the slice
    (`Placement.sync_cost_for`: ``floor + S x min(1, w / slice)``).  The floor comes first,
    from the `tiny` graph, whose synchronisations have almost no compute between them: a
    waiting rank sleeps (MPICH's progress throttle) and wakes no sooner than the kernel's
    timer allows (its timer slack is 50 us by default); every step of that run is over all
    2C ranks of the node, the geometry the profile's floor stands for
    (`gcntrain.simulate.oversubscribed.FIT_ROUNDS`).  Then, for each slice on a log grid,
    the cost S that each of `graphs` needs solves measured = predicted(0) + S x
    (predicted(1 s) - predicted(0)) (the prediction is linear in S on the critical path);
    the slice where the graphs need the same S is kept (the closest, when none is exact).
    With fewer than two `graphs` only the floor is fitted (one graph cannot place the slice,
    and a constant S would charge every synchronisation of a small graph the saturated
    cost); when the runs leave nothing to explain, S is constant (no slice)."""
    ranks = 2 * figs["cores"]
    scheme = AUTO[1]
    cmd = [mpiexec, "-n", str(ranks), *gcntrain_cmd(), "train", "--scheme", scheme]

    def measure(graph: str) -> tuple[float, object]:
        times = [
            training_json([*cmd, graph, "--epochs", str(epochs)])["epoch_seconds"]
            for _ in range(runs)
        ]
        return float(np.median(times)), _plan(figs, graph, scheme, ranks, epochs)

    def pred(plan, sync: float, slice_: float, floor: float) -> float:
        sim, widths = plan
        fig = {"sync": sync, "slice": slice_, "floor": floor}
        return _price(figs, name, sim, widths, ranks, **fig)["epoch_seconds"]

    floor = 0.0
    if tiny is not None:
        got_t, sim_t = measure(tiny)
        base_t = pred(sim_t, 0.0, 0.0, 0.0)
        per = pred(sim_t, 0.0, 0.0, 1e-5) - base_t  # linear in the floor: per 10 us
        floor = max(0.0, (got_t - base_t) / per * 1e-5) if per > 0 else 0.0
    if len(graphs) < 2:
        return floor, 0.0, 0.0, [], []
    got, sims = zip(*(measure(g) for g in graphs))
    base = [pred(sim, 0.0, 0.0, floor) for sim in sims]
    excess = [max(g - b, 0.0) for g, b in zip(got, base)]

    def slopes(slice_: float) -> list[float]:
        return [pred(sim, 1.0, slice_, floor) - b for sim, b in zip(sims, base)]

    cost, slice_ = fit_sync_slice(excess, slopes)
    return floor, cost, slice_, list(got), base


def messages_only():
    """While inside, training runs (and the model pricing them) keep one node's exchanges
    on messages (``GCNTRAIN_NODE_WINDOWS=0``, `gcntrain.comm.shared`): the oversubscribed
    fit measures what a synchronisation between busy-polling ranks costs with the messages
    every multi-node run has; on one node the schemes with node windows pay one fence per
    product instead, priced with the same figures."""
    from gcntrain.comm.shared import windows_set

    return windows_set(False)


def _fit_runs(scales, measured, model, label: str) -> str:
    """The log text of a fit's runs: per R-MAT scale, measured and model seconds in ms."""
    return ", ".join(
        f"R-MAT {sc} {g * 1e3:.1f} ms measured, {b * 1e3:.1f} ms {label}"
        for sc, g, b in zip(scales, measured, model)
    )


#: the slices `fit_sync_slice` tries (seconds of compute between synchronisations)
SLICES = np.geomspace(20e-6, 50e-3, 28)


def fit_sync_slice(excess: list[float], slopes) -> tuple[float, float]:
    """(cost, slice) with ``excess[i] = cost x slopes(slice)[i]`` for every run i, as nearly
    as the grid `SLICES` allows (the slice where the runs' solved costs agree best; their
    geometric mean).  ``slopes(0)`` is the constant model's (slice 0): used with fewer than
    two runs, when a run leaves nothing to explain, or when no slice gives positive costs."""

    def costs(slice_: float) -> list[float]:
        return [e / d if d > 0 else 0.0 for e, d in zip(excess, slopes(slice_))]

    if len(excess) < 2 or min(excess) <= 0.0:
        return _positive_mean(costs(0.0)), 0.0
    best = None
    for slice_ in SLICES:
        c = costs(float(slice_))
        if min(c) <= 0.0:
            continue
        gap = float(np.ptp(np.log(c)))
        if best is None or gap < best[0]:
            best = (gap, float(np.exp(np.mean(np.log(c)))), float(slice_))
    if best is None:
        return _positive_mean(costs(0.0)), 0.0
    return best[1], best[2]


def _positive_mean(values: list[float]) -> float:
    """Mean of the positive values (runs that left something to explain), else 0."""
    pos = [v for v in values if v > 0]
    return float(np.mean(pos)) if pos else 0.0
