"""Compute and memory estimates of a planned run, from the schemes' footprints.

Work (SpMM nonzeros, SpMM flops, dense flops) is exact arithmetic over the layout: every
recorded call is priced by ``Scheme.work`` (2 flops per multiply-add; a CSR first-layer input
counts its stored nonzeros, as SpMM work: its product with W is a sparse product).
Memory is an ESTIMATE of the peak per rank, the sum of

* the adjacency: S (and S^T when it is not symmetric) as built at setup (int64 indices,
  float64 values) plus its copy in the run's dtype (int64 indices);
* the features: the loaded float32 block and its copy in the run's dtype (dense), or their
  stored nonzeros (CSR);
* activations: per layer the dropped-out input, Z and relu(Z), and two gradient blocks of the
  widest layer;
* communication buffers: the rows of other ranks held at once, at the widest width, and the
  message buffers kept across calls (the row schemes' `Scratch`), one set per width the
  products run at;
* parameters: weights, gradients and the two Adam moments (replicated).
"""

from __future__ import annotations

import numpy as np

from gcntrain.partition.metrics import imbalance
from gcntrain.simulate.summary import epoch_median


def work_summary(table) -> dict:
    """Max and mean over ranks of a steady-state epoch's work (median over epochs).

    Besides ``<work>_max`` / ``<work>_mean``, the max / mean over ranks of the flops
    (``flops_imbalance``, both kinds together) and of each kind alone: ``spmm_imbalance``
    (the sparse work, the rank's nonzeros) and ``dense_imbalance`` (the GEMMs, the rank's
    rows); 1.0 where a kind has no work.
    """
    med = epoch_median(table.epoch_totals("work"))
    out = {}
    for i, name in enumerate(("spmm_nnz", "spmm_flops", "dense_flops")):
        col = med[:, i] if med.ndim == 2 else np.zeros(table.P)
        out[f"{name}_max"] = int(round(float(col.max(initial=0.0))))
        out[f"{name}_mean"] = float(col.mean()) if col.size else 0.0
    spmm = med[:, 1] if med.ndim == 2 else np.zeros(table.P)
    dense = med[:, 2] if med.ndim == 2 else np.zeros(table.P)
    out["flops_imbalance"] = imbalance(spmm + dense)
    out["spmm_imbalance"] = imbalance(spmm)
    out["dense_imbalance"] = imbalance(dense)
    return out


def memory(
    fp: dict, widths: list[int], itemsize: int, feature_nnz_rows=None, product_widths=None
) -> np.ndarray:
    """(P,) estimated peak bytes per rank (see the module docstring).

    `fp` is ``Scheme.footprint(ctx)``; `widths` the layer widths [f0, f1, ..., C];
    `feature_nnz_rows` the stored feature nonzeros of each rank's rows when the first layer's
    input is CSR (None: dense); `product_widths` the distinct widths of the recorded
    products with S (None: every layer's output width, an upper bound under the default
    evaluation order).
    """
    rows = np.asarray(fp["rows"], dtype=np.float64)
    frac = np.asarray(fp["col_fraction"], dtype=np.float64)
    adj = np.asarray(fp["adjacency"], dtype=np.float64)
    buf = np.asarray(fp["buffer_rows"], dtype=np.float64)
    f0, wmax = widths[0], max(widths[1:] + [1])
    adjacency = adj * (8 + 8) + adj * (8 + itemsize) + 2 * 8 * (rows + 1)
    if feature_nnz_rows is None:
        features = rows * frac * f0 * (4 + itemsize)
    else:
        features = np.asarray(feature_nnz_rows, np.float64) * frac * (2 * (4 + 4) + itemsize)
    acts = sum(rows * frac * (a + 2 * b) * itemsize for a, b in zip(widths[:-1], widths[1:]))
    acts = acts + 2 * rows * frac * max(widths) * itemsize
    kept = np.asarray(fp.get("kept_buffer_rows", np.zeros_like(rows)), dtype=np.float64)
    kept_width = sum(widths[1:]) if product_widths is None else sum(set(product_widths))
    buffers = buf * max(wmax, 1) * itemsize + kept * kept_width * itemsize
    params = 4 * itemsize * sum(a * b + b for a, b in zip(widths[:-1], widths[1:]))
    return (adjacency + features + acts + buffers + params).astype(np.int64)
