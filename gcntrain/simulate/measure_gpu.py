"""GPU micro-benchmarks of ``gcntrain bench --device gpu``: the figures of a profile's
``[device]`` table (`gcntrain.simulate.machine.Device`), measured with CuPy on GPU 0.

* SpMM: ``cupyx.cusparse.spmm`` (cuSPARSE's generic SpMM, the product the CuPy backend
  runs) on a resident CSR matrix with int32 indices, R-MAT adjacencies at the CPU bench's
  two edge factors (`gcntrain.simulate.measure.SPMM_EDGE_FACTORS`), dense operands and
  outputs in column-major order as cuSPARSE writes them; rate per stored entry and cost
  per row solved apart as for the CPU (`split_row_cost`);
* GEMM: cuBLAS through ``@`` in the model's tall-skinny shapes;
* element-wise: ``c = a + b`` on float32 (12 bytes per element, `ELEMENTWISE_BYTES`), and
  the device's memory bandwidth from a device-to-device copy;
* launch: a one-element kernel followed by a stream synchronisation, per iteration;
* host link: pinned host buffers copied to and from the device, latency from 8-byte copies
  and bandwidth from 64 MiB ones.

None of this has run on a GPU (docs/gpu.md lists it): every function is marked
``# pragma: no cover``.  CuPy is imported inside the functions; the caller
(`gcntrain.cli.bench_cmd`) refuses first, in one line, where no GPU is usable.
"""

from __future__ import annotations

import time

import numpy as np

from gcntrain.simulate.measure import GEMM_SHAPES, SPMM_EDGE_FACTORS, rmat_csr, split_row_cost
from gcntrain.simulate.node import ELEMENTWISE_BYTES

#: SpMM widths measured on the device (quick: `QUICK_WIDTHS`)
WIDTHS = (16, 64, 256)
QUICK_WIDTHS = (16, 64)
#: GEMM shapes (k, n): the CPU bench's and two wider ones (GPUs reach peak only there)
SHAPES = (*GEMM_SHAPES, (128, 128), (256, 256))


def _elapsed(cp, fn, repeat: int = 5) -> float:  # pragma: no cover - needs a GPU
    """Best seconds of `fn()` on the current stream, by CUDA events, after one warm-up."""
    fn()
    cp.cuda.Stream.null.synchronize()
    best = np.inf
    for _ in range(repeat):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(start, end) * 1e-3)
    return float(best)


def spmm_fit(cp, scale: int, widths) -> tuple[dict, dict | None]:  # pragma: no cover
    """({width: GFLOP/s}, {width: ns per row} or None) of ``cupyx.cusparse.spmm`` on
    resident R-MAT adjacencies of 2**scale rows at both edge factors."""
    from cupyx import cusparse
    from cupyx.scipy import sparse as csp

    n = 1 << scale
    times: dict[int, list[tuple[float, float, float]]] = {w: [] for w in widths}
    rng = np.random.default_rng(1)
    for ef in SPMM_EDGE_FACTORS:
        indptr, indices, data = rmat_csr(scale, ef)
        S = csp.csr_matrix(
            (
                cp.asarray(data, dtype=cp.float32),
                cp.asarray(indices, dtype=cp.int32),
                cp.asarray(indptr, dtype=cp.int32),
            ),
            shape=(n, n),
        )
        S.sum_duplicates()  # canonical, as cusparse.spmm requires
        for w in widths:
            X = cp.asfortranarray(cp.asarray(rng.random((n, w), dtype=np.float32)))
            Y = cp.empty((n, w), dtype=cp.float32, order="F")
            t = _elapsed(cp, lambda S=S, X=X, Y=Y: cusparse.spmm(S, X, c=Y))
            times[w].append((float(n), float(S.nnz), t))
            del X, Y
        del S
    return split_row_cost(times, len(set(SPMM_EDGE_FACTORS)))


def gemm_gflops(cp, n: int) -> dict[int, float]:  # pragma: no cover - needs a GPU
    """{k * n: GFLOP/s} of cuBLAS in the model's products (rows x k @ k x n and the weight
    gradient k x rows @ rows x n), the median over the shapes of each k * n."""
    rng = np.random.default_rng(2)
    out: dict[int, list[float]] = {}
    for k, m in SHAPES:
        A = cp.asarray(rng.random((n, k), dtype=np.float32))
        B = cp.asarray(rng.random((n, m), dtype=np.float32))
        W = cp.asarray(rng.random((k, m), dtype=np.float32))
        flops = 2.0 * n * k * m
        out.setdefault(k * m, []).extend(
            [
                flops / _elapsed(cp, lambda A=A, W=W: A @ W) / 1e9,
                flops / _elapsed(cp, lambda A=A, B=B: A.T @ B) / 1e9,
            ]
        )
        del A, B, W
    return {kn: float(np.median(v)) for kn, v in sorted(out.items())}


def elementwise(cp, n: int) -> tuple[float, float]:  # pragma: no cover - needs a GPU
    """(Gelements / s of ``c = a + b`` in float32, GB/s of a device-to-device copy)."""
    a = cp.ones(n, dtype=cp.float32)
    b = cp.ones(n, dtype=cp.float32)
    c = cp.empty(n, dtype=cp.float32)
    add = _elapsed(cp, lambda: cp.add(a, b, out=c))
    copy = _elapsed(cp, lambda: c.__setitem__(slice(None), a))
    return n / add / 1e9, 2.0 * 4 * n / copy / 1e9


def launch_seconds(cp, calls: int = 2000) -> float:  # pragma: no cover - needs a GPU
    """Seconds of a one-element kernel and a stream synchronisation (the median of ten
    batches of `calls`): what an Ops call costs the device at least."""
    x = cp.ones(1, dtype=cp.float32)
    y = cp.empty(1, dtype=cp.float32)
    stream = cp.cuda.Stream.null
    out = []
    for _ in range(10):
        t0 = time.perf_counter()
        for _ in range(calls):
            cp.add(x, x, out=y)
            stream.synchronize()
        out.append((time.perf_counter() - t0) / calls)
    return float(np.median(out))


def host_link(cp, big: int = 64 << 20, repeat: int = 20):  # pragma: no cover - needs a GPU
    """(latency seconds, bytes / s) of one copy between a pinned host buffer and the
    device, both directions averaged: latency from 8-byte copies, bandwidth from the
    difference to `big`-byte ones."""
    import cupyx

    def one(nbytes: int) -> float:  # pragma: no cover - needs a GPU
        host = cupyx.empty_pinned((nbytes,), dtype=np.uint8)
        host[...] = 1
        dev = cp.empty(nbytes, dtype=cp.uint8)
        stream = cp.cuda.Stream.null
        ts = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            dev.set(host)
            stream.synchronize()
            t1 = time.perf_counter()
            dev.get(out=host)
            stream.synchronize()
            ts.append(((t1 - t0) + (time.perf_counter() - t1)) / 2.0)
        return float(np.median(ts))

    small, large = one(8), one(big)
    return small, (big - 8) / max(large - small, 1e-9)


def device_figures(quick: bool = False, log=print) -> dict:  # pragma: no cover - needs a GPU
    """The ``[device]`` figures of GPU 0 (`gcntrain.simulate.profile_text.device_text`
    writes them): model, count, memory_gib, memory_bandwidth_gbs, spmm ({width: GFLOP/s}),
    spmm_row_ns (or None), gemm ({k * n: GFLOP/s}), other_gelems, launch_us,
    link_latency_us, link_gbs, and the sizes measured."""
    import cupy as cp

    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"]
    name = name.decode() if isinstance(name, bytes) else str(name)
    _, total = cp.cuda.runtime.memGetInfo()
    scale = 18 if quick else 20
    widths = QUICK_WIDTHS if quick else WIDTHS
    figs: dict = {
        "model": name,
        "count": int(cp.cuda.runtime.getDeviceCount()),
        "memory_gib": total / 2**30,
        "spmm_scale": scale,
    }
    figs["spmm"], figs["spmm_row_ns"] = spmm_fit(cp, scale, widths)
    log(f"device SpMM (cuSPARSE)    {figs['spmm']} GFLOP/s, R-MAT scale {scale}")
    figs["gemm"] = gemm_gflops(cp, 1 << (18 if quick else 20))
    log(f"device GEMM (cuBLAS)      {figs['gemm']} GFLOP/s by k * n")
    n = 1 << (24 if quick else 26)
    figs["other_gelems"], figs["memory_bandwidth_gbs"] = elementwise(cp, n)
    log(
        f"device element-wise       {figs['other_gelems']:.3g} Gelem/s "
        f"({figs['other_gelems'] * ELEMENTWISE_BYTES:.0f} GB/s), copy "
        f"{figs['memory_bandwidth_gbs']:.0f} GB/s"
    )
    figs["launch_us"] = launch_seconds(cp, 500 if quick else 2000) * 1e6
    lat, bw = host_link(cp)
    figs["link_latency_us"], figs["link_gbs"] = lat * 1e6, bw / 1e9
    log(
        f"device launch + sync      {figs['launch_us']:.3g} us; host link "
        f"{figs['link_latency_us']:.3g} us, {figs['link_gbs']:.3g} GB/s"
    )
    return figs
