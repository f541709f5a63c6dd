"""The support matrix a plan prices, built with bounded temporaries.

A plan needs of the support matrix S only its pattern in the run's numbering and whether S
is symmetric (values included: the runtime's test).  `plan_support` computes S's values one
block of rows at a time (`support_rows`, as the serial `support_matrix` does for all rows at
once), tests the symmetry in the original numbering without a transpose (a permutation does
not change it), drops the values and renumbers the pattern in one pass.  The pattern carries
one byte per entry as its values (scipy needs some); no plan reads them.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from gcntrain.kernels.pattern import permute_pattern, permuted_indptr, symmetry_deviation
from gcntrain.model.normalize import degrees, support_rows
from gcntrain.simulate.plangraph import PlanGraph, from_graph

#: relative tolerance of the symmetry test of S (the runtime's allclose uses the same)
SYMMETRY_RTOL = 1e-12
#: adjacency entries per block of rows whose support values are computed at once
BLOCK_ENTRIES = 1 << 22


def is_symmetric(S: sp.csr_matrix) -> bool:
    """Whether ``max |S - S^T| <= SYMMETRY_RTOL * max(max |S|, 1)``, without a transpose
    where S's rows are sorted without duplicates (else with scipy's)."""
    dev, big, canonical = symmetry_deviation(S.indptr, S.indices, np.asarray(S.data, np.float64))
    if canonical:
        return bool(dev <= SYMMETRY_RTOL * max(big, 1.0))
    diff = abs(S - S.T)
    return bool(diff.nnz == 0 or diff.max() <= SYMMETRY_RTOL * max(abs(S).max(), 1.0))


def support_arrays(graph, kind: str, limit: int | None = None):
    """(indptr int64, indices, data float64) of the support matrix of `graph` in its own
    numbering, equal to `support_matrix`'s, computed `limit` adjacency entries at a time
    into arrays of the most entries a support can have (the adjacency's plus a diagonal:
    duplicates summed and self-loops dropped only remove entries), returned as views."""
    g = graph if isinstance(graph, PlanGraph) else from_graph(graph)
    n = g.n
    limit = BLOCK_ENTRIES if limit is None else int(limit)
    indptr = np.asarray(g.indptr, dtype=np.int64)
    deg = np.empty(n, dtype=np.float64)  # row by row: the blocks' degrees are the whole's
    for lo, hi, ptr, ix, data in g.blocks(limit):
        deg[lo:hi] = degrees(ptr, ix, data, kind, rows=np.arange(lo, hi, dtype=np.int64))
    most = int(indptr[-1]) + n
    itype = np.int32 if max(n, most) < 2**31 else np.int64
    out_ptr = np.zeros(n + 1, dtype=np.int64)
    indices = np.empty(most, dtype=itype)
    values = np.empty(most, dtype=np.float64)
    at = 0
    for lo, hi, ptr, ix, data in g.blocks(limit):
        rows = np.arange(lo, hi, dtype=np.int64)
        ip, ix, dv = support_rows(ptr, ix, data, rows, deg, kind)
        out_ptr[lo + 1 : hi + 1] = ip[1:] + at
        indices[at : at + ix.shape[0]] = ix
        values[at : at + ix.shape[0]] = dv
        at += ix.shape[0]
        del ip, ix, dv
    return out_ptr, indices[:at], values[:at]


def renumbered_pattern(indptr, indices, perm: np.ndarray, n: int) -> sp.csr_matrix:
    """The pattern of ``S[perm][:, perm]`` (rows sorted), one byte per entry as values."""
    perm = np.asarray(perm, dtype=np.int64)
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.shape[0], dtype=np.int64)
    ptr = permuted_indptr(indptr, perm)
    itype = np.int32 if max(n, int(ptr[-1])) < 2**31 else np.int64
    out = np.empty(int(ptr[-1]), dtype=itype)
    permute_pattern(np.asarray(indptr, np.int64), indices, perm, inv.astype(itype), ptr, out)
    del inv
    M = sp.csr_matrix((np.ones(out.shape[0], dtype=np.bool_), out, ptr), shape=(n, n))
    M.has_sorted_indices = True
    return M


def plan_support(source, kind: str, perm: np.ndarray) -> tuple[sp.csr_matrix, bool]:
    """(pattern of S in the new numbering ``perm[new] = old``, whether S is symmetric).

    `source`: the graph (S is built block by block) or S itself (a caller's, original
    numbering)."""
    if sp.issparse(source):
        S = sp.csr_matrix(source)
        symmetric = is_symmetric(S)
        return renumbered_pattern(S.indptr, S.indices, perm, S.shape[0]), symmetric
    n = source.n
    indptr, indices, values = support_arrays(source, kind)
    dev, big, canonical = symmetry_deviation(indptr, indices, values)
    if canonical:
        symmetric = bool(dev <= SYMMETRY_RTOL * max(big, 1.0))
    else:
        symmetric = is_symmetric(sp.csr_matrix((values, indices, indptr), shape=(n, n)))
    del values
    return renumbered_pattern(indptr, indices, perm, n), symmetric
