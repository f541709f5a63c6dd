"""Support matrices (normalised adjacencies) built row block by row block.

Every function works on a block of CSR rows whose column ids are GLOBAL node ids, given the
GLOBAL degree vector, so a distributed run builds exactly the rows of the serial matrix after
an allgather of the per-row degrees.

Kinds
-----
``"gcn"``
    ``D^-1/2 (A + I) D^-1/2`` with ``D`` the row sums of ``A + I``.  As in the reference GCN
    code, ``I`` is added even where ``A`` already has a self-loop (such a diagonal becomes
    ``a_ii + 1``).
``"sage-mean"``
    ``D^-1 A`` with ``A``'s self-loops removed; rows without neighbours are zero.
``"sage-gcn"``
    ``(D + 1)^-1 (A + I)`` with ``A``'s self-loops removed (``D`` its row sums).

Edge values are used when present (``data`` not None); otherwise every entry is 1.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from gcntrain.kernels.csr import (
    STRICT,
    UNSORTED,
    coo_rows_to_csr,
    csr_row_order,
    csr_row_sums,
    csr_sort_rows,
    csr_sum_duplicates,
    csr_support_counts,
    csr_support_fill,
)

KINDS = ("gcn", "sage-mean", "sage-gcn")
#: what the identity adds to every degree
DEGREE_OFFSET = {"gcn": 1.0, "sage-mean": 0.0, "sage-gcn": 1.0}


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown support kind {kind!r}; expected one of {', '.join(KINDS)}")


_EMPTY_IDS = np.zeros(0, dtype=np.int64)


def _data_or_empty(data: np.ndarray | None) -> np.ndarray:
    """Edge values for the kernels: an empty array stands for 'all ones'."""
    if data is None:
        return np.zeros(0, dtype=np.float64)
    return np.ascontiguousarray(data)


def _rows_or_range(rows: np.ndarray | None, m: int) -> np.ndarray:
    if rows is None:
        return np.arange(m, dtype=np.int64)
    return np.ascontiguousarray(rows, dtype=np.int64)


def _sorted_rows(indptr, indices):
    """`indices` with every row sorted by column (stably; a sorted copy when they are not)
    and whether some row repeats a column."""
    order = csr_row_order(indptr, indices)
    if order == UNSORTED:
        indices = np.array(indices, copy=True)
        csr_sort_rows(indptr, indices, np.zeros(0, np.float64))
        order = csr_row_order(indptr, indices)
    return indices, order != STRICT


def degrees(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray | None,
    kind: str,
    rows: np.ndarray | None = None,
    partial: bool = False,
) -> np.ndarray:
    """Per-row degree of the matrix that `kind` normalises (float64).

    Parameters
    ----------
    indptr, indices, data : CSR arrays of a row block (global column ids); data may be None.
    kind : "gcn" | "sage-mean" | "sage-gcn"
    rows : global ids of the block's rows (default: 0..m-1, the whole graph).  Needed to
        recognise self-loops in a block that does not start at row 0.
    partial : the block holds only some columns of its rows (a 2D block): return the sums
        over those columns without the identity's 1; the whole degree is the sum of the
        partial ones over the column blocks plus ``DEGREE_OFFSET[kind]``.

    Returns
    -------
    float64 array (m,)
        ``gcn``: row sums of ``A + I``; ``sage-mean``: row sums of ``A`` without self-loops;
        ``sage-gcn``: that plus one.
    """
    _check_kind(kind)
    m = indptr.shape[0] - 1
    out = np.empty(m, dtype=np.float64)
    skip = kind != "gcn"
    grow = _rows_or_range(rows, m) if skip else _EMPTY_IDS
    csr_row_sums(indptr, indices, _data_or_empty(data), grow, skip, out)
    one = 0.0 if partial else DEGREE_OFFSET[kind]
    if kind == "sage-mean":
        return out
    out += one
    return out


def _inv(d: np.ndarray, power: float) -> np.ndarray:
    out = np.zeros_like(d, dtype=np.float64)
    nz = d > 0
    out[nz] = d[nz] ** (-power)
    return out


def support_rows(
    indptr: np.ndarray,
    indices: np.ndarray,
    data: np.ndarray | None,
    rows: np.ndarray,
    deg_global: np.ndarray,
    kind: str,
    col_range: tuple[int, int] | None = None,
    identity: np.ndarray | None = None,
    index_dtype=np.int64,
    value_dtype=np.float64,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows `rows` of the support matrix of `kind`, as CSR arrays with global column ids.

    Parameters
    ----------
    indptr, indices, data : the adjacency rows `rows` (local indptr, GLOBAL column ids).
    rows : int64 array (m,), the global ids of those rows.
    deg_global : float64 array (n,), ``degrees(..., kind)`` of ALL rows of the graph.
    kind : "gcn" | "sage-mean" | "sage-gcn"
    col_range : the adjacency holds only the columns [lo, hi) of its rows (a 2D block): the
        identity's entries are added for the rows inside that range only.
    identity : bool (m,): the rows that get the identity's entry (a vertex cut adds it on
        the root's copy only); default every row (within `col_range`).
    index_dtype : dtype of the returned column ids (int64; int32 when they fit, for a
        matrix that scipy would otherwise copy to int32).
    value_dtype : dtype of the returned values: float64, or the training dtype (float32),
        which holds the float64 values rounded once (the same as casting the float64
        result, without its float64 array).

    Returns
    -------
    (indptr int64, indices `index_dtype`, data `value_dtype`)
        Sorted column ids, duplicates summed in float64 (left to right in the stable column
        order of the block, the identity's entry after a row's own diagonal entries); one
        Numba pass to count and one to fill (`gcntrain.kernels.csr`).
    """
    _check_kind(kind)
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    deg_global = np.asarray(deg_global, dtype=np.float64)
    m = rows.shape[0]
    if indptr.shape[0] != m + 1:
        raise ValueError("indptr length must be len(rows) + 1")
    indptr = np.ascontiguousarray(indptr)
    if data is not None and csr_row_order(indptr, indices) != STRICT:
        # weighted duplicates (or rows to sort): their order in sums is scipy's sort's
        ip, ix, dv = _support_rows_scipy(
            indptr, indices, data, rows, deg_global, kind, col_range, identity, index_dtype
        )
        return ip, ix, dv.astype(value_dtype, copy=False)
    indices, _ = _sorted_rows(indptr, np.ascontiguousarray(indices))
    ident = np.zeros(m, dtype=np.bool_)
    if kind != "sage-mean":
        ident[:] = True
        if col_range is not None:
            ident &= (rows >= col_range[0]) & (rows < col_range[1])
        if identity is not None:
            ident &= np.asarray(identity, dtype=bool)
    out_ptr = np.empty(m + 1, dtype=np.int64)
    drop = kind != "gcn"
    total = int(csr_support_counts(indptr, indices, rows, drop, ident, out_ptr))
    out_ix = np.empty(total, dtype=index_dtype)
    out_dv = np.empty(total, dtype=value_dtype)
    power = 0.5 if kind == "gcn" else 1.0
    dinv = _inv(deg_global, power)
    csr_support_fill(
        indptr,
        indices,
        _data_or_empty(data),
        rows,
        drop,
        ident,
        dinv,
        dinv,
        kind == "gcn",
        out_ptr,
        out_ix,
        out_dv,
    )
    return out_ptr, out_ix, out_dv


def _support_rows_scipy(
    indptr, indices, data, rows, deg_global, kind, col_range, identity, index_dtype
):
    """`support_rows` by scipy's COO to CSR: for weighted rows that repeat a column (or are
    not sorted), whose duplicates scipy's (unstable) sort orders before they are summed."""
    n = deg_global.shape[0]
    m = rows.shape[0]
    vals = np.asarray(data, dtype=np.float64)
    lrow = np.repeat(np.arange(m, dtype=np.int64), np.diff(indptr))
    cols = np.asarray(indices, dtype=np.int64)
    if kind != "gcn":
        keep = cols != rows[lrow]
        lrow, cols, vals = lrow[keep], cols[keep], vals[keep]
    if kind != "sage-mean":
        diag = np.arange(m, dtype=np.int64)
        if col_range is not None:
            diag = diag[(rows >= col_range[0]) & (rows < col_range[1])]
        if identity is not None:
            diag = diag[np.asarray(identity, dtype=bool)[diag]]
        lrow = np.concatenate([lrow, diag])
        cols = np.concatenate([cols, rows[diag]])
        vals = np.concatenate([vals, np.ones(diag.size)])
    if kind == "gcn":
        dinv = _inv(deg_global, 0.5)
        vals = vals * dinv[rows[lrow]] * dinv[cols]
    else:
        vals = vals * _inv(deg_global, 1.0)[rows[lrow]]
    M = sp.csr_matrix((vals, (lrow, cols)), shape=(m, n))
    M.sum_duplicates()
    M.sort_indices()
    return (M.indptr.astype(np.int64), M.indices.astype(index_dtype), M.data.astype(np.float64))


def coo_block_to_csr(rows, cols, vals, m: int):
    """An m-row block's COO entries (float64 values) as CSR with sorted columns, duplicates
    summed left to right in their given order (scipy's COO to CSR for distinct entries):
    (indptr int64, indices int64, data float64)."""
    k = int(rows.shape[0])
    ip = np.empty(m + 1, dtype=np.int64)
    ix = np.empty(k, dtype=np.int64)
    dv = np.empty(k, dtype=np.float64)
    coo_rows_to_csr(rows, cols, vals, m, ip, ix, dv)
    csr_sort_rows(ip, ix, dv)
    if csr_row_order(ip, ix) == STRICT:
        return ip, ix, dv
    out = np.empty(m + 1, dtype=np.int64)
    kept = int(csr_sum_duplicates(ip, ix, dv, out))
    return out, ix[:kept].copy(), dv[:kept].copy()


def support_matrix(graph, kind: str) -> sp.csr_matrix:
    """The whole support matrix of `graph` (serial): `support_rows` over all rows.

    Parameters
    ----------
    graph : gcntrain.data.graph.Graph
    kind : "gcn" | "sage-mean" | "sage-gcn"

    Returns
    -------
    scipy.sparse.csr_matrix (n x n), float64
    """
    n = graph.n
    rows = np.arange(n, dtype=np.int64)
    deg = degrees(graph.indptr, graph.indices, graph.data, kind)
    ip, ix, dv = support_rows(graph.indptr, graph.indices, graph.data, rows, deg, kind)
    return sp.csr_matrix((dv, ix, ip), shape=(n, n))


def support_kind(model: str, aggregator: str = "mean") -> str:
    """The support kind a model uses: gcn -> "gcn"; sage -> "sage-mean" or "sage-gcn"."""
    if model == "gcn":
        return "gcn"
    if model == "sage":
        if aggregator not in ("mean", "gcn"):
            raise ValueError(f"unknown aggregator {aggregator!r}; expected mean or gcn")
        return "sage-mean" if aggregator == "mean" else "sage-gcn"
    raise ValueError(f"unknown model {model!r}; expected gcn or sage")
