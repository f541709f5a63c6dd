"""One report dict per partition, whatever the method (keys absent for a layout are None)."""

from __future__ import annotations

import numpy as np

from gcntrain.partition.metrics import comm_volume, vertex_cut_comm
from gcntrain.partition.mvc import MvcSplit
from gcntrain.partition.permute import (
    block_nnz,
    double_permutation,
    max_over_mean,
    single_permutation,
)
from gcntrain.partition.result import PartitionResult

#: keys every report has (value None where the layout has no such quantity)
BASE_KEYS = (
    "method",
    "parts",
    "edge_cut",
    "volume_total",
    "volume_max_send",
    "volume_max_recv",
    "messages_total",
    "messages_max",
    "messages_max_send",
    "messages_max_recv",
    "nnz_imbalance",
    "size_imbalance",
    "seconds",
)

_COMM_KEYS = BASE_KEYS[2:10]


def mvc_summary(mvc: dict[str, np.ndarray] | MvcSplit, P: int) -> dict:
    """pre/post/hybrid totals and per-rank maxima from an `MvcSplit` or its stored arrays."""
    if isinstance(mvc, MvcSplit):
        return mvc.summary()
    out: dict = {}
    src = np.asarray(mvc["pair_src"], dtype=np.int64)
    dst = np.asarray(mvc["pair_dst"], dtype=np.int64)
    for which in ("pre", "post", "hybrid"):
        vol = np.asarray(mvc[f"{which}_volume"], dtype=np.int64)
        send = np.bincount(src, weights=vol, minlength=P)
        recv = np.bincount(dst, weights=vol, minlength=P)
        out[f"{which}_total"] = int(vol.sum())
        out[f"{which}_max_send"] = int(send.max()) if send.size else 0
        out[f"{which}_max_recv"] = int(recv.max()) if recv.size else 0
    return out


def _vertex_weights_of(params: dict) -> str | None:
    """The vertex weights a weighted partitioner balanced ("none", "degree", "train"), from
    the result's params (an mvc result: its base's), or None (block, random, a file)."""
    if "vweights" in params:
        return str(params["vweights"])
    base = params.get("base_params")
    return _vertex_weights_of(base) if isinstance(base, dict) else None


def build_report(indptr: np.ndarray, indices: np.ndarray, result: PartitionResult) -> dict:
    """Quality report of `result` on the matrix (indptr, indices) it was computed for.

    Keys: `BASE_KEYS` always; a vertex cut adds ``replication_factor``, ``edge_balance``,
    ``split_vertices`` (its volume is DistGNN's cd-0 exchange: partial aggregates to the root
    and back, see `vertex_cut_comm`); a 2D permutation adds ``grid`` and
    ``nnz_max_mean_{original,single,double_uniform,double}`` (single / double_uniform: uniform
    random permutations with the result's seed; double: the stored permutations); an MVC
    split adds ``{pre,post,hybrid}_total`` and ``..._max_send`` / ``..._max_recv``; a vertex
    partition by metis or hypergraph (or mvc on one) adds ``vweights``, the vertex weights
    it balanced.  ``nnz_imbalance`` (max / mean of the parts' nonzeros, the SpMM work) and
    ``size_imbalance`` (max / mean of their rows) are both always given.
    """
    P = int(result.parts)
    n = len(indptr) - 1
    rep: dict = {k: None for k in BASE_KEYS}
    rep["method"] = result.method
    rep["parts"] = P
    rep["seconds"] = round(float(result.seconds), 3)
    kind = result.kind
    if kind == "vertex":
        vol = comm_volume(indptr, indices, result.part, P)
        for k in _COMM_KEYS:
            rep[k] = vol[k]
        rep["nnz_imbalance"] = vol["nnz_imbalance"]
        rep["size_imbalance"] = vol["size_imbalance"]
        weights = _vertex_weights_of(result.params or {})
        if weights is not None:
            rep["vweights"] = weights
        if result.mvc is not None:
            rep.update(mvc_summary(result.mvc, P))
    elif kind == "vertex-cut":
        vc = vertex_cut_comm(result.replica_ptr, result.replica_parts, result.root, P)
        for k in _COMM_KEYS:
            if k in vc:
                rep[k] = vc[k]
        edges = np.bincount(result.edge_part, minlength=P)
        counts = np.diff(result.replica_ptr)
        has = counts > 0
        rep["nnz_imbalance"] = max_over_mean(edges)
        rep["edge_balance"] = rep["nnz_imbalance"]
        rep["replication_factor"] = float(counts[has].mean()) if has.any() else 1.0
        rep["split_vertices"] = int(np.count_nonzero(counts > 1))
        rows_per_part = np.bincount(result.replica_parts, minlength=P)
        rep["size_imbalance"] = max_over_mean(rows_per_part)
    else:
        r, c = result.grid
        single = single_permutation(n, result.seed)
        urow, ucol = double_permutation(n, result.seed)
        for name, rp, cp in (
            ("original", None, None),
            ("single", single, single),
            ("double_uniform", urow, ucol),
            ("double", result.row_perm, result.col_perm),
        ):
            counts = block_nnz(indptr, indices, n, r, c, rp, cp)
            rep[f"nnz_max_mean_{name}"] = max_over_mean(counts)
        rep["grid"] = f"{r}x{c}"
        rep["nnz_imbalance"] = rep["nnz_max_mean_double"]
    return rep
