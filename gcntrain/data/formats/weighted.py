"""The CSR of an edge list with values (a third column, a real or integer Matrix Market
file), built from its parsed blocks in bounded memory.

The entries are counted per row, scattered block by block into their rows (each block freed
once placed) and every row is then sorted and merged in place
(`gcntrain.kernels.edgevalues`).  Memory is the parsed blocks (12 bytes an entry with int32
ids) plus the scattered entries (index and float32 value), never an int64 copy of the list.

The result is the one the converters built from the whole list before (``coo_to_csr``,
``symmetrize`` and ``set_self_loops`` of `gcntrain.data.preprocess`), with one difference
that can only show where an entry is repeated three times or more with values whose float32
sum depends on the order: repeated Matrix Market entries are summed in the order of the file
(each symmetric block's transposed entries after all the entries read), where the whole-list
sort left that order to numpy's unstable sort (so a symmetric file's two triangles are now
summed alike: the whole-list sort could make them differ in the last bit, and the matrix
directed).  Merging by maximum does not depend on the order: where a zero meets a negative
zero, +0.0 is kept (the whole-list ``maximum`` kept whichever its sort put first).
"""

from __future__ import annotations

import numpy as np

from gcntrain.data.preprocess import index_dtype


def weighted_csr(
    chunks, n: int, duplicates: str, symmetrize: bool, self_loops: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """CSR of the weighted blocks of `chunks` (an `EdgeChunks`, consumed).

    Parameters
    ----------
    chunks : EdgeChunks with values, ids in ``[0, n)``
    n : nodes
    duplicates : "max" (edge lists) or "sum" (Matrix Market)
    symmetrize : store ``max(A[u, v], A[v, u])`` in both directions (A: the merged matrix)
    self_loops : "keep", "drop" or "add" (1.0 on every empty diagonal position)

    Returns
    -------
    indptr : int64 (n + 1,)
    indices : (nnz,) of `index_dtype(n)`, rows sorted without repeats
    data : float32 (nnz,)
    """
    if duplicates not in ("max", "sum"):
        raise ValueError(f"duplicates must be 'max' or 'sum', got {duplicates!r}")
    blocks = list(zip(chunks.src, chunks.dst, chunks.values, chunks.mirror, strict=True))
    negate = chunks.negate_mirror
    chunks.src, chunks.dst, chunks.values, chunks.mirror, chunks.count = [], [], None, [], 0
    use_sum = duplicates == "sum"
    # by maximum, A + A^T is merged at once; a sum is merged first, then symmetrised
    both = symmetrize and not use_sum
    loops = self_loops if both or not symmetrize else "keep"
    indptr, indices, data = _build(blocks, n, negate, use_sum, both, loops)
    if symmetrize and use_sum:
        rows = np.repeat(np.arange(n, dtype=indices.dtype), np.diff(indptr))
        blocks = [(rows, indices, data, False)]
        del rows, indices, data
        indptr, indices, data = _build(blocks, n, False, False, True, self_loops)
    return indptr, indices, data


def _build(
    blocks: list, n: int, negate: bool, use_sum: bool, both: bool, loops: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Count, scatter (`blocks` emptied as they are placed) and merge.

    Each row receives its entries in the order of the whole list: the blocks' entries in
    order (with their transposes too when `both`), then the transposed off-diagonal entries
    of the mirrored blocks (negated with `negate`).
    """
    from gcntrain.kernels.edgevalues import merge_rows, value_degrees, value_scatter

    skip = loops == "drop"
    add = loops == "add"
    indptr = np.zeros(n + 1, dtype=np.int64)
    for s, d, _, mirror in blocks:
        value_degrees(s, d, True, both, skip, indptr[1:])
        if mirror:
            value_degrees(s, d, False, True, skip, indptr[1:])
    if add:
        indptr[1:] += 1
    np.cumsum(indptr, out=indptr)
    indices = np.empty(int(indptr[n]), dtype=index_dtype(n))
    data = np.empty(int(indptr[n]), dtype=np.float32)
    cursor = indptr[:-1].copy()
    for i, (s, d, w, mirror) in enumerate(blocks):
        value_scatter(s, d, w, True, both, False, skip, cursor, indices, data)
        if not mirror:
            blocks[i] = None  # placed: free the block
    for i, block in enumerate(blocks):
        if block is not None:
            s, d, w, _ = block
            value_scatter(s, d, w, False, True, negate, skip, cursor, indices, data)
            blocks[i] = None
    del cursor
    blocks.clear()
    nnz = merge_rows(indptr, indices, data, use_sum, add)
    return indptr, indices[:nnz], data[:nnz]


def values_symmetric(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray) -> bool:
    """Whether the matrix equals its transpose, pattern and values (as
    `gcntrain.data.preprocess.is_symmetric`, without building the transpose)."""
    from gcntrain.kernels.edgevalues import values_symmetric as check

    return bool(check(indptr, indices, data))
