"""Micro-benchmarks of `gcntrain bench` (`gcntrain.simulate.calibrate`): the project's own
kernels timed in this process, at sizes where the kernel, not the call, dominates.

* memory bandwidth: a STREAM triad on one thread (numpy: what one core streams) and over all
  of the node's cores (`gcntrain.kernels.stream.triad_parallel`: the node's bandwidth);
* SpMM (`spmm_csr_dense`, one thread) on R-MAT adjacencies (skewed degrees whose hot rows
  stay in cache, as in the graphs GNNs train on), operands out of the caches;
* GEMM (`gcntrain.kernels.dense`, one thread) in the model's tall-skinny shapes;
* quantization (`quantize_blocks` + `dequantize_blocks`);
* thread scaling (`thread_scaling`): SpMM, GEMM and element-wise kernels in one process at
  1, half and all cores, each product large enough to stream from memory; and the node's
  scaling (`node_scaling`): the same kernels in 1, half and all single-thread processes
  at once (what ranks sharing the node's memory and caches get): the two S(T) of
  `gcntrain.simulate.node`.
"""

from __future__ import annotations

import multiprocessing as mp
import queue
import time

import numpy as np

from gcntrain.environ import environ_set
from gcntrain.simulate.node import KINDS

#: SpMM widths measured (full bench; the quick one measures `QUICK_WIDTHS`), and the R-MAT
#: edge factors of its matrices (about 4 and 15 stored entries per row after symmetrising)
SPMM_WIDTHS = (4, 8, 16, 32, 64, 256)
QUICK_WIDTHS = (4, 16, 64, 256)
SPMM_EDGE_FACTORS = (2, 8)
#: GEMM shapes (k, n) measured: products k * n of 16 to 4096 (a layer's weights, or the
#: chunk of them a rank multiplies when the feature columns are split over ranks)
GEMM_SHAPES = ((4, 4), (8, 8), (16, 4), (16, 16), (64, 4), (64, 16), (16, 64), (64, 64))
#: the width of the thread-scaling products (the model's hidden width)
SCALING_WIDTH = 16


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
    """What one core streams now: best of `repeat` numpy triads a = b + 3 c over `n`
    float64, done as two passes (a = 3 c; a += b) that move 5 x 8 n bytes (write-allocate
    not counted)."""
    b, c = np.ones(n), np.full(n, 2.0)
    a = np.empty(n)

    def triad():
        np.multiply(c, 3.0, out=a)
        np.add(a, b, out=a)

    return 5 * 8 * n / best_time(triad, repeat) / 1e9


def node_triad_gbs(threads: int, n: int = 1 << 25, repeat: int = 5) -> float:
    """What the node streams with `threads` cores streaming: best of `repeat` parallel
    triads over `n` float64 (3 x 8 n bytes)."""
    from gcntrain.kernels.stream import triad_parallel
    from gcntrain.kernels.threads import set_threads

    set_threads(threads)
    a, b, c = np.empty(n), np.ones(n), np.full(n, 2.0)
    t = best_time(lambda: triad_parallel(a, b, c, 3.0), repeat)
    return 3 * 8 * n / t / 1e9


def rmat_csr(scale: int, edge_factor: int, seed: int = 0):
    """(indptr, indices, data) of the project's R-MAT generator's symmetrised adjacency
    (Graph500 a, b, c; skewed degrees, hot columns), float32 values."""
    from gcntrain.data.generate import rmat

    g = rmat(scale, edge_factor, seed=seed, num_features=1, num_classes=2)
    data = np.random.default_rng(seed).random(g.indices.shape[0], dtype=np.float32)
    return g.indptr, g.indices, data


def spmm_fit(
    scale: int = 17, widths=SPMM_WIDTHS, edge_factors=SPMM_EDGE_FACTORS
) -> tuple[dict[int, float], dict[int, float] | None]:
    """({width: GFLOP/s}, {width: ns per row} or None) of one thread on R-MAT adjacencies
    of 2**scale rows: the graphs GNN training runs on have skewed degrees whose hot rows of
    the dense operand stay in cache, unlike uniform random columns.

    The kernel sweeps every row (its pointers, its output row) whatever its entries, so
    its time is ``rows x t_row + 2 x nnz x width / rate``; with two or more edge factors
    (the same rows, other entries) both are solved by least squares per width, and the
    rates are per stored entry, net of the rows.  With one edge factor, or where a width's
    row cost does not come out positive, the row costs are None and the rates are the
    median over `edge_factors` of rows and entries together (what older profiles hold).
    """
    from gcntrain.kernels.spmm import spmm_csr_dense
    from gcntrain.kernels.threads import set_threads

    set_threads(1)
    times: dict[int, list[tuple[float, float, float]]] = {w: [] for w in widths}
    n = 1 << scale
    for ef in edge_factors:
        indptr, indices, data = rmat_csr(scale, ef)
        for w in widths:
            rows = n if w <= 64 else n // 4
            ip = indptr[: rows + 1]
            X = np.random.default_rng(1).random((n, w), dtype=np.float32)
            Y = np.empty((rows, w), dtype=np.float32)
            t = cold_time(
                lambda ip=ip, ix=indices, v=data, X=X, Y=Y: spmm_csr_dense(ip, ix, v, X, Y)
            )
            times[w].append((float(rows), float(ip[-1]), t))
    return split_row_cost(times, len(set(edge_factors)))


def split_row_cost(times: dict, graphs: int) -> tuple[dict[int, float], dict[int, float] | None]:
    """(rates, row costs) of `spmm_fit` from its timings ({width: [(rows, nnz, seconds),
    ...]} over `graphs` distinct graphs): ``rows x t_row + 2 x nnz x width x t_flop`` by
    least squares per width, as ({width: GFLOP/s per entry}, {width: ns per row}); or, with
    one graph or a fit not positive at some width, ({width: median GFLOP/s of rows and
    entries together}, None)."""
    rates = {w: float(np.median([2 * e * w / t / 1e9 for _, e, t in v])) for w, v in times.items()}
    if graphs < 2:
        return rates, None
    net, row_ns = {}, {}
    for w, v in times.items():
        a = np.array([[r, 2.0 * e * w] for r, e, _ in v])
        (t_row, t_flop), *_ = np.linalg.lstsq(a, np.array([t for _, _, t in v]), rcond=None)
        if not (t_row > 0 and t_flop > 0):
            return rates, None
        net[w], row_ns[w] = 1.0 / t_flop / 1e9, float(t_row) * 1e9
    return net, row_ns


def gemm_gflops(n: int = 1 << 17, shapes=GEMM_SHAPES) -> dict[int, float]:
    """{k * n: GFLOP/s of one thread} in the model's tall-skinny products
    (`gcntrain.kernels.dense`: rows x k @ k x n, and the weight gradient k x rows @ rows x
    n), for every (k, n) of `shapes`; per product k * n the median over its shapes and both
    forms.  Schemes that split the feature columns over ranks (2D, 3D, Plexus) run narrower
    products, which reach a lower rate."""
    from gcntrain.kernels.dense import matmul, matmul_tn
    from gcntrain.kernels.threads import set_threads

    set_threads(1)
    rng = np.random.default_rng(2)
    out: dict[int, list[float]] = {}
    for k, m in shapes:
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


def thread_counts(cores: int) -> list[int]:
    """The thread counts S(T) is measured at: 1, half the cores and all of them."""
    return sorted({1, max(1, cores // 2), max(1, cores)})


#: seconds a process of `node_scaling` waits for the others at a barrier, and the whole
#: measurement may take (a process that dies must not hang the bench)
BARRIER_SECONDS = 120.0
SCALING_SECONDS = 240.0


def _kernels(scale: int):
    """{kind: a call of that kind's kernel}, each over operands of a few to tens of MB."""
    from gcntrain.kernels.dense import matmul
    from gcntrain.kernels.dropout import dropout_apply_dense, keep_threshold
    from gcntrain.kernels.elementwise import relu_backward
    from gcntrain.kernels.spmm import spmm_csr_dense

    rng = np.random.default_rng(4)
    indptr, indices, data = rmat_csr(scale, 8)
    n, w = indptr.shape[0] - 1, SCALING_WIDTH
    X = rng.random((n, w), dtype=np.float32)
    Y = np.empty_like(X)
    H = rng.random((n, 64), dtype=np.float32)
    W = rng.random((64, w), dtype=np.float32)
    D = rng.random((n, 64), dtype=np.float32) - 0.5
    G, O = np.empty_like(D), np.empty_like(D)
    rows = np.arange(n, dtype=np.int64)
    thr = keep_threshold(0.5)

    def other():
        relu_backward(H, D, G)
        dropout_apply_dense(G, rows, 1, 0, thr, 2.0, O, 0)

    return {
        "spmm": lambda: spmm_csr_dense(indptr, indices, data, X, Y),
        "gemm": lambda: matmul(H, W),
        "other": other,
    }


def thread_scaling(
    cores: int, scale: int = 17, repeat: int = 3, processes: int = 3
) -> dict[str, dict[int, float]]:
    """{kind: {T: S(T)}}: the median over `processes` fresh processes, one after another, of
    `_thread_scaling_here` (where the operating system places a process's threads differs
    from one process to the next: on a virtual machine one process's threads ran 1.2x
    faster on 2 cores than on one, the next process's 1.85x, each the same in all its
    repetitions)."""
    ctx = mp.get_context("spawn")
    runs = []
    # the children may start every core's thread
    with environ_set({"NUMBA_NUM_THREADS": str(cores)}):
        for _ in range(processes):
            with ctx.Pool(1) as pool:
                runs.append(pool.apply(_thread_scaling_here, (cores, scale, repeat)))
    return {
        kind: {T: float(np.median([r[kind][T] for r in runs])) for T in runs[0][kind]}
        for kind in runs[0]
    }


def _thread_scaling_here(cores: int, scale: int, repeat: int) -> dict[str, dict[int, float]]:
    """{kind: {T: S(T)}}: each kind's kernel (`_kernels`) in this process, timed with
    operands out of the caches at every count of `thread_counts` in turn (`repeat` rounds,
    so that a slow spell falls on all counts), as the median one-thread time over the median
    T-thread time (S(1) = 1)."""
    from gcntrain.kernels.threads import cap_blas, get_threads, set_threads

    cap_blas()
    was = get_threads()
    fns = _kernels(scale)
    flush = np.zeros((64 << 20) // 8)
    times: dict = {kind: {} for kind in fns}
    try:
        for fn in fns.values():
            fn()
        for _ in range(repeat):
            for T in thread_counts(cores):
                set_threads(T)
                for kind, fn in fns.items():
                    flush += 1.0
                    t0 = time.perf_counter()
                    fn()
                    times[kind].setdefault(T, []).append(time.perf_counter() - t0)
    finally:
        set_threads(was)
    return {
        kind: {T: float(np.median(by_t[1])) / float(np.median(v)) for T, v in by_t.items()}
        for kind, by_t in times.items()
    }


def _node_worker(idx, scale, repeat, counts, barriers, everyone, results):  # pragma: no cover
    """One process of `node_scaling` (runs in a spawned interpreter): one thread, its own
    operands; in each round of T busy processes the first T time every kind's kernel
    together while the others wait (blocked, not spinning); the rounds of all the counts
    take turns `repeat` times, so that a slow spell of the machine falls on all of them."""
    from gcntrain.kernels.threads import cap_blas, set_threads

    cap_blas()
    set_threads(1)
    fns = _kernels(scale)
    for fn in fns.values():
        fn()
    flush = np.zeros((16 << 20) // 8)
    for _ in range(repeat):
        for T in counts:
            everyone.wait(BARRIER_SECONDS)
            if idx >= T:
                continue
            for kind, fn in fns.items():
                flush += 1.0
                barriers[T].wait(BARRIER_SECONDS)
                t0 = time.perf_counter()
                fn()
                results.put((T, kind, idx, time.perf_counter() - t0))
    everyone.wait(BARRIER_SECONDS)


def node_scaling(cores: int, scale: int = 17, repeat: int = 3) -> dict[str, dict[int, float]]:
    """{kind: {T: S(T)}}: the node's throughput with T single-thread processes running each
    kind's kernel at once (`_kernels`, every process its own operands) over one process's,
    at every count of `thread_counts`: what ranks sharing the node's memory bandwidth and
    caches get, without the threads' own cost of a parallel region."""
    counts = thread_counts(cores)
    ctx = mp.get_context("spawn")
    barriers = {T: ctx.Barrier(T) for T in counts}
    everyone = ctx.Barrier(max(counts))
    results = ctx.Queue()
    procs = [
        ctx.Process(
            target=_node_worker, args=(i, scale, repeat, counts, barriers, everyone, results)
        )
        for i in range(max(counts))
    ]
    # every child one thread from its start: no idle OpenMP or BLAS pool spinning on the
    # cores the other children compute on
    one = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    with environ_set(one):
        for p in procs:
            p.start()
    expect = sum(T for T in counts) * len(KINDS) * repeat
    got: dict = {}
    deadline = time.monotonic() + SCALING_SECONDS
    try:
        for _ in range(expect):
            while True:
                try:
                    T, kind, _, t = results.get(timeout=1.0)
                    break
                except queue.Empty:
                    dead = [p for p in procs if p.exitcode not in (None, 0)]
                    if dead or time.monotonic() > deadline:
                        why = f"exit code {dead[0].exitcode}" if dead else "no result in time"
                        raise RuntimeError(f"the node-scaling benchmark failed ({why})") from None
            got.setdefault(kind, {}).setdefault(T, []).append(t)
    finally:
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
    return {
        kind: {T: T * float(np.median(by_t[1])) / float(np.median(v)) for T, v in by_t.items()}
        for kind, by_t in got.items()
    }
