"""`gcntrain bench`: measure this machine's profile (`gcntrain.simulate.machine`) with the
project's own kernels and MPI library.

* SpMM (`spmm_csr_dense`, one thread): random CSR matrices of two densities (4 and 16
  nonzeros per row) at dense widths 8, 16, 64 and 256, each product timed with its operands
  out of the caches; the profile keeps the median over the densities per width.
* GEMM (numpy ``@``, as the Ops' dense products): tall-skinny products of the model's shapes.
* Quantization (`quantize_blocks` + `dequantize_blocks`, 2 bits).
* Element-wise work and the cost per Ops call: serial `gcntrain train` runs (one thread) on
  two R-MAT graphs; the part of their median epoch that SpMM and GEMM do not explain, solved
  for a rate per element (local rows x sum of widths) and a cost per call.
* MPI (``mpiexec -n 2 python -m gcntrain.comm.bench``): the latency of an 8-byte ping-pong;
  the bandwidth that makes the collective models meet the measured (median, cold-cache)
  Allreduce, Allgather, Bcast, Reduce-scatter and Alltoall of the largest messages (the
  intra-node link; this machine is one node, so the inter-node link is set to the same);
  every measured collective printed beside the model.
* On a machine of at most 16 cores, what a synchronisation costs when busy-polling ranks
  share cores (``oversubscribed_sync_us``, reached at ``oversubscribed_slice_us`` of compute
  between synchronisations): fitted to real training runs (median of three per graph) at
  twice as many ranks as cores on R-MAT 12 and 14 (`oversubscribed_fit`).
* How much slower a rank computes when every core of the node computes
  (``busy_compute_factor``): 1d runs with one rank per core on R-MAT 12 and 14, their
  critical rank's compute against the model's (`busy_fit`), on nodes of 2 to 64 cores.
* Memory bandwidth: a numpy triad.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from gcntrain.schemes.registry import AUTO, BUSY_CALIBRATION

#: the oversubscribed synchronisation is measured (at twice as many ranks as cores) only on
#: machines with at most this many cores (a cluster node is not run oversubscribed)
MAX_OVERSUBSCRIBE_CORES = 16
#: the one-process reference scheme the serial calibration runs train with
REFERENCE = AUTO[0]
#: SpMM widths measured, and the R-MAT edge factors of the matrices (about 4 and 15 stored
#: entries per row after symmetrising)
SPMM_WIDTHS = (4, 8, 16, 32, 64, 256)
#: GEMM shapes (k, n) measured: products k * n of 16 to 4096 (a layer's weights, or the
#: chunk of them a rank multiplies when the feature columns are split over ranks)
GEMM_SHAPES = ((4, 4), (8, 8), (16, 4), (16, 16), (64, 4), (64, 16), (16, 64), (64, 64))
SPMM_EDGE_FACTORS = (2, 8)


def best_time(fn, repeat: int = 3) -> float:
    """Best of `repeat` timed calls of `fn` (after one warm-up call)."""
    fn()
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def cold_time(fn, repeat: int = 3, flush_bytes: int = 64 << 20) -> float:
    """Median of `repeat` timed calls of `fn`, each after touching `flush_bytes` so that its
    operands start out of the caches (as in a training epoch, where other work runs between
    two products); one warm-up call first."""
    flush = np.zeros(flush_bytes // 8)
    fn()
    times = []
    for _ in range(repeat):
        flush += 1.0
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def triad_gbs(n: int = 1 << 25, repeat: int = 5) -> float:
    """Memory bandwidth now: best of `repeat` numpy triads a = b + 3 c over `n` float64,
    done as two passes (a = 3 c; a += b) that move 5 x 8 n bytes (write-allocate not
    counted)."""
    b, c = np.ones(n), np.full(n, 2.0)
    a = np.empty(n)

    def triad():
        np.multiply(c, 3.0, out=a)
        np.add(a, b, out=a)

    return 5 * 8 * n / best_time(triad, repeat) / 1e9


def rmat_csr(scale: int, edge_factor: int, seed: int = 0):
    """(indptr, indices, data) of the project's R-MAT generator's symmetrised adjacency
    (Graph500 a, b, c; skewed degrees, hot columns), float32 values."""
    from gcntrain.data.generate import rmat

    g = rmat(scale, edge_factor, seed=seed, num_features=1, num_classes=2)
    data = np.random.default_rng(seed).random(g.indices.shape[0], dtype=np.float32)
    return g.indptr, g.indices, data


def spmm_gflops(scale: int = 17) -> dict[int, float]:
    """{width: GFLOP/s of one thread} on R-MAT adjacencies of 2**scale rows (median over
    `SPMM_EDGE_FACTORS`): the graphs GNN training runs on have skewed degrees whose hot rows
    of the dense operand stay in cache, unlike uniform random columns."""
    from gcntrain.kernels.spmm import spmm_csr_dense
    from gcntrain.kernels.threads import set_threads

    set_threads(1)
    out: dict[int, list[float]] = {w: [] for w in SPMM_WIDTHS}
    n = 1 << scale
    for ef in SPMM_EDGE_FACTORS:
        indptr, indices, data = rmat_csr(scale, ef)
        for w in SPMM_WIDTHS:
            rows = n if w <= 64 else n // 4
            ip = indptr[: rows + 1]
            X = np.random.default_rng(1).random((n, w), dtype=np.float32)
            Y = np.empty((rows, w), dtype=np.float32)
            t = cold_time(
                lambda ip=ip, ix=indices, v=data, X=X, Y=Y: spmm_csr_dense(ip, ix, v, X, Y)
            )
            out[w].append(2.0 * float(ip[-1]) * w / t / 1e9)
    return {w: float(np.median(v)) for w, v in out.items()}


def gemm_gflops(n: int = 1 << 17) -> dict[int, float]:
    """{k * n: GFLOP/s of one thread} in the model's tall-skinny products
    (`gcntrain.kernels.dense`: rows x k @ k x n, and the weight gradient k x rows @ rows x
    n), for every (k, n) of `GEMM_SHAPES`; per product k * n the median over its shapes and
    both forms.  Schemes that split the feature columns over ranks (2D, 3D, Plexus) run
    narrower products, which reach a lower rate."""
    from gcntrain.kernels.dense import matmul, matmul_tn
    from gcntrain.kernels.threads import set_threads

    set_threads(1)
    rng = np.random.default_rng(2)
    out: dict[int, list[float]] = {}
    for k, m in GEMM_SHAPES:
        A, B = rng.random((n, k), dtype=np.float32), rng.random((n, m), dtype=np.float32)
        W = rng.random((k, m), dtype=np.float32)
        flops = 2.0 * n * k * m
        out.setdefault(k * m, []).extend(
            [
                flops / best_time(lambda A=A, W=W: matmul(A, W)) / 1e9,
                flops / best_time(lambda A=A, B=B: matmul_tn(A, B)) / 1e9,
            ]
        )
    return {kn: float(np.median(v)) for kn, v in sorted(out.items())}


def quant_gelems(n: int = 1 << 16, width: int = 64) -> float:
    """Elements quantized or dequantized per second (2 bits, one group per row)."""
    from gcntrain.kernels.quant import dequantize_blocks, quantize_blocks

    X = np.random.default_rng(3).random((n, width), dtype=np.float32)
    rows = np.arange(n, dtype=np.int64)
    counts = np.array([n // 2, n - n // 2], dtype=np.int64)
    tq = best_time(lambda: quantize_blocks(X, rows, counts, 2, 1))
    buf, _ = quantize_blocks(X, rows, counts, 2, 1)
    td = best_time(lambda: dequantize_blocks(buf, counts, width, 2, 1, np.float32))
    return 2.0 * n * width / (tq + td) / 1e9


def gcntrain_cmd() -> list[str]:
    exe = Path(sys.executable).parent / "gcntrain"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "gcntrain.cli.main"]


def find_mpiexec(given: str | None = None) -> str | None:
    """`given`, else the mpiexec beside this Python (the mpich wheel's), else on PATH."""
    if given:
        return given
    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else shutil.which("mpiexec")


def mpi_figures(mpiexec: str, ranks: int = 2) -> dict:
    """The JSON of `gcntrain.comm.bench` run on `ranks` ranks."""
    out = subprocess.run(
        [mpiexec, "-n", str(ranks), sys.executable, "-m", "gcntrain.comm.bench"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
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


def oversubscribed_fit(
    mpiexec: str, graphs: list[str], name: str, figs: dict, epochs: int = 8
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
        runs = [
            training_json([*cmd, graph, "--epochs", str(epochs)])["epoch_seconds"]
            for _ in range(FIT_RUNS)
        ]
        got.append(float(np.median(runs)))
        sims.append(plan_training(graph, cfg, scheme, ranks))

    def pred(sim, sync: float, slice_: float) -> float:
        prof = parse_machine(_profile_text(name, {**figs, "sync": sync, "slice": slice_}), "")
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


#: training runs per graph in the fits on real runs (`busy_fit`, `oversubscribed_fit`): their
#: median, as one run slowed by the rest of the machine would skew a fit
FIT_RUNS = 3


def training_json(cmd: list[str]) -> dict:
    """The ``--json`` output of a `gcntrain train` command line (`cmd` without --json)."""
    out = subprocess.run([*cmd, "--json", "--quiet"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


#: the busy-node fit runs on nodes of at most this many cores (one rank per core)
MAX_BUSY_CORES = 64


def busy_fit(mpiexec: str, graphs: list[str], name: str, figs: dict, epochs: int = 8):
    """(factor, measured, predicted): the compute of the critical rank of `BUSY_CALIBRATION`
    runs with one rank per core on `graphs` (aggregation + dense + element-wise of the
    median epoch) over the model's compute for them at factor 1, summed over the graphs,
    both less the model's per-call cost (which the factor does not scale): how much slower
    a rank computes while every core of the node does (the rates were measured with one
    core busy).  At least 1."""
    from gcntrain.model.trainer import TrainConfig
    from gcntrain.simulate.machine import parse_machine
    from gcntrain.simulate.run import plan_training
    from gcntrain.simulate.timing import epoch_counts, placement, predict

    ranks = figs["cores"]
    cfg = TrainConfig(epochs=epochs)
    prof = parse_machine(_profile_text(name, {**figs, "busy": 1.0}), "<bench>")
    measured, predicted, calls = [], [], []
    for graph in graphs:
        cmd = [mpiexec, "-n", str(ranks), *gcntrain_cmd(), "train", graph]
        cmd += ["--scheme", BUSY_CALIBRATION, "--epochs", str(epochs)]
        runs = []
        for _ in range(FIT_RUNS):
            b = training_json(cmd)["epoch_breakdown"]
            runs.append(sum(float(b.get(k, 0.0)) for k in ("aggregation", "dense", "other")))
        measured.append(float(np.median(runs)))
        sim = plan_training(graph, cfg, BUSY_CALIBRATION, ranks)
        widths = [sim.num_features, *cfg.hidden, sim.num_classes]
        got = predict(sim, placement(prof, ranks, 1, ranks), widths)
        predicted.append(float(got["breakdown"]["compute"]))
        calls.append(epoch_counts(sim, widths)[0] * prof.call_overhead)
    scaled_m = sum(m - c for m, c in zip(measured, calls))
    scaled_p = sum(p - c for p, c in zip(predicted, calls))
    factor = scaled_m / scaled_p if scaled_p > 0 else 1.0
    return max(1.0, factor), measured, predicted


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


def serial_epochs(graph: str, epochs: int = 8) -> dict:
    """Median epoch seconds (``epoch_seconds``) and its seconds in graph products
    (``t_aggregation``) and dense products (``t_dense``) of a one-thread serial
    `gcntrain train` of `graph`."""
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
            "1",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
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


def _profile_text(name: str, figs: dict) -> str:
    spmm = ", ".join(f"{w} = {r:.4g}" for w, r in figs["spmm"].items())
    scales = figs.get("product_scales", (1.0, 1.0))
    lines = [
        f"# Measured by `gcntrain bench` on {figs['host']} at {figs['when']}.",
        f'name = "{name}"',
        f'description = "{figs["host"]}: {figs["cores"]} cores, measured by gcntrain bench"',
        "sources = [",
        f'  "gcntrain bench {figs["version"]}: spmm_csr_dense one thread, cold caches, on '
        f"R-MAT scale 17 adjacencies of edge factors {list(SPMM_EDGE_FACTORS)}, scaled by "
        f"the products timed inside serial epochs (SpMM x{scales[0]:.3g}, GEMM "
        f'x{scales[1]:.3g})",',
        '  "gcntrain.kernels.dense GEMM (tall-skinny, k x n of 16 to 4096), quantize_blocks + '
        'dequantize_blocks",',
        f'  "serial gcntrain train on R-MAT scales {figs["scales"]}: element-wise rate and '
        'cost per Ops call",',
        '  "mpiexec -n 2 python -m gcntrain.comm.bench: ping-pong latency; bandwidth fitted to '
        "Allreduce, Allgather, Bcast, Reduce-scatter and Alltoall of 1-4 MiB, cold caches, medians "
        "(one node: inter = intra); oversubscribed sync and slice: fitted to training runs at "
        'twice the cores on R-MAT 12 and 14",',
        f'  "numpy triad: {figs["triad_gbs"]:.1f} GB/s",',
        "]",
        "",
        "[node]",
        f"cores = {figs['cores']}",
        f"ranks = {figs['cores']}",
        f"memory_bandwidth_gbs = {figs['triad_gbs']:.4g}",
        f"oversubscribed_sync_us = {figs.get('sync', 0.0) * 1e6:.4g}",
        f"oversubscribed_slice_us = {figs.get('slice', 0.0) * 1e6:.4g}",
        f"memory_gib = {figs.get('memory_gib', 0.0):.4g}",
        f"busy_compute_factor = {figs.get('busy', 1.0):.4g}",
        "",
        "[network.intra]",
        f"latency_us = {figs['alpha'] * 1e6:.4g}",
        f"bandwidth_gbs = {figs['bandwidth'] / 1e9:.4g}",
        "",
        "[network.inter]",
        f"latency_us = {figs['alpha'] * 1e6:.4g}",
        f"bandwidth_gbs = {figs['bandwidth'] / 1e9:.4g}",
        f"injection_gbs = {figs['bandwidth'] * figs['cores'] / 1e9:.4g}",
        "",
        "[compute]",
        "# per core",
        f"spmm_gflops = {{ {spmm} }}",
        "gemm_gflops = { " + ", ".join(f"{k} = {r:.4g}" for k, r in figs["gemm"].items()) + " }",
        f"quant_gelems = {figs['quant']:.4g}",
        f"other_gelems = {figs['other']:.4g}",
        f"call_overhead_us = {figs['overhead'] * 1e6:.4g}",
        "",
    ]
    return "\n".join(lines)


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


def calibrate(name: str = "local", mpiexec: str | None = None, log=print) -> tuple[str, dict]:
    """Measure this machine; (profile TOML text, figures)."""
    import platform

    from gcntrain import __version__
    from gcntrain.simulate.machine import parse_machine
    from gcntrain.simulate.run import plan_training
    from gcntrain.simulate.timing import Placement, epoch_counts, predict

    t0 = time.perf_counter()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    figs: dict = {
        "host": platform.node() or "this machine",
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "cores": int(cores or 1),
        "version": __version__,
    }
    figs["memory_gib"] = memory_gib()
    figs["triad_gbs"] = triad_gbs()
    log(f"memory bandwidth (triad)  {figs['triad_gbs']:.1f} GB/s")
    figs["spmm"] = spmm_gflops()
    log(
        "SpMM, one thread          "
        + ", ".join(f"w{w} {r:.2f}" for w, r in figs["spmm"].items())
        + " GFLOP/s"
    )
    figs["gemm"] = gemm_gflops()
    log(
        "GEMM, one thread          "
        + ", ".join(f"kn{k} {r:.1f}" for k, r in figs["gemm"].items())
        + " GFLOP/s"
    )
    figs["quant"] = quant_gelems()
    log(f"quantize + dequantize     {figs['quant']:.3f} G elements/s")
    exe = find_mpiexec(mpiexec)
    if exe is None:
        raise RuntimeError("no mpiexec found (give --mpiexec PATH)")
    mpi = mpi_figures(exe)
    figs["alpha"], pingpong_bw = fit_link(mpi["pingpong"])
    mem_rate = figs["triad_gbs"] * 1e9 / mpi["ranks"]
    figs["bandwidth"] = fit_collective_bandwidth(mpi, figs["alpha"], mem_rate) or pingpong_bw
    log(
        f"MPI ping-pong             latency {figs['alpha'] * 1e6:.2f} us, bandwidth "
        f"{pingpong_bw / 1e9:.2f} GB/s; collectives imply {figs['bandwidth'] / 1e9:.2f} GB/s"
    )
    figs["sync"] = 0.0
    # element-wise rate and per-call cost from two serial runs
    from gcntrain.model.trainer import TrainConfig

    figs["scales"] = [12, 14, 16]
    measured, calls, elems, explained = [], [], [], []
    parts_measured: list[dict] = []
    parts_predicted: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        for scale in figs["scales"]:
            g = str(Path(tmp) / f"rmat{scale}.h5")
            subprocess.run(
                [
                    *gcntrain_cmd(),
                    "generate",
                    "rmat",
                    "-o",
                    g,
                    "--scale",
                    str(scale),
                    "--edge-factor",
                    "8",
                ],
                capture_output=True,
                check=True,
            )
            parts_measured.append(serial_epochs(g))
            measured.append(parts_measured[-1]["epoch_seconds"])
            # the serial run used one thread: price it on a one-core node
            one = {**figs, "cores": 1, "other": 1e21, "overhead": 1e-30}
            part = parse_machine(_profile_text(name, one), "<bench>")
            cfg = TrainConfig(epochs=3)
            sim = plan_training(g, cfg, REFERENCE, 1)
            widths = [sim.num_features, *cfg.hidden, sim.num_classes]
            place = Placement(1, 1, part)
            parts_predicted.append(predict(sim, place, widths)["breakdown"]["compute_parts"])
            n_calls, n_elems = epoch_counts(sim, widths)
            calls.append(n_calls)
            elems.append(n_elems)
        k_spmm, k_gemm = product_scales(parts_measured, parts_predicted)
        figs["spmm"] = {w: r / k_spmm for w, r in figs["spmm"].items()}
        figs["gemm"] = {kn: r / k_gemm for kn, r in figs["gemm"].items()}
        figs["product_scales"] = (k_spmm, k_gemm)
        log(
            f"products in the epochs    SpMM x{k_spmm:.2f}, GEMM x{k_gemm:.2f} of the "
            "micro-benchmark's time: rates scaled to the epochs"
        )
        for scale, got, pred in zip(figs["scales"], parts_measured, parts_predicted):
            explained.append(k_spmm * pred.get("spmm", 0.0) + k_gemm * pred.get("gemm", 0.0))
            log(
                f"serial epoch, R-MAT {scale}    {got['epoch_seconds'] * 1e3:.1f} ms measured, "
                f"{explained[-1] * 1e3:.1f} ms of it SpMM and GEMM"
            )
        figs["overhead"], rate = residual_fit(measured, calls, elems, explained)
        figs["other"] = rate / 1e9
        log(
            f"element-wise              {figs['other']:.3f} G elements/s, "
            f"{figs['overhead'] * 1e6:.1f} us per Ops call"
        )
        # the fits on real runs use the two smaller graphs only: R-MAT 16 is the
        # validation graph
        fit = figs["scales"][:2]
        graphs = [str(Path(tmp) / f"rmat{scale}.h5") for scale in fit]
        if 2 <= figs["cores"] <= MAX_BUSY_CORES:
            with messages_only():
                figs["busy"], got, base = busy_fit(exe, graphs, name, figs)
            runs = _fit_runs(fit, got, base, "modelled")
            log(
                f"busy node                 {figs['cores']} ranks, {BUSY_CALIBRATION}, compute of "
                f"the critical rank: {runs}: x{figs['busy']:.3f}"
            )
        if figs["cores"] <= MAX_OVERSUBSCRIBE_CORES:
            with messages_only():
                figs["sync"], figs["slice"], got, base = oversubscribed_fit(exe, graphs, name, figs)
            runs = _fit_runs(fit, got, base, "without it")
            log(
                f"oversubscribed sync       {2 * figs['cores']} ranks on {figs['cores']} "
                f"cores, {AUTO[1]}: {runs}: up to {figs['sync'] * 1e6:.0f} us per "
                f"synchronisation, reached at {figs['slice'] * 1e6:.0f} us of compute "
                "since the previous one"
            )
    text = _profile_text(name, figs)
    m = parse_machine(text, "<bench>")
    for kind, fn in _collective_fns(mem_rate).items():
        rows = [
            f"{int(b)} B {t * 1e6:.1f} us (model {float(fn(mpi['ranks'], b, m.intra)) * 1e6:.1f})"
            for b, t in mpi[kind]
        ]
        log(f"MPI {kind:<22}" + "; ".join(rows))
    figs["mpi"] = mpi
    figs["seconds"] = time.perf_counter() - t0
    log(f"measured in {figs['seconds']:.1f} s")
    return text, figs
