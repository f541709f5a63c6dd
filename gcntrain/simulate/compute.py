"""What one call computes on every rank, in seconds (`compute_seconds`, `call_compute`), and
an epoch's element-wise work and per-call cost (`other_seconds`): the compute half of the
time model (`gcntrain.simulate.timing` replays them with the exchanges)."""

from __future__ import annotations

import numpy as np

from gcntrain.simulate.placement import Placement


def compute_seconds(
    work: np.ndarray,
    quant: np.ndarray,
    place: Placement,
    stream=None,
    sparse_threads=None,
    rows=None,
) -> dict:
    """{kind: (P,) seconds} of one call's work ((P, 4) SpMM nonzeros, SpMM flops, dense
    flops, dense rows: `Scheme.work`), quantized elements and streamed bytes
    (`Scheme.stream_bytes`, at the rank's share of memory bandwidth: "other") on every
    rank, the ranks of a node computing at once (`Placement.shared`).  A GEMM's rate
    depends on k * n = dense flops / (2 x dense rows).  `sparse_threads`: the threads the
    call's sparse products run on where fewer than the rank's (a CSR input's product with
    W runs in scipy, on one).  `rows`: (P,) rows the call's SpMM kernels sweep
    (`Scheme.spmm_rows`), each at the profile's cost per row for the product's width.
    On GPUs (`Placement.gpu`) every rate is the device's (`Placement.rates`; quantization
    at its element-wise rate) and streamed bytes move at its memory bandwidth."""
    m = place.rates
    nnz, sflops, dflops, drows = (work[:, i].astype(np.float64) for i in range(4))
    width = np.where(nnz > 0, sflops / np.maximum(2 * nnz, 1), 1.0)
    kn = np.where(drows > 0, dflops / np.maximum(2 * drows, 1), np.inf)
    speed = place.speed("spmm", sparse_threads)
    spmm = np.where(sflops > 0, sflops / (m.spmm_rate(width) * speed), 0.0)
    if rows is not None:
        swept = np.asarray(rows, np.float64) * m.spmm_row_cost(width) / speed
        spmm = spmm + np.where(sflops > 0, swept, 0.0)
    gemm = np.where(dflops > 0, dflops / (m.gemm_rate(kn) * place.speed("gemm")), 0.0)
    quant = np.asarray(quant, np.float64) / (m.quant_rate * place.speed("other"))
    out = {
        "spmm": place.shared("spmm", spmm, sparse_threads),
        "gemm": place.shared("gemm", gemm),
        "quant": place.shared("other", quant),
    }
    if stream is not None:
        out["other"] = np.asarray(stream, np.float64) / place.stream_rate
    return out


def elementwise_elements(footprint: dict, widths: list[int], input_density: float = 1.0):
    """(P,) elements of an epoch's element-wise work on every rank: local rows x local
    column share x the sum of the layer widths, the input's width times the share of it
    stored when the first layer's input stays CSR (`input_density`: dropout and
    normalisation touch the stored entries only)."""
    rows = np.asarray(footprint["rows"], np.float64) * np.asarray(
        footprint["col_fraction"], np.float64
    )
    return rows * (float(widths[0]) * input_density + float(sum(widths[1:])))


def call_compute(scheme, ctx, call, place: Placement) -> dict:
    """`compute_seconds` of one recorded call on every rank: the scheme's work, quantized
    elements and streamed bytes (a CSR input's product with W on one thread)."""
    csr_input = call.method in ("matmul", "matmul_grads") and call.sparse(0)
    return compute_seconds(
        np.asarray(scheme.work(ctx, call)),
        scheme.quant_elements(ctx, call),
        place,
        scheme.stream_bytes(ctx, call),
        1.0 if csr_input else None,
        scheme.spmm_rows(ctx, call),
    )


def scheme_footprint(sim) -> dict:
    """``Scheme.footprint`` of a plan, computed once per plan context (the time model, the
    summary and a search's bound all read it; nobody changes it)."""
    return sim.scheme.cached_footprint(sim.ctx)


def input_density(sim) -> float:
    """The stored share of the first layer's input on the ranks: its feature density when
    the recorded model multiplies a CSR input (every scheme keeps it CSR), else 1."""
    sparse = any(c.method == "matmul" and c.sparse(0) for c in sim.calls)
    return sim.ctx.feature_density(sim.num_features) if sparse else 1.0


def other_seconds(
    footprint: dict, widths: list[int], calls: int, place: Placement, density: float = 1.0
):
    """(P,) seconds of an epoch's element-wise work (shared with the node's other ranks)
    and per-call cost on every rank (`density`: `input_density`; on GPUs the device's
    element-wise rate and `Placement.call_cost`)."""
    elems = elementwise_elements(footprint, widths, density)
    solo = elems / (place.rates.other_rate * place.speed("other"))
    return place.shared("other", solo) + calls * place.call_cost
