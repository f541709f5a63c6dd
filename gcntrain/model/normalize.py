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

KINDS = ("gcn", "sage-mean", "sage-gcn")
#: what the identity adds to every degree
DEGREE_OFFSET = {"gcn": 1.0, "sage-mean": 0.0, "sage-gcn": 1.0}


def _check_kind(kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown support kind {kind!r}; expected one of {', '.join(KINDS)}")


def _values(indices: np.ndarray, data: np.ndarray | None) -> np.ndarray:
    if data is None:
        return np.ones(indices.shape[0], dtype=np.float64)
    return np.asarray(data, dtype=np.float64)


def _row_of_entry(indptr: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(indptr.shape[0] - 1, dtype=np.int64), np.diff(indptr))


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
    vals = _values(indices, data)
    local_row = _row_of_entry(indptr)
    one = 0.0 if partial else DEGREE_OFFSET[kind]
    if kind == "gcn":
        return np.bincount(local_row, weights=vals, minlength=m) + one
    grow = local_row if rows is None else np.asarray(rows, dtype=np.int64)[local_row]
    off = np.asarray(indices, dtype=np.int64) != grow
    deg = np.bincount(local_row[off], weights=vals[off], minlength=m)
    return deg + one if kind == "sage-gcn" else deg


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

    Returns
    -------
    (indptr int64, indices int64, data float64)
        Sorted column ids, duplicates summed.
    """
    _check_kind(kind)
    rows = np.asarray(rows, dtype=np.int64)
    deg_global = np.asarray(deg_global, dtype=np.float64)
    n = deg_global.shape[0]
    m = rows.shape[0]
    if indptr.shape[0] != m + 1:
        raise ValueError("indptr length must be len(rows) + 1")
    vals = _values(indices, data)
    lrow = _row_of_entry(indptr)
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
    return (M.indptr.astype(np.int64), M.indices.astype(np.int64), M.data.astype(np.float64))


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
