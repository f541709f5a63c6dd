"""Random vertex permutations for 2D nonzero balance (Plexus, section 5.1) and block counts.

A 2D (r x c grid) decomposition splits the permuted matrix into near-equal row blocks and
column blocks; its load balance is the nonzero count per block.  Plexus compares

* original: the matrix as stored,
* single permutation: ``P A P^T`` (one permutation for rows and columns),
* double permutation: ``P_r A P_c^T`` (independent row and column permutations),

by max / mean nonzeros over the r x c blocks (Table 3).  On a road network (europe_osm)
the double permutation is near perfect (1.001); on a power-law graph a uniform permutation
leaves the heavy rows' weight to chance (soc-Slashdot0902, 8 x 8: 1.09-1.13 over seeds).
`stratified_permutation` keeps the permutation random but deals the vertices to the blocks in
degree order (each run of k consecutive vertices by degree goes to the k blocks in a random
order, then the order inside each block is random), which evens out the blocks' nonzero sums
(Slashdot 8 x 8: about 1.02); `stratified_double_permutation` applies it to rows (by row
nonzeros) and columns (by column nonzeros) independently.  Convention: a permutation `perm` is
an ordering; position k of the permuted matrix holds original row (or column) ``perm[k]``, so
the permuted matrix is ``A[row_perm][:, col_perm]`` (numpy fancy-index convention).
"""

from __future__ import annotations

import numpy as np

from gcntrain.partition.basic import block_bounds
from gcntrain.partition.csr import check_csr, row_ids


def single_permutation(n: int, seed: int = 0) -> np.ndarray:
    """One random ordering of ``range(n)`` (int64), used for both rows and columns."""
    return np.random.default_rng(seed).permutation(n).astype(np.int64)


def double_permutation(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Independent random row and column orderings (Plexus' double permutation).

    Returns
    -------
    (row_perm, col_perm), int64 permutations of ``range(n)``.
    """
    rng = np.random.default_rng(seed)
    row_perm = rng.permutation(n).astype(np.int64)
    col_perm = rng.permutation(n).astype(np.int64)
    return row_perm, col_perm


def stratified_permutation(
    weights: np.ndarray, nblocks: int, rng: np.random.Generator
) -> np.ndarray:
    """Random ordering whose `nblocks` contiguous blocks get near-equal total weight.

    Vertices sorted by weight (descending, random tie break) are dealt in runs of `nblocks`:
    each run goes to the blocks in a random order; the last, partial run goes to the first
    blocks (which `block_bounds` makes one longer).  Inside a block the order is random.

    Parameters
    ----------
    weights : (n,) vertex weights, e.g. row nonzero counts
    nblocks : number of contiguous blocks of the permuted order
    rng : random generator

    Returns
    -------
    int64 ordering of ``range(n)`` (see the module's convention).
    """
    w = np.asarray(weights)
    n = w.size
    order = np.lexsort((rng.random(n), -w))
    full = (n // nblocks) * nblocks
    block = np.empty(n, dtype=np.int64)
    if full:
        runs = np.argsort(rng.random((full // nblocks, nblocks)), axis=1)
        block[order[:full]] = runs.ravel()
    block[order[full:]] = rng.permutation(n - full)
    return np.lexsort((rng.random(n), block)).astype(np.int64)


def stratified_double_permutation(
    indptr: np.ndarray, indices: np.ndarray, r: int, c: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Double permutation with degree-stratified blocks for an r x c grid.

    Rows are stratified by row nonzeros over r blocks, columns by column nonzeros over c
    blocks, with independent randomness.

    Returns
    -------
    (row_perm, col_perm), int64 orderings.
    """
    n = check_csr(indptr, indices)
    rng = np.random.default_rng(seed)
    row_w = np.diff(indptr)
    col_w = np.bincount(np.asarray(indices, dtype=np.int64), minlength=n)
    return stratified_permutation(row_w, r, rng), stratified_permutation(col_w, c, rng)


def inverse_permutation(perm: np.ndarray) -> np.ndarray:
    """``inv[perm[k]] = k``: the new position of each original index."""
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size, dtype=perm.dtype)
    return inv


def _block_of_original(n: int, nblocks: int, perm: np.ndarray | None) -> np.ndarray:
    """Block id of every original index after ordering by `perm` (None: identity)."""
    bounds = block_bounds(n, nblocks)
    block_of_pos = np.repeat(np.arange(nblocks, dtype=np.int64), np.diff(bounds))
    if perm is None:
        return block_of_pos
    return block_of_pos[inverse_permutation(np.asarray(perm, dtype=np.int64))]


def block_nnz(
    indptr: np.ndarray,
    indices: np.ndarray,
    n: int,
    r: int,
    c: int,
    row_perm: np.ndarray | None = None,
    col_perm: np.ndarray | None = None,
) -> np.ndarray:
    """Nonzeros per block of an r x c grid over the permuted matrix ``A[row_perm][:, col_perm]``.

    Parameters
    ----------
    indptr, indices : CSR pattern of the n x n matrix A
    n : dimension
    r, c : grid rows / columns (near-equal contiguous blocks of positions, as `block_bounds`)
    row_perm, col_perm : orderings (None = identity)

    Returns
    -------
    int64 array (r, c) of stored-entry counts.
    """
    check_csr(indptr, indices, n)
    if not (1 <= r <= max(n, 1) and 1 <= c <= max(n, 1)):
        raise ValueError(f"grid {r} x {c} does not fit a {n} x {n} matrix")
    rb = _block_of_original(n, r, row_perm)
    cb = _block_of_original(n, c, col_perm)
    flat = rb[row_ids(indptr)] * c + cb[np.asarray(indices, dtype=np.int64)]
    return np.bincount(flat, minlength=r * c).astype(np.int64).reshape(r, c)


def max_over_mean(counts: np.ndarray) -> float:
    """max / mean of block counts (1.0 when all are zero)."""
    mean = float(np.mean(counts))
    return float(np.max(counts)) / mean if mean > 0 else 1.0


def permutation_balance(
    indptr: np.ndarray, indices: np.ndarray, r: int, c: int, seed: int = 0
) -> dict:
    """Plexus Table 3: block nnz max/mean for original, single and double permutation.

    Returns
    -------
    dict with ``grid`` ("r x c"), ``nnz_max_mean_original``, ``nnz_max_mean_single``,
    ``nnz_max_mean_double`` (uniform, as Plexus), ``nnz_max_mean_double_stratified`` and the
    corresponding max block counts ``nnz_max_*``.
    """
    n = check_csr(indptr, indices)
    single = single_permutation(n, seed)
    row_perm, col_perm = double_permutation(n, seed)
    srow, scol = stratified_double_permutation(indptr, indices, r, c, seed)
    out: dict = {"grid": f"{r}x{c}"}
    for name, rp, cp in (
        ("original", None, None),
        ("single", single, single),
        ("double", row_perm, col_perm),
        ("double_stratified", srow, scol),
    ):
        counts = block_nnz(indptr, indices, n, r, c, rp, cp)
        out[f"nnz_max_mean_{name}"] = max_over_mean(counts)
        out[f"nnz_max_{name}"] = int(counts.max())
    return out


def near_square_grid(P: int) -> tuple[int, int]:
    """Factor P = r * c with r <= c and r as close to sqrt(P) as possible."""
    r = int(np.floor(np.sqrt(P)))
    while r > 1 and P % r:
        r -= 1
    return r, P // r
