#!/usr/bin/env python
"""Benchmark the SpMM kernels against scipy on a random sparse matrix.

Default: 1M x 1M rows, 16 uniformly random nonzeros per row, width 64, float32 (about 1.5 GB
of memory).  Prints the best-of-``--repeat`` wall time (and the process CPU time of that
best run, which is less disturbed on a shared machine) of:

* scipy CSR @ dense (single-threaded),
* Numba "plain" row ``prange`` kernel (the first version of the kernel, as a baseline),
* ``spmm_csr_dense`` (equal-work chunks computed per call, prefetching),
* ``spmm_csr_dense_balanced`` with chunks computed once,
* ``A.T @ X``: scipy; explicit transpose (``csr_transpose`` once) + ``spmm_csr_dense``;
  the scatter kernel ``spmm_csr_t_dense``,

with the speed-up over scipy (scipy time / kernel time) and the memory-bandwidth roofline:
the bytes a product must move if every gathered row comes from DRAM, divided by the memory
bandwidth measured in the same run (a STREAM-style triad over the run's threads, before and
after the kernels; the roofline uses the better of the two), with the load average beside it.
When `--anchor-python` names an interpreter with PyTorch (``../shared/bench/anchor_env.sh``
builds one; found in the temporary folder by default), ``torch.sparse.mm`` over the same CSR
matrix (int64 indices, as torch requires) runs in it with the same threads and repeats.

Usage::

    python scripts/bench_kernels.py [--rows N] [--nnz-per-row D] [--width F] [--threads T]
                                    [--repeat R] [--degrees uniform|powerlaw]
                                    [--anchor-python PY]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from gcntrain.kernels.prefetch import (
    LLC_BYTES,
    line_step,
    prefetch_distance,
    prefetch_lines_read,
    prefetch_span,
)
from gcntrain.kernels.simd import LANES, vec_madd, vec_store, vec_zero
from gcntrain.kernels.spmm import (
    balanced_row_splits,
    slab_width,
    spmm_csr_dense,
    spmm_csr_dense_balanced,
)
from gcntrain.kernels.stream import triad_parallel
from gcntrain.kernels.threads import set_threads
from gcntrain.kernels.transpose import csr_transpose, spmm_csr_t_dense

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spmm_legacy import legacy_spmm_csr_dense  # noqa: E402  (the pre-issue-52 kernel)


@njit(parallel=True, nogil=True, cache=True)
def plain_row_prange(indptr, indices, data, X, out):  # pragma: no cover - jitted
    """Baseline: one prange over rows (static chunks of rows), accumulating into ``out``."""
    n = indptr.shape[0] - 1
    f = X.shape[1]
    for i in prange(n):
        for j in range(f):
            out[i, j] = 0
        for k in range(indptr[i], indptr[i + 1]):
            c = indices[k]
            v = data[k]
            for j in range(f):
                out[i, j] += v * X[c, j]
    return out


@njit(parallel=True, nogil=True, cache=True)
def gather_rows(X, idx, sink, parts):  # pragma: no cover - jitted
    """Sum the rows ``X[idx[k]]`` (width a multiple of LANES) in vector registers, prefetching
    as the SpMM does: the gather alone, no matrix values, no output rows."""
    f = X.shape[1]
    n = idx.shape[0]
    step = line_step(X.itemsize)
    lines, last = prefetch_span(0, f, step)
    ahead = prefetch_distance(f, X.itemsize)
    for p in prange(parts):
        k0 = n * p // parts
        k1 = n * (p + 1) // parts
        one = X.dtype.type(1)
        a = vec_zero(sink)
        for k in range(k0, k1):
            if k + ahead < k1:
                prefetch_lines_read(X, idx[k + ahead], 0, lines, step, last)
            for jb in range(0, f, LANES):
                a = vec_madd(a, one, X, idx[k], jb)
        vec_store(sink, p, 0, a)


def gather_rate(rows: int, f: int, gathers: int, threads: int, repeat: int = 3) -> float:
    """GB/s of gathering `gathers` random rows of a rows x f float32 array (best of
    `repeat`; `f` rounded up to LANES)."""
    f = -(-f // LANES) * LANES
    rng = np.random.default_rng(5)
    X = rng.random((rows, f), dtype=np.float32)
    idx = rng.integers(0, rows, size=gathers, dtype=np.int32)
    sink = np.empty((max(1, threads) * 8, f), np.float32)
    gather_rows(X, idx[:16], sink, sink.shape[0])
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        gather_rows(X, idx, sink, sink.shape[0])
        best = min(best, time.perf_counter() - t0)
    return gathers * f * 4 / best / 1e9


def interleaved(kernels: dict, rounds: int) -> dict:
    """Median and min seconds of each kernel over `rounds` rounds, one run of each per
    round in turn (so that a change of load hits all of them alike)."""
    times = {k: [] for k in kernels}
    for _ in range(rounds):
        for k, fn in kernels.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: (float(np.median(v)), min(v)) for k, v in times.items()}


def triad_arrays(n: int = 1 << 25) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three float64 arrays of the triad (768 MiB at the default n), touched once."""
    a, b, c = np.empty(n), np.ones(n), np.full(n, 2.0)
    triad_parallel(a, b, c, 3.0)
    return a, b, c


def triad_bandwidth(n: int = 1 << 25, repeat: int = 5, arrays=None) -> float:
    """GB/s of the best of `repeat` parallel triads over `n` float64 (3 x 8 n bytes moved);
    `arrays`: preallocated `triad_arrays` (then `n` is theirs)."""
    a, b, c = triad_arrays(n) if arrays is None else arrays
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        triad_parallel(a, b, c, 3.0)
        best = min(best, time.perf_counter() - t0)
    return 3 * 8 * a.shape[0] / best / 1e9


def paired_rounds(kernel, rounds: int, arrays) -> list[tuple[float, float]]:
    """(triad GB/s, kernel seconds) of `rounds` rounds, each a triad (best of 2) right before
    one run of `kernel`: the bandwidth the machine gave at the moment the kernel ran."""
    out = []
    for _ in range(rounds):
        bw = triad_bandwidth(repeat=2, arrays=arrays)
        t0 = time.perf_counter()
        kernel()
        out.append((bw, time.perf_counter() - t0))
    return out


#: run by the anchor interpreter: torch.sparse.mm over the saved CSR, best of R (ms)
TORCH_SNIPPET = """
import sys, time, numpy as np, torch
d, threads, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)
ip, ix, v, X = (np.load(f"{d}/{k}.npy") for k in ("indptr", "indices", "data", "X"))
A = torch.sparse_csr_tensor(torch.from_numpy(ip.astype(np.int64)),
    torch.from_numpy(ix.astype(np.int64)), torch.from_numpy(v), size=(ip.shape[0] - 1, X.shape[0]))
Xt = torch.from_numpy(X)
out = torch.sparse.mm(A, Xt)
best = float("inf")
for _ in range(repeat):
    t = time.perf_counter(); out = torch.sparse.mm(A, Xt); best = min(best, time.perf_counter() - t)
np.save(f"{d}/out.npy", out.numpy())
print(best)
"""


def torch_sparse_ms(python: str, arrays: dict, threads: int, repeat: int):
    """(best ms, result) of torch.sparse.mm in `python`, or None when it fails."""
    with tempfile.TemporaryDirectory() as d:
        for k, v in arrays.items():
            np.save(os.path.join(d, f"{k}.npy"), v)
        res = subprocess.run(
            [python, "-W", "ignore", "-c", TORCH_SNIPPET, d, str(threads), str(repeat)],
            capture_output=True,
            text=True,
        )
        if res.returncode != 0:
            print(f"torch.sparse.mm failed: {res.stderr.strip().splitlines()[-1:]}")
            return None
        return float(res.stdout.strip().splitlines()[-1]), np.load(os.path.join(d, "out.npy"))


def random_matrix(rows: int, nnz_per_row: int, degrees: str, seed: int):
    """Square CSR (int32 indices, float32 values) with uniformly random columns per row.

    ``degrees="powerlaw"`` draws Pareto-like row degrees with the same mean, sorted
    descending (a degree-ordered graph), which skews the work of equal-row chunks.
    """
    rng = np.random.default_rng(seed)
    if degrees == "uniform":
        deg = np.full(rows, nnz_per_row, dtype=np.int64)
    else:
        raw = rng.pareto(1.5, size=rows) + 1.0
        deg = np.minimum(np.round(raw * nnz_per_row / raw.mean()), rows).astype(np.int64)
        deg = np.sort(deg)[::-1]
    nnz = int(deg.sum())
    idx_t = np.int32 if nnz < 2**31 else np.int64
    indptr = np.zeros(rows + 1, dtype=idx_t)
    np.cumsum(deg, out=indptr[1:])
    indices = rng.integers(0, rows, size=nnz, dtype=np.int32)
    if degrees == "uniform":  # sorted columns within each row, like a real CSR
        indices = np.sort(indices.reshape(rows, nnz_per_row), axis=1).ravel()
    data = rng.random(nnz, dtype=np.float32)
    return indptr, indices, data


def best_of(fn, repeat: int) -> tuple[float, float]:
    """(best wall seconds, CPU seconds of the process in that run) over `repeat` runs."""
    best = (float("inf"), float("inf"))
    for _ in range(repeat):
        c0 = time.process_time()
        t0 = time.perf_counter()
        fn()
        wall = time.perf_counter() - t0
        cpu = time.process_time() - c0
        if wall < best[0]:
            best = (wall, cpu)
    return best


def spmm_bytes(n_rows: int, nnz: int, f: int, index_bytes: int, value_bytes: int) -> int:
    """Bytes moved by ``out = A @ X`` when every gathered row of X comes from DRAM."""
    return (
        (n_rows + 1) * index_bytes  # indptr
        + nnz * (index_bytes + value_bytes)  # indices and values
        + nnz * f * value_bytes  # one gathered row of X per nonzero
        + n_rows * f * value_bytes  # out, written once
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--nnz-per-row", type=int, default=16)
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--threads", type=int, default=None, help="default: NUMBA_NUM_THREADS/all")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--degrees", choices=["uniform", "powerlaw"], default="uniform")
    p.add_argument(
        "--bandwidth-gbs",
        type=float,
        default=None,
        help="memory bandwidth for the roofline (default: measured in this run)",
    )
    default_anchor = Path(tempfile.gettempdir()) / "anchors-venv" / "bin" / "python"
    p.add_argument(
        "--anchor-python",
        default=str(default_anchor) if default_anchor.exists() else None,
        help="an interpreter with PyTorch for the torch.sparse.mm row",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--pairs",
        type=int,
        default=7,
        help="rounds of (triad, spmm_csr_dense) pairs for the paired roofline (0: none)",
    )
    p.add_argument(
        "--rounds",
        type=int,
        default=7,
        help="rounds of the interleaved legacy / new / torch comparison (0: none)",
    )
    p.add_argument(
        "--slab", type=int, default=0, help="also time the new kernel forced to this slab width"
    )
    a = p.parse_args(argv)
    threads = set_threads(a.threads)

    indptr, indices, data = random_matrix(a.rows, a.nnz_per_row, a.degrees, a.seed)
    n, nnz, f = a.rows, int(indptr[-1]), a.width
    X = np.random.default_rng(a.seed + 1).random((n, f), dtype=np.float32)
    A = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    out = np.empty((n, f), dtype=np.float32)
    print(
        f"matrix {n} x {n}, nnz {nnz} ({a.degrees} degrees), width {f}, float32, "
        f"threads {threads}, best of {a.repeat}"
    )

    # compile outside the timings (tiny inputs of the same types: 2 rows, 1 column)
    ti = np.array([0, 1, 2], dtype=indptr.dtype)
    tx = np.zeros(2, dtype=indices.dtype)
    td = np.ones(2, dtype=np.float32)
    x1, o2 = np.ones((1, f), np.float32), np.empty((2, f), np.float32)
    plain_row_prange(ti, tx, td, x1, o2)
    spmm_csr_dense(ti, tx, td, x1, o2)
    legacy_spmm_csr_dense(ti, tx, td, x1, o2)
    spmm_csr_dense_balanced(ti, tx, td, x1, o2, balanced_row_splits(ti, 2))
    ip1, ix1, d1 = csr_transpose(ti, tx, td, 1)
    spmm_csr_dense(ip1, ix1, d1, o2, x1)
    spmm_csr_t_dense(ti, tx, td, o2, x1)

    nbytes = spmm_bytes(n, nnz, f, indices.itemsize, 4)
    bw_before = triad_bandwidth()
    print(
        f"before: load {os.getloadavg()[0]:.2f}, triad bandwidth {bw_before:.1f} GB/s "
        f"({threads} threads)"
    )
    print(f"bytes moved if every gathered row misses cache: {nbytes / 1e9:.2f} GB")

    ref = A @ X
    ref_t = A.T @ X
    splits = balanced_row_splits(indptr, 1024)
    t0 = time.perf_counter()
    ip_t, ix_t, d_t = csr_transpose(indptr, indices, data, n)
    t_transpose = time.perf_counter() - t0
    out_t = np.empty((n, f), dtype=np.float32)
    # (name, run, result after run (None: run's return value), expected, kind)
    cases = [
        ("scipy A@X", lambda: A @ X, None, ref, "fwd"),
        (
            "numba plain prange A@X",
            lambda: plain_row_prange(indptr, indices, data, X, out),
            lambda: out,
            ref,
            "fwd",
        ),
        (
            "numba legacy (pre-issue-52) A@X",
            lambda: legacy_spmm_csr_dense(indptr, indices, data, X, out),
            lambda: out,
            ref,
            "fwd",
        ),
        (
            "numba spmm_csr_dense A@X",
            lambda: spmm_csr_dense(indptr, indices, data, X, out),
            lambda: out,
            ref,
            "fwd",
        ),
        (
            "numba balanced (splits once) A@X",
            lambda: spmm_csr_dense_balanced(indptr, indices, data, X, out, splits),
            lambda: out,
            ref,
            "fwd",
        ),
        ("scipy A.T@X", lambda: A.T @ X, None, ref_t, "t"),
        (
            "numba explicit transpose A.T@X",
            lambda: spmm_csr_dense(ip_t, ix_t, d_t, X, out_t),
            lambda: out_t,
            ref_t,
            "t",
        ),
        (
            "numba scatter spmm_csr_t_dense A.T@X",
            lambda: spmm_csr_t_dense(indptr, indices, data, X, out_t),
            lambda: out_t,
            ref_t,
            "t",
        ),
    ]
    times = {}
    for name, fn, get, expected, kind in cases:
        out.fill(np.nan)
        out_t.fill(np.nan)
        wall, cpu = best_of(fn, a.repeat)
        got = get() if get is not None else fn()
        scale = max(float(np.max(np.abs(expected), initial=0.0)), 1e-30)
        err = float(np.max(np.abs(got - expected), initial=0.0)) / scale
        times[name] = (wall, cpu, err, kind)

    if a.anchor_python:
        arrays = {"indptr": indptr, "indices": indices, "data": data, "X": X}
        got = torch_sparse_ms(a.anchor_python, arrays, threads, a.repeat)
        if got is not None:
            scale = max(float(np.max(np.abs(ref), initial=0.0)), 1e-30)
            err = float(np.max(np.abs(got[1] - ref), initial=0.0)) / scale
            times["torch.sparse.mm A@X"] = (got[0], float("nan"), err, "fwd")
    bw_after = triad_bandwidth()
    bw = a.bandwidth_gbs or max(bw_before, bw_after)
    roof = nbytes / (bw * 1e9)
    print(
        f"after: load {os.getloadavg()[0]:.2f}, triad bandwidth {bw_after:.1f} GB/s; "
        f"roofline {roof * 1e3:.0f} ms at {bw:.1f} GB/s"
    )
    base = {"fwd": times["scipy A@X"][0], "t": times["scipy A.T@X"][0]}
    print(
        f"{'kernel':40s} {'wall ms':>9s} {'cpu ms':>9s} {'speed-up':>9s} {'GB/s':>7s} "
        f"{'max rel err':>12s}"
    )
    for name, (wall, cpu, err, kind) in times.items():
        print(
            f"{name:40s} {wall * 1e3:9.1f} {cpu * 1e3:9.1f} {base[kind] / wall:8.2f}x "
            f"{nbytes / wall / 1e9:7.1f} {err:12.1e}"
        )
    print(
        f"csr_transpose (once per matrix): {t_transpose * 1e3:.1f} ms; "
        f"extra memory {(ip_t.nbytes + ix_t.nbytes + d_t.nbytes) / 1e6:.0f} MB; "
        f"scatter buffers {(threads - 1) * n * f * 4 / 1e6:.0f} MB"
    )
    best_numba = min(
        times["numba spmm_csr_dense A@X"][0], times["numba balanced (splits once) A@X"][0]
    )
    if a.pairs > 0:
        arrays = triad_arrays()
        rounds = paired_rounds(
            lambda: spmm_csr_dense(indptr, indices, data, X, out), a.pairs, arrays
        )
        del arrays
        frac = [nbytes / t / (g * 1e9) for g, t in rounds]
        print(
            "paired (triad right before each spmm_csr_dense run): "
            + ", ".join(f"{g:.1f} GB/s {t * 1e3:.0f} ms {q:.0%}" for (g, t), q in zip(rounds, frac))
        )
        gbs = [g for g, _ in rounds]
        print(
            f"paired roofline: median {np.median(frac):.0%} of the bandwidth measured right "
            f"before (min {min(frac):.0%}, max {max(frac):.0%}; triad {min(gbs):.1f}"
            f"-{max(gbs):.1f} GB/s)"
        )
    # the gather bound: gathered bytes at the rate measured for an operand of X's size
    gathered = nnz * f * 4
    streamed = nbytes - gathered
    g_size = gather_rate(n, f, min(nnz, 1 << 22), threads)
    resident_rows = max(1024, LLC_BYTES // 4 // (max(f, LANES) * 4))
    g_res = gather_rate(resident_rows, f, min(nnz, 1 << 22), threads)
    t_gather = gathered / (g_size * 1e9) + streamed / (bw * 1e9)
    # the lower of the two, as issue 52 states it (on a big-L3 machine the gathers beat the
    # DRAM roofline; where random gathers run below triad speed the roofline is the lower)
    bound = min(roof, t_gather)
    print(
        f"gather rate: {g_size:.1f} GB/s from a {n * f * 4 / 1e6:.0f} MB operand (X's size), "
        f"{g_res:.1f} GB/s from {resident_rows * max(f, LANES) * 4 / 1e6:.0f} MB (a quarter "
        f"of the {LLC_BYTES >> 20} MiB last-level cache); gather bound {t_gather * 1e3:.0f} ms, "
        f"DRAM roofline {roof * 1e3:.0f} ms: stated bound {bound * 1e3:.0f} ms (the lower); "
        f"slab_width here {slab_width(n, f, 4)} of {f} columns"
    )
    if a.rounds > 0:
        kernels = {
            "legacy": lambda: legacy_spmm_csr_dense(indptr, indices, data, X, out),
            "new": lambda: spmm_csr_dense(indptr, indices, data, X, out),
        }
        if a.slab:
            kernels[f"new slab {a.slab}"] = lambda: spmm_csr_dense_balanced(
                indptr, indices, data, X, out, splits, False, a.slab
            )
        t_before = None
        if a.anchor_python:
            arrays = {"indptr": indptr, "indices": indices, "data": data, "X": X}
            t_before = torch_sparse_ms(a.anchor_python, arrays, threads, a.rounds)
        load0 = os.getloadavg()[0]
        res = interleaved(kernels, a.rounds)
        load1 = os.getloadavg()[0]
        t_after = None
        if a.anchor_python:
            t_after = torch_sparse_ms(a.anchor_python, arrays, threads, a.rounds)
        tt = [t[0] for t in (t_before, t_after) if t is not None]
        print(
            f"interleaved, {a.rounds} rounds (load {load0:.2f} -> {load1:.2f}), median / min ms:"
            + "".join(f" {k} {m * 1e3:.0f} / {b * 1e3:.0f};" for k, (m, b) in res.items())
            + (
                f" torch.sparse.mm best {', '.join(f'{t * 1e3:.0f}' for t in tt)} (before, after)"
                if tt
                else ""
            )
        )
        new_med = res["new"][0]
        print(
            f"new: {res['legacy'][0] / new_med:.2f}x legacy, {bound / new_med:.0%} of the "
            f"stated bound"
            + (f", {min(tt) / new_med:.2f}x torch.sparse.mm (its best)" if tt else "")
        )
    print(
        f"roofline: best Numba A@X at {roof / best_numba * 100:.0f}% of {bw:.1f} "
        f"GB/s ({nbytes / best_numba / 1e9:.1f} GB/s achieved); "
        f"{times['scipy A@X'][0] / best_numba:.2f}x scipy"
        + (
            f", {times['torch.sparse.mm A@X'][0] / best_numba:.2f}x torch.sparse.mm"
            if "torch.sparse.mm A@X" in times
            else ""
        )
    )


if __name__ == "__main__":
    main()
