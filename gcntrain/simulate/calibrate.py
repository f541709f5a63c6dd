"""`gcntrain bench`: measure this machine's profile (`gcntrain.simulate.machine`) with the
project's own kernels and MPI library.

* Memory bandwidth, SpMM, GEMM and quantization rates of one core, and the node's thread
  scaling of SpMM, GEMM and element-wise work at 1, half and all cores
  (`gcntrain.simulate.measure`).
* Element-wise work and the cost per Ops call: serial `gcntrain train` runs (one thread) on
  R-MAT graphs; the graph and dense products timed inside them scale the SpMM and GEMM rates
  (`product_scales`), and the part of their median epoch those products do not explain is
  solved for a rate per element (local rows x sum of widths) and a cost per call.
* MPI (``mpiexec -n 2 python -m gcntrain.comm.bench``): the latency of an 8-byte ping-pong;
  the bandwidth that makes the collective models meet the measured (median, cold-cache)
  Allreduce, Allgather, Bcast, Reduce-scatter and Alltoall of the largest messages (the
  intra-node link; this machine is one node, so the inter-node link is set to the same);
  every measured collective printed beside the model.
* On a machine of at most `MAX_OVERSUBSCRIBE_CORES` cores, what a synchronisation costs when
  busy-polling ranks share cores (``oversubscribed_sync_us``, reached at
  ``oversubscribed_slice_us`` of compute between synchronisations): fitted to real training
  runs at twice as many ranks as cores on R-MAT 12 and 14 (`oversubscribed_fit`).

``quick`` (`gcntrain bench --quick`, the calibration behind ``--machine local``) measures the
same quantities on smaller operands, fewer widths and shapes, shorter serial runs (R-MAT 12
and 14) and one training run per graph in the oversubscribed fit.  Before and after, the
machine's load is read, and the ping-pong latency's median is compared with its best: a
busy machine is reported (`busy_notes`), as its figures are not the machine's.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from gcntrain.schemes.registry import AUTO, OVERHEAD_CALIBRATION
from gcntrain.simulate import measure as M
from gcntrain.simulate.profile_text import profile_text

#: the oversubscribed synchronisation is measured (at twice as many ranks as cores) only on
#: machines with at most this many cores: a cluster node is not run oversubscribed, and on a
#: bigger node the runs would take most of the bench's minute
MAX_OVERSUBSCRIBE_CORES = 8
#: the one-process reference scheme the serial calibration runs train with
REFERENCE = AUTO[0]
#: the quick bench's GEMM shapes (k, n)
QUICK_GEMM = ((4, 4), (16, 16), (64, 16), (64, 64))
#: environment variables of a launcher that a nested ``mpiexec`` must not inherit
LAUNCHER_VARS = ("PMI_", "PMIX_", "HYDRA_", "MPI_LOCALNRANKS", "MPI_LOCALRANKID", "OMPI_", "SLURM_")


def gcntrain_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "gcntrain"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "gcntrain.cli.main"]


def find_mpiexec(given: str | None = None) -> str | None:
    """`given`, else the mpiexec beside this Python (the mpich wheel's), else on PATH."""
    if given:
        return given
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else shutil.which("mpiexec")


def launcher_free_env() -> dict:
    """This process's environment without an MPI launcher's variables, so that an
    ``mpiexec`` started from inside an MPI job (``train --scheme auto`` calibrating the
    machine) starts a job of its own."""
    return {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_VARS)}


def mpi_figures(mpiexec: str, ranks: int = 2, reps: int = 9) -> dict:
    """The JSON of `gcntrain.comm.bench` run on `ranks` ranks."""
    out = subprocess.run(
        [mpiexec, "-n", str(ranks), sys.executable, "-m", "gcntrain.comm.bench"]
        + ["--reps", str(reps)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=launcher_free_env(),
    )
    if out.returncode != 0:
        raise RuntimeError(f"MPI benchmark failed: {out.stderr.strip()[-500:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def fit_link(pingpong: list[list[float]]) -> tuple[float, float]:
    """(latency s, bandwidth B/s) of ping-pong one-way times: latency from the smallest
    message, bandwidth from the slope between the two largest."""
    sizes = np.array([p[0] for p in pingpong], dtype=np.float64)
    t = np.array([p[1] for p in pingpong], dtype=np.float64)
    alpha = float(t[np.argmin(sizes)])
    i = np.argsort(sizes)[-2:]
    slope = (t[i[1]] - t[i[0]]) / (sizes[i[1]] - sizes[i[0]])
    if not slope > 0:
        slope = t[i[1]] / sizes[i[1]]
    return alpha, float(1.0 / slope)


def _collective_fns(memory_rate: float):
    """{kind: cost(p, bytes, link)} of the collectives `gcntrain.comm.bench` times, with the
    byte conventions of its figures (Allreduce and Reduce-scatter: the whole vector, plus
    their reduction at `memory_rate`; Allgather and Bcast: one member's message; Alltoall:
    one member's whole send buffer)."""
    from gcntrain.simulate import collectives as C

    def alltoall(p, n, link):
        b = n * (p - 1) / p
        return C.alltoallv(p - 1, b, b, link)

    return {
        "allreduce": lambda p, n, k: C.allreduce(p, n, k) + C.reduction(p, n, memory_rate),
        "allgather": C.allgather,
        "bcast": C.bcast,
        "reduce_scatter": lambda p, n, k: (
            C.reduce_scatter(p, n, k) + C.reduction(p, n, memory_rate)
        ),
        "alltoall": alltoall,
    }


def fit_collective_bandwidth(mpi: dict, alpha: float, memory_rate: float) -> float:
    """Bandwidth (B/s) that makes the collective models meet the measured collectives of the
    two largest messages (median times with cold caches): the median over them of the
    bandwidth each implies (their copies cost more than a hot ping-pong)."""
    from gcntrain.simulate.machine import Link

    p = mpi["ranks"]
    betas = []
    for kind, fn in _collective_fns(memory_rate).items():
        for b, t in sorted(mpi.get(kind, []))[-2:]:
            a = float(fn(p, b, Link(alpha, 0.0)))
            slope = float(fn(p, b, Link(alpha, 1.0))) - a
            if slope > 0 and t > a:
                betas.append((t - a) / slope)
    return 1.0 / float(np.median(betas)) if betas else 0.0


#: training runs per graph in the oversubscribed fit (full bench): their median, as one run
#: slowed by the rest of the machine would skew a fit
FIT_RUNS = 3


def oversubscribed_fit(
    mpiexec: str, graphs: list[str], name: str, figs: dict, epochs: int = 8, runs: int = FIT_RUNS
) -> tuple[float, float, list[float], list[float]]:
    """(saturated seconds per synchronising step, slice, measured, predicted without it)
    from real training runs at twice as many ranks as cores on two graphs.

    Busy-polling ranks that share cores lose up to a scheduler slice at every
    synchronisation to a partner still computing, which no micro-benchmark of collectives
    reproduces; the loss grows with the compute between synchronisations up to the slice
    (`Placement.sync_cost_for`: ``S x min(1, w / slice)``).  For each slice on a log grid
    the cost S that each graph's run needs solves measured = predicted(0) + S x
    (predicted(1 s) - predicted(0)) (the prediction is linear in S on the critical path);
    the slice where the two graphs need the same S is kept (the closest, when none is
    exact).  With one graph, or when the runs leave nothing to explain, the cost is
    constant (no slice)."""
    from gcntrain.model.trainer import TrainConfig
    from gcntrain.simulate.machine import parse_machine
    from gcntrain.simulate.run import plan_training
    from gcntrain.simulate.timing import placement, predict

    ranks = 2 * figs["cores"]
    scheme = AUTO[1]
    cmd = [mpiexec, "-n", str(ranks), *gcntrain_cmd(), "train", "--scheme", scheme]
    got, sims = [], []
    cfg = TrainConfig(epochs=epochs)
    for graph in graphs:
        times = [
            training_json([*cmd, graph, "--epochs", str(epochs)])["epoch_seconds"]
            for _ in range(runs)
        ]
        got.append(float(np.median(times)))
        sims.append(plan_training(graph, cfg, scheme, ranks))

    def pred(sim, sync: float, slice_: float) -> float:
        prof = parse_machine(profile_text(name, {**figs, "sync": sync, "slice": slice_}), "")
        widths = [sim.num_features, *cfg.hidden, sim.num_classes]
        return predict(sim, placement(prof, ranks, 1, ranks), widths)["epoch_seconds"]

    base = [pred(sim, 0.0, 0.0) for sim in sims]
    excess = [max(g - b, 0.0) for g, b in zip(got, base)]

    def slopes(slice_: float) -> list[float]:
        return [pred(sim, 1.0, slice_) - b for sim, b in zip(sims, base)]

    cost, slice_ = fit_sync_slice(excess, slopes)
    return cost, slice_, got, base


def messages_only():
    """While inside, training runs (and the model pricing them) keep one node's exchanges
    on messages (``GCNTRAIN_NODE_WINDOWS=0``, `gcntrain.comm.shared`): the fits on real
    runs measure what a busy node and a synchronisation between busy-polling ranks cost
    with the messages every multi-node run has; on one node the schemes with node windows
    pay one fence per product instead, priced with the same figures."""
    from gcntrain.comm.shared import windows_set

    return windows_set(False)


def training_json(cmd: list[str]) -> dict:
    """The ``--json`` output of a `gcntrain train` command line (`cmd` without --json)."""
    out = subprocess.run(
        [*cmd, "--json", "--quiet"],
        capture_output=True,
        text=True,
        check=True,
        env=launcher_free_env(),
    )
    return json.loads(out.stdout)


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


def serial_epochs(graph: str, epochs: int = 8, threads: int = 1) -> dict:
    """Median epoch seconds (``epoch_seconds``) and its seconds in graph products
    (``t_aggregation``) and dense products (``t_dense``) of a serial `gcntrain train` of
    `graph` on `threads` threads."""
    out = subprocess.run(
        [
            *gcntrain_cmd(),
            "train",
            graph,
            "--scheme",
            REFERENCE,
            "--epochs",
            str(epochs),
            "--threads",
            str(threads),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
        env=launcher_free_env(),
    )
    d = json.loads(out.stdout)
    return {k: float(d[k]) for k in ("epoch_seconds", "t_aggregation", "t_dense")}


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


def residual_fit(measured, calls, elems, explained) -> tuple[float, float]:
    """(cost per call s, element-wise elements per second) from epochs of two sizes: the
    unexplained time ``measured - explained = calls * o + elems / rate`` solved for o and
    1 / rate (each kept positive)."""
    r = np.asarray(measured, np.float64) - np.asarray(explained, np.float64)
    A = np.stack([np.asarray(calls, np.float64), np.asarray(elems, np.float64)], axis=1)
    o, x = np.linalg.lstsq(A, r, rcond=None)[0]
    if not (o > 0 and x > 0):
        # one unknown only: the per-element rate carries the residual of the larger graph
        o = 1e-7
        x = max(float(r[-1] - calls[-1] * o), 1e-12) / float(elems[-1])
    return float(o), float(1.0 / x)


def memory_gib() -> float:
    """This node's physical memory in GiB (0 where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        return 0.0


def busy_notes(cores: int, mpi: dict | None = None) -> list[str]:
    """Why this machine looks busy now (empty when it does not): a 1-minute load of more
    than half its cores, or an MPI ping-pong whose median latency is more than twice its
    best (other work preempting the ranks)."""
    notes = []
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if load > max(1.0, 0.5 * cores):
        notes.append(f"load {load:.2f} on {cores} cores")
    if mpi and mpi.get("pingpong_best"):
        med, best = mpi["pingpong"][0][1], mpi["pingpong_best"][0][1]
        if best > 0 and med > 2.0 * best:
            notes.append(
                f"MPI latency {med * 1e6:.1f} us against {best * 1e6:.1f} us at best of its repeats"
            )
    return notes


def _serial_fits(figs: dict, name: str, tmp: str, epochs: int, log) -> None:
    """Scale the product rates to the serial epochs and solve the element-wise rate and the
    per-call cost (`product_scales`, `residual_fit`); figs gains ``product_scales``,
    ``other``, ``overhead`` and the graphs in ``graphs``."""
    from gcntrain.model.trainer import TrainConfig
    from gcntrain.simulate.machine import parse_machine
    from gcntrain.simulate.run import plan_training
    from gcntrain.simulate.timing import Placement, epoch_counts, predict

    measured, calls, elems, explained, got, pred = [], [], [], [], [], []
    figs["graphs"] = {}
    for scale in figs["scales"]:
        g = str(Path(tmp) / f"rmat{scale}.h5")
        subprocess.run(
            [*gcntrain_cmd(), "generate", "rmat", "-o", g, "--scale", str(scale)]
            + ["--edge-factor", "8"],
            capture_output=True,
            check=True,
        )
        figs["graphs"][scale] = g
        got.append(serial_epochs(g, epochs))
        measured.append(got[-1]["epoch_seconds"])
        # the serial run used one thread: price it on a one-core node
        one = {**figs, "cores": 1, "other": 1e21, "overhead": 1e-30}
        one.update(threads=None, node_scaling=None)
        part = parse_machine(profile_text(name, one), "<bench>")
        cfg = TrainConfig(epochs=3)
        sim = plan_training(g, cfg, REFERENCE, 1)
        widths = [sim.num_features, *cfg.hidden, sim.num_classes]
        pred.append(predict(sim, Placement(1, 1, part), widths)["breakdown"]["compute_parts"])
        n_calls, n_elems = epoch_counts(sim, widths)
        calls.append(n_calls)
        elems.append(n_elems)
    k_spmm, k_gemm = product_scales(got, pred)
    figs["spmm"] = {w: r / k_spmm for w, r in figs["spmm"].items()}
    figs["gemm"] = {kn: r / k_gemm for kn, r in figs["gemm"].items()}
    figs["product_scales"] = (k_spmm, k_gemm)
    log(
        f"products in the epochs    SpMM x{k_spmm:.2f}, GEMM x{k_gemm:.2f} of the "
        "micro-benchmark's time: rates scaled to the epochs"
    )
    for scale, g, p in zip(figs["scales"], got, pred):
        explained.append(k_spmm * p.get("spmm", 0.0) + k_gemm * p.get("gemm", 0.0))
        log(
            f"serial epoch, R-MAT {scale}    {g['epoch_seconds'] * 1e3:.1f} ms measured, "
            f"{explained[-1] * 1e3:.1f} ms of it SpMM and GEMM"
        )
    figs["overhead"], rate = residual_fit(measured, calls, elems, explained)
    figs["other"] = rate / 1e9
    figs["overhead_all"] = _overhead_all(figs, name, epochs)
    log(
        f"element-wise              {figs['other']:.3f} G elements/s, "
        f"{figs['overhead'] * 1e6:.1f} us per Ops call on one thread, "
        f"{figs['overhead_all'] * 1e6:.1f} us on {figs['cores']}"
    )


def _overhead_all(figs: dict, name: str, epochs: int) -> float:
    """The cost per Ops call with every core's thread (waking a parallel kernel's sleeping
    threads costs each call more than one thread does): serial runs of the two smallest
    graphs on all cores, the part of their epochs the profile so far leaves unexplained,
    per call (at least the one-thread cost)."""
    from gcntrain.model.trainer import TrainConfig
    from gcntrain.simulate.machine import parse_machine
    from gcntrain.simulate.run import plan_training
    from gcntrain.simulate.timing import Placement, epoch_counts, predict

    cores = figs["cores"]
    if cores < 2:
        return figs["overhead"]
    prof = parse_machine(profile_text(name, {**figs, "overhead": 1e-30}), "<bench>")
    excess, calls = [], []
    for scale in figs["scales"][:2]:
        g = figs["graphs"][scale]
        got = serial_epochs(g, epochs, cores)["epoch_seconds"]
        cfg = TrainConfig(epochs=3)
        sim = plan_training(g, cfg, REFERENCE, 1)
        widths = [sim.num_features, *cfg.hidden, sim.num_classes]
        base = predict(sim, Placement(1, 1, prof), widths)["epoch_seconds"]
        excess.append(got - base)
        calls.append(epoch_counts(sim, widths)[0])
    return max(figs["overhead"], sum(excess) / sum(calls))


def mpi_overhead(figs: dict, name: str, mpiexec: str, runs: int, epochs: int) -> float:
    """What an Ops call costs a rank of a distributed run beyond the one-process cost (the
    counted communication wrappers, the MPI call's own software cost): 1d training on the
    smallest graph, two ranks of one thread each (one per core: no oversubscription, no
    threads to wake), where per-call costs dominate; the part of its median epoch the
    profile so far leaves unexplained, per call (at least 0)."""
    from gcntrain.model.trainer import TrainConfig
    from gcntrain.simulate.machine import parse_machine
    from gcntrain.simulate.run import plan_training
    from gcntrain.simulate.timing import epoch_counts, placement, predict

    if figs["cores"] < 2:
        return 0.0
    graph = figs["graphs"][figs["scales"][0]]
    cmd = [mpiexec, "-n", "2", *gcntrain_cmd(), "train", graph, "--scheme", OVERHEAD_CALIBRATION]
    cmd += ["--threads", "1", "--epochs", str(epochs)]
    got = float(np.median([training_json(cmd)["epoch_seconds"] for _ in range(runs)]))
    prof = parse_machine(profile_text(name, figs), "<bench>")
    cfg = TrainConfig(epochs=3)
    sim = plan_training(graph, cfg, OVERHEAD_CALIBRATION, 2)
    widths = [sim.num_features, *cfg.hidden, sim.num_classes]
    place = placement(prof, 2, 1, 2)
    base = predict(sim, place, widths)["epoch_seconds"]
    return max(0.0, (got - base) / epoch_counts(sim, widths)[0])


def _network(figs: dict, exe: str | None, quick: bool, log) -> dict | None:
    """MPI latency and bandwidth into figs (``alpha``, ``bandwidth``); the raw figures, or
    None where no launcher was found (then a latency of 2 us and a quarter of the node's
    bandwidth stand in, and the sources say so)."""
    if exe is None:
        figs["alpha"], figs["bandwidth"] = 2e-6, figs["node_gbs"] * 1e9 / 4
        figs["no_mpi"] = True
        log(
            "MPI                       no mpiexec found: latency 2 us and a quarter of the "
            "node's bandwidth assumed"
        )
        return None
    mpi = mpi_figures(exe, reps=3 if quick else 9)
    figs["alpha"], pingpong_bw = fit_link(mpi["pingpong"])
    mem_rate = figs["core_gbs"] * 1e9
    figs["bandwidth"] = fit_collective_bandwidth(mpi, figs["alpha"], mem_rate) or pingpong_bw
    log(
        f"MPI ping-pong             latency {figs['alpha'] * 1e6:.2f} us, bandwidth "
        f"{pingpong_bw / 1e9:.2f} GB/s; collectives imply {figs['bandwidth'] / 1e9:.2f} GB/s"
    )
    return mpi


def calibrate(
    name: str = "local", mpiexec: str | None = None, log=print, quick: bool = False
) -> tuple[str, dict]:
    """Measure this machine (`quick`: the short form); (profile TOML text, figures)."""
    from gcntrain import __version__
    from gcntrain.kernels.threads import get_threads, max_threads, set_threads
    from gcntrain.simulate.machine import parse_machine

    t0 = time.perf_counter()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    cores = max(1, min(int(cores or 1), max_threads()))
    figs: dict = {
        "host": platform.node() or "this machine",
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "cores": cores,
        "version": __version__,
        "quick": quick,
        "memory_gib": memory_gib(),
    }
    for note in busy_notes(cores):
        log(f"busy machine              {note}: its figures will be low")
    was = get_threads()
    try:
        n = 1 << (23 if quick else 25)
        figs["core_gbs"] = M.triad_gbs(n, 3 if quick else 5)
        figs["node_gbs"] = max(M.node_triad_gbs(cores, n, 3 if quick else 5), figs["core_gbs"])
        log(
            f"memory bandwidth (triad)  one core {figs['core_gbs']:.1f} GB/s, all {cores} cores "
            f"{figs['node_gbs']:.1f} GB/s"
        )
        figs["spmm_scale"] = 16 if quick else 17
        figs["spmm_edge_factors"] = (8,) if quick else M.SPMM_EDGE_FACTORS
        widths = M.QUICK_WIDTHS if quick else M.SPMM_WIDTHS
        figs["spmm"] = M.spmm_gflops(figs["spmm_scale"], widths, figs["spmm_edge_factors"])
        log(
            "SpMM, one thread          "
            + ", ".join(f"w{w} {r:.2f}" for w, r in figs["spmm"].items())
            + " GFLOP/s"
        )
        figs["gemm"] = M.gemm_gflops(1 << 16, QUICK_GEMM) if quick else M.gemm_gflops()
        log(
            "GEMM, one thread          "
            + ", ".join(f"kn{k} {r:.1f}" for k, r in figs["gemm"].items())
            + " GFLOP/s"
        )
        figs["quant"] = M.quant_gelems()
        log(f"quantize + dequantize     {figs['quant']:.3f} G elements/s")
        figs["threads"] = M.thread_scaling(cores, figs["spmm_scale"], 3, 3 if quick else 5)
        figs["node_scaling"] = M.node_scaling(cores, figs["spmm_scale"], 3 if quick else 5)
        for what, key in (
            ("threads, one process", "threads"),
            ("processes, one thread", "node_scaling"),
        ):
            log(
                f"{what:<26}"
                + "; ".join(
                    f"{k} " + ", ".join(f"x{s:.2f} at {T}" for T, s in sorted(t.items()))
                    for k, t in figs[key].items()
                )
            )
    finally:
        set_threads(was)
    exe = find_mpiexec(mpiexec)
    mpi = _network(figs, exe, quick, log)
    figs["scales"] = [12, 14] if quick else [12, 14, 16]
    with tempfile.TemporaryDirectory() as tmp:
        _serial_fits(figs, name, tmp, 4 if quick else 8, log)
        fit = figs["scales"][:2]
        if exe is not None and 2 <= cores <= MAX_OVERSUBSCRIBE_CORES:
            graphs = [figs["graphs"][sc] for sc in fit]
            with messages_only():
                figs["sync"], figs["slice"], got, base = oversubscribed_fit(
                    exe, graphs, name, figs, 4 if quick else 8, 1 if quick else FIT_RUNS
                )
            runs = _fit_runs(fit, got, base, "without it")
            log(
                f"oversubscribed sync       {2 * cores} ranks on {cores} cores, {AUTO[1]}: "
                f"{runs}: up to {figs['sync'] * 1e6:.0f} us per synchronisation, reached at "
                f"{figs['slice'] * 1e6:.0f} us of compute since the previous one"
            )
        if exe is not None and cores >= 2:
            figs["overhead_mpi"] = mpi_overhead(
                figs, name, exe, 1 if quick else FIT_RUNS, 4 if quick else 8
            )
            log(
                f"distributed call          {figs['overhead_mpi'] * 1e6:.1f} us more per Ops "
                f"call on 2 ranks of one thread ({OVERHEAD_CALIBRATION}, R-MAT {fit[0]})"
            )
    figs.pop("graphs", None)
    text = profile_text(name, figs)
    m = parse_machine(text, "<bench>")
    if mpi is not None:
        for kind, fn in _collective_fns(figs["core_gbs"] * 1e9).items():
            model = [float(fn(mpi["ranks"], b, m.intra)) for b, _ in mpi[kind]]
            rows = [
                f"{int(b)} B {t * 1e6:.1f} us (model {x * 1e6:.1f})"
                for (b, t), x in zip(mpi[kind], model)
            ]
            log(f"MPI {kind:<22}" + "; ".join(rows))
        figs["mpi"] = mpi
    figs["busy"] = busy_notes(cores, mpi)
    for note in figs["busy"]:
        log(f"busy machine              {note}: rerun on an idle machine for its own figures")
    figs["seconds"] = time.perf_counter() - t0
    log(f"measured in {figs['seconds']:.1f} s")
    return text, figs
