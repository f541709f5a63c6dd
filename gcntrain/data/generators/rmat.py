"""R-MAT (Kronecker) graphs with the Graph500 parameters, built in bounded memory.

The random stream is the one the generator has always drawn (so a seed gives the same graph
as before): per batch of `RMAT_BATCH` edges and per bit level, the row draws of the batch,
then its column draws; then the vertex permutation; then the features (row by row), labels
and split.  The edges are kept as int32 (scale <= 31), relabelled in place and turned into
CSR by a count, a scatter and a per-row sort (`gcntrain.data.generators.build`).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from gcntrain.data.generators.build import (
    GeneratedGraph,
    random_split,
    scatter_edges,
    sort_rows,
)
from gcntrain.errors import InputError

#: edges per batch of the R-MAT draw; part of the random stream's definition (a seed's graph
#: depends on it), so fixed, whatever the memory
RMAT_BATCH = 1 << 22


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise InputError(msg)


def rmat_edges(
    scale: int,
    num_edges: int,
    a: float,
    b: float,
    c: float,
    rng: np.random.Generator,
    *,
    dtype: type = np.int64,
    batch: int = RMAT_BATCH,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw `num_edges` R-MAT edges over ``2**scale`` vertices.

    Each of the `scale` bit levels picks a quadrant with probabilities a, b, c, d = 1-a-b-c
    (a: top-left, b: top-right, c: bottom-left).  Per batch of `batch` edges and per level,
    `batch` uniform draws decide the row bits, the next `batch` the column bits (the column
    threshold depends on the row's half), composed by `gcntrain.kernels.edges.rmat_level`.

    Parameters
    ----------
    scale, num_edges : vertices ``2**scale`` and edges to draw
    a, b, c : quadrant probabilities
    rng : the generator's random state (advanced by ``2 * scale * num_edges`` doubles)
    dtype : integer dtype of the result (int32 holds scale <= 31)
    batch : edges per batch (a different batch gives a different draw)

    Returns
    -------
    src, dst : arrays (num_edges,) of `dtype`
    """
    from gcntrain.kernels.edges import rmat_level

    src = np.zeros(num_edges, dtype=dtype)
    dst = np.zeros(num_edges, dtype=dtype)
    ab = a + b
    a_norm = a / ab if ab > 0 else 0.0
    c_norm = c / (1.0 - ab) if ab < 1 else 0.0
    draws = np.empty(2 * min(batch, num_edges))
    for lo in range(0, num_edges, batch):
        hi = min(num_edges, lo + batch)
        d = draws[: 2 * (hi - lo)]
        for level in range(scale):
            rng.random(out=d)
            rmat_level(d, level, ab, a_norm, c_norm, src[lo:hi], dst[lo:hi])
    return src, dst


def rmat_generated(
    scale: int,
    edge_factor: int = 16,
    a: float = 0.57,
    b: float = 0.19,
    c: float = 0.19,
    seed: int = 0,
    *,
    symmetrize: bool = True,
    num_features: int = 32,
    num_classes: int = 4,
) -> GeneratedGraph:
    """The structure of `gcntrain.data.generate.rmat`'s graph, its node data drawn on
    demand (same arguments, same graph); see there."""
    _check(1 <= scale <= 40, f"scale must be in 1..40, got {scale}")
    _check(edge_factor >= 1, f"edge factor must be >= 1, got {edge_factor}")
    _check(
        min(a, b, c) >= 0 and a + b + c <= 1.0 + 1e-12,
        f"need a, b, c >= 0 and a + b + c <= 1, got {a}, {b}, {c}",
    )
    _check(num_features >= 0 and num_classes >= 1, "need features >= 0 and classes >= 1")
    from gcntrain.kernels.edges import relabel_inplace

    rng = np.random.default_rng(seed)
    n = 1 << scale
    ids = np.int32 if scale <= 31 else np.int64
    src, dst = rmat_edges(scale, edge_factor * n, a, b, c, rng, dtype=ids)
    perm = rng.permutation(n)
    relabel_inplace(src, perm)
    relabel_inplace(dst, perm)
    del perm
    indptr, indices = scatter_edges(src, dst, n, symmetrize)
    del src, dst  # before the sort: memory is the scattered entries, not the edges too
    indices = sort_rows(indptr, indices)

    def draw_features(block_rows: int) -> Iterator[np.ndarray]:
        for lo in range(0, n, block_rows):
            rows = min(block_rows, n - lo)
            yield rng.standard_normal((rows, num_features), dtype=np.float32)

    def draw_rest():
        labels = rng.integers(0, num_classes, n).astype(np.int64)
        return (labels, *random_split(n, rng))

    return GeneratedGraph(
        indptr=indptr,
        indices=indices,
        num_features=num_features,
        draw_features=draw_features,
        draw_rest=draw_rest,
        name=f"rmat-s{scale}-e{edge_factor}",
        directed=not symmetrize,
        num_classes=num_classes,
        extra={"generator": "rmat", "seed": seed, "a": a, "b": b, "c": c},
    )
