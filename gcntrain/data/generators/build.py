"""Edge lists to canonical CSR, and a generated graph whose node data are drawn on demand.

`csr_from_edges` replaces ``coo_to_csr`` + ``symmetrize`` for the generators: the same
result (rows sorted, no duplicates, no self-loops) from a count, a scatter and a sort of each
row in place (`gcntrain.kernels.edges`), holding the edge list and one index array, never
int64 keys of all entries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np

from gcntrain.data.graph import Graph
from gcntrain.data.store import index_dtype


def scatter_edges(
    src: np.ndarray, dst: np.ndarray, n: int, symmetric: bool
) -> tuple[np.ndarray, np.ndarray]:
    """CSR of an edge list with each row's columns in edge order, repeats kept, self-loops
    dropped; every edge (u, v) stored as (u, v) and, when `symmetric`, (v, u).

    Parameters
    ----------
    src, dst : integer arrays (m,)
        Edge ends in ``[0, n)``.
    n : int
        Number of nodes.
    symmetric : bool
        Store both directions.

    Returns
    -------
    indptr : int64 (n + 1,)
    indices : (entries,), the stored column dtype (`gcntrain.data.store.index_dtype`)
    """
    from gcntrain.kernels.edges import edge_degrees, edge_scatter

    src = np.ascontiguousarray(src)
    dst = np.ascontiguousarray(dst)
    if src.shape != dst.shape or src.ndim != 1:
        raise ValueError("src and dst must be 1-D arrays of the same length")
    if src.size and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
        raise ValueError(f"edge ends must lie in [0, {n})")
    indptr = np.zeros(n + 1, dtype=np.int64)
    edge_degrees(src, dst, symmetric, indptr[1:])
    np.cumsum(indptr, out=indptr)
    indices = np.empty(int(indptr[n]), dtype=index_dtype(n))
    cursor = indptr[:-1].copy()
    edge_scatter(src, dst, symmetric, cursor, indices)
    return indptr, indices


def sort_rows(indptr: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Sort each row's columns and drop repeats, in place (`indptr` is rewritten); returns
    the rows' entries, a view of the front of `indices`."""
    from gcntrain.kernels.edges import sort_dedup_rows

    return indices[: sort_dedup_rows(indptr, indices)]


def csr_from_edges(
    src: np.ndarray, dst: np.ndarray, n: int, symmetric: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Canonical CSR of an edge list: `scatter_edges`, then `sort_rows`.

    The same arrays as ``coo_to_csr`` of the entries without self-loops (followed by
    ``symmetrize`` when `symmetric`), with the edge list and one index array in memory.
    A caller that can drop its edge list before the sort calls the two steps itself.
    """
    indptr, indices = scatter_edges(src, dst, n, symmetric)
    return indptr, sort_rows(indptr, indices)


def random_split(
    n: int, rng: np.random.Generator, fractions: tuple[float, float, float] = (0.6, 0.2, 0.2)
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Disjoint random train/val/test masks with the given fractions of the n nodes."""
    perm = rng.permutation(n)
    n_train = int(round(fractions[0] * n))
    n_val = int(round(fractions[1] * n))
    n_test = min(int(round(fractions[2] * n)), n - n_train - n_val)
    masks = []
    for lo, hi in (
        (0, n_train),
        (n_train, n_train + n_val),
        (n_train + n_val, n_train + n_val + n_test),
    ):
        m = np.zeros(n, dtype=bool)
        m[perm[lo:hi]] = True
        masks.append(m)
    return masks[0], masks[1], masks[2]


#: node rows per block of features drawn at once when a generated graph is written
BLOCK_ROWS = 1 << 16


@dataclass
class GeneratedGraph:
    """A generated structure plus the draws that make its node data, in the order of the
    generator's random stream: `draw_features` first (blocks of rows), then `draw_rest`.

    The draws share the generator's random state, so the node data can be made once
    (`node_data` or `to_graph`); the blocks concatenated are the features the whole draw
    gives, whatever the block size.

    Attributes
    ----------
    indptr, indices : CSR structure (canonical: rows sorted, no repeats)
    num_features : feature width
    draw_features : ``draw_features(block_rows)`` yields float32 blocks of rows in order
    draw_rest : ``draw_rest()`` -> ``(labels, train_mask, val_mask, test_mask)``, called
        after every feature block was drawn
    name, directed, num_classes, extra : as in `Graph`
    """

    indptr: np.ndarray
    indices: np.ndarray
    num_features: int
    draw_features: Callable[[int], Iterator[np.ndarray]]
    draw_rest: Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
    name: str
    directed: bool
    num_classes: int | None
    extra: dict = field(default_factory=dict)
    _used: bool = False

    @property
    def n(self) -> int:
        return int(self.indptr.shape[0] - 1)

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def node_data(
        self, block_rows: int = BLOCK_ROWS
    ) -> tuple[Iterator[np.ndarray], Callable[[], tuple]]:
        """``(feature blocks, rest)``: the feature blocks to consume first, then ``rest()``
        for the labels and masks.  Once only (the random stream moves on)."""
        if self._used:
            raise RuntimeError(f"the node data of {self.name} were already drawn")
        self._used = True
        return self.draw_features(max(int(block_rows), 1)), self.draw_rest

    def to_graph(self) -> Graph:
        """The whole graph in memory (features drawn in one block)."""
        blocks, rest = self.node_data(max(self.n, 1))
        parts = list(blocks)  # one block of all n rows
        features = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)
        labels, train, val, test = rest()
        return Graph(
            indptr=self.indptr,
            indices=self.indices,
            features=features,
            labels=labels,
            train_mask=train,
            val_mask=val,
            test_mask=test,
            name=self.name,
            directed=self.directed,
            num_classes=self.num_classes,
            extra=self.extra,
        )
