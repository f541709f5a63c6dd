"""Dispatch by method name: CSR arrays + options -> timed `PartitionResult`."""

from __future__ import annotations

import time

import numpy as np

from gcntrain.errors import InputError
from gcntrain.partition.basic import (
    block_partition,
    check_parts,
    random_partition,
    rebalance_rows,
)
from gcntrain.partition.csr import check_csr
from gcntrain.partition.hypergraph import (
    DEFAULT_INIT,
    column_nets,
    km1,
    resolve_options,
    run_hypergraph,
)
from gcntrain.partition.libra import libra_partition
from gcntrain.partition.metis import DEFAULT_VWEIGHTS, metis_partition
from gcntrain.partition.mvc import mvc_split
from gcntrain.partition.permute import (
    double_permutation,
    near_square_grid,
    stratified_double_permutation,
)
from gcntrain.partition.result import PartitionResult

#: methods of `run_method` (and of ``gcntrain partition --method``)
METHODS = ("block", "random", "double-perm", "metis", "hypergraph", "libra", "mvc")
#: vertex-partition methods usable as the base of "mvc"
BASE_METHODS = ("block", "random", "metis", "hypergraph")
#: default imbalance per method (METIS' own default ufactor 30; the paper's eps for KM1)
DEFAULT_IMBALANCE = {"metis": 0.03, "hypergraph": 0.01}
#: keys of `run_method`'s ``hg_options`` (keyword arguments of `run_hypergraph`)
HG_OPTIONS = ("init", "vcycles", "refine", "net_cap", "seeds", "preset")


def hypergraph_options(
    indptr: np.ndarray, indices: np.ndarray, P: int, hg_options: dict | None
) -> dict:
    """Concrete hypergraph options for this matrix: `HG_OPTIONS` with defaults resolved.

    ``init="auto"`` and the per-start defaults are resolved by
    `gcntrain.partition.hypergraph.resolve_options`; ``seeds`` defaults to 1 and ``preset``
    to "default".  Raises `InputError` on an unknown key.
    """
    opts = {k: v for k, v in dict(hg_options or {}).items() if v is not None}
    unknown = sorted(set(opts) - set(HG_OPTIONS))
    if unknown:
        raise InputError(f"unknown hypergraph options {unknown} (choose from {HG_OPTIONS})")
    out = resolve_options(
        indptr,
        indices,
        P,
        opts.get("init", DEFAULT_INIT),
        opts.get("vcycles"),
        opts.get("refine"),
        opts.get("net_cap", "default"),
    )
    out["seeds"] = int(opts.get("seeds", 1))
    out["preset"] = opts.get("preset", "default")
    return out


def _vertex_partition(
    method, indptr, indices, P, seed, imbalance, threads, vweights, train_mask, hg_options=None
) -> tuple[np.ndarray, dict]:
    n = len(indptr) - 1
    if method == "block":
        return block_partition(n, P), {}
    if method == "random":
        return random_partition(n, P, seed), {"balanced": True}
    eps = DEFAULT_IMBALANCE[method] if imbalance is None else float(imbalance)
    if method == "metis":
        part = metis_partition(
            indptr,
            indices,
            P,
            vweights=vweights,
            train_mask=train_mask,
            imbalance=eps,
            seed=seed,
            threads=threads,
        )
        return part, {"imbalance": eps, "vweights": vweights or "none"}
    if method == "hypergraph":
        if vweights not in (None, "none", "degree", "rows+degree"):
            raise InputError(
                "hypergraph vertex weights are the row nonzero counts "
                f"('degree'); --vweights {vweights} is not supported"
            )
        opts = hypergraph_options(indptr, indices, P, hg_options)
        run = run_hypergraph(indptr, indices, P, eps=eps, seed=seed, threads=threads, **opts)
        params = {"imbalance": eps, "objective": "km1", "vweights": "degree", **opts}
        params.update(run.summary())  # net_cap: the cap actually applied
        if vweights != "rows+degree":
            return run.part, params
        return hypergraph_rows(run.part, indptr, indices, P, eps, params), params
    raise InputError(f"unknown vertex partitioning method {method!r}")


def hypergraph_rows(
    part: np.ndarray, indptr: np.ndarray, indices: np.ndarray, P: int, eps: float, params: dict
) -> np.ndarray:
    """The hypergraph partition `part` (its weights: the rows' nonzeros) with its rows
    balanced too (``vweights="rows+degree"``, the default of partitions made for training);
    `params` (Mt-KaHyPar's figures) updated in place to the partition returned: `vweights`,
    ``rows_moved``, and `km1` and ``max_block_weight`` where rows moved.

    Mt-KaHyPar balances one weight; weighting the rows by their nonzeros leaves rows that
    weigh nothing (isolated vertices: no nonzeros and no nets) wherever it likes: on the
    amazon0601 R-MAT stand-in at 512 parts one part held 265 times the mean rows, and the
    dense work of the epoch waited on it.  `gcntrain.partition.basic.rebalance_rows` then
    moves the lightest rows of the parts above ``(1 + eps)`` times the mean rows to the
    parts below it.  (Folding rows and nonzeros into one weight instead, as the METIS
    fallback does, bounds both by ``2 (1 + eps)`` only, and came out near 2 for both on
    an R-MAT graph at 16 and 64 parts.)
    """
    nnz = np.diff(indptr)
    out = rebalance_rows(part, nnz, P, eps)
    moved = int(np.count_nonzero(out != part))
    params.update(vweights="rows+degree", rows_moved=moved)
    if moved:
        params["km1"] = km1(*column_nets(indptr, indices), out)
        params["max_block_weight"] = int(np.bincount(out, weights=nnz, minlength=P).max())
    return out


def run_method(
    method: str,
    indptr: np.ndarray,
    indices: np.ndarray,
    P: int,
    *,
    seed: int = 0,
    imbalance: float | None = None,
    threads: int | None = None,
    vweights: str | None = DEFAULT_VWEIGHTS,
    train_mask: np.ndarray | None = None,
    grid: tuple[int, int] | None = None,
    base: str | np.ndarray = "metis",
    stratified: bool = True,
    graph_hash: str = "",
    hg_options: dict | None = None,
) -> PartitionResult:
    """Partition with `method`; time it; return the result record.

    Parameters
    ----------
    method : one of `METHODS`
    indptr, indices : CSR pattern of the matrix whose rows (or nonzeros) are partitioned
    P : number of parts, ``1 <= P <= n`` (for double-perm: the grid's r * c)
    seed : random seed
    imbalance : allowed imbalance eps (metis, hypergraph; default `DEFAULT_IMBALANCE`)
    threads : threads for Mt-KaHyPar
    vweights : METIS vertex weights: "rows+degree" (default, `DEFAULT_VWEIGHTS`: two
        constraints, rows and the row's nonzeros, which balances the dense and the SpMM
        work), "degree" (the nonzeros only), "none" or None (unit: balances rows), or "train"
        (see `gcntrain.partition.metis.vertex_weights`); hypergraph weighs the rows by their
        nonzeros, and with "rows+degree" then balances the rows too (`hypergraph_rows`);
        "none" is the same as "degree" there
    train_mask : training vertices for ``vweights="train"``
    grid : (r, c) for double-perm (default: the most square factorisation of P)
    base : for mvc: a vertex partition (int array) or a name from `BASE_METHODS`
    stratified : double-perm: degree-stratified random permutations (default) instead of
        uniform ones (see `gcntrain.partition.permute`)
    graph_hash : content hash stored with the result
    hg_options : hypergraph (and mvc on a hypergraph base) options, keys `HG_OPTIONS`:
        ``init`` ("auto" | "none" | "metis"), ``vcycles``, ``refine`` (V-cycle preset),
        ``net_cap`` (pins; 0 = keep all nets; "auto"), ``seeds``, ``preset``; missing keys
        take `run_hypergraph`'s defaults
    """
    n = check_csr(indptr, indices)
    check_parts(n, P)
    if method not in METHODS:
        raise InputError(f"unknown method {method!r} (choose from {', '.join(METHODS)})")
    t0 = time.perf_counter()
    res = PartitionResult(
        method=method, parts=int(P), seed=int(seed), graph_content_hash=graph_hash
    )
    if method in ("block", "random", "metis", "hypergraph"):
        res.part, res.params = _vertex_partition(
            method, indptr, indices, P, seed, imbalance, threads, vweights, train_mask, hg_options
        )
    elif method == "double-perm":
        r, c = grid if grid is not None else near_square_grid(P)
        if r * c != P:
            raise InputError(f"grid {r}x{c} has {r * c} blocks, not --parts {P}")
        if r > n or c > n:
            raise InputError(f"grid {r}x{c} does not fit a graph with {n} vertices")
        if stratified:
            res.row_perm, res.col_perm = stratified_double_permutation(indptr, indices, r, c, seed)
        else:
            res.row_perm, res.col_perm = double_permutation(n, seed)
        res.grid = (int(r), int(c))
        res.params = {"grid": [int(r), int(c)], "stratified": bool(stratified)}
    elif method == "libra":
        vc = libra_partition(indptr, indices, P, seed=seed)
        res.edge_part, res.replica_ptr = vc.edge_part, vc.replica_ptr
        res.replica_parts, res.root = vc.replica_parts, vc.root
        res.params = {"rule": "libra", "order": "random"}
    else:  # mvc
        if isinstance(base, str):
            if base not in BASE_METHODS:
                raise InputError(
                    f"unknown base partition {base!r} for mvc "
                    f"(a partition file or one of {', '.join(BASE_METHODS)})"
                )
            part, base_params = _vertex_partition(
                base, indptr, indices, P, seed, imbalance, threads, vweights, train_mask, hg_options
            )
            res.params = {"base": base, "base_params": base_params}
        else:
            part = np.asarray(base, dtype=np.int64)
            res.params = {"base": "file"}
        split = mvc_split(indptr, indices, part, P)
        res.part = part
        res.mvc = {
            "edge_mode": split.edge_mode,
            "pair_src": split.pair_src,
            "pair_dst": split.pair_dst,
            "pre_volume": split.pre_volume,
            "post_volume": split.post_volume,
            "hybrid_volume": split.hybrid_volume,
        }
    res.seconds = time.perf_counter() - t0
    return res
