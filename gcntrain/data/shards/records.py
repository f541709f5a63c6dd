"""What the shard readers return: row shards, 2D blocks, the node data of a block row and
vertex-cut (edges) shards."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp


def _csr(indptr: np.ndarray, indices: np.ndarray, data, shape: tuple[int, int]) -> sp.csr_matrix:
    """scipy CSR of stored arrays; absent `data` means all ones (float32)."""
    vals = np.ones(int(indptr[-1]), np.float32) if data is None else data
    return sp.csr_matrix((vals, indices, indptr), shape=shape)


@dataclass
class RowShard:
    """Rows ``[row_start, row_stop)`` of the renumbered adjacency (kind "rows")."""

    k: int
    row_start: int
    row_stop: int
    n_global: int
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray | None
    orig_ids: np.ndarray
    features: np.ndarray | None = None
    labels: np.ndarray | None = None
    train_mask: np.ndarray | None = None
    val_mask: np.ndarray | None = None
    test_mask: np.ndarray | None = None
    num_classes: int | None = None

    @property
    def rows(self) -> int:
        return self.row_stop - self.row_start

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    @property
    def global_rows(self) -> np.ndarray:
        """Global ids (new numbering) of the local rows."""
        return np.arange(self.row_start, self.row_stop, dtype=np.int64)

    def adjacency(self) -> sp.csr_matrix:
        """The rows as a scipy CSR matrix (rows x n_global), columns in the new numbering."""
        return _csr(self.indptr, self.indices, self.data, (self.rows, self.n_global))


@dataclass
class BlockShard:
    """Block (i, j) of the (optionally permuted) adjacency with local column ids."""

    i: int
    j: int
    row_start: int
    row_stop: int
    col_start: int
    col_stop: int
    n_global: int
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray | None

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def adjacency(self) -> sp.csr_matrix:
        """The block as scipy CSR (rows x cols of the block), local column ids."""
        shape = (self.row_stop - self.row_start, self.col_stop - self.col_start)
        return _csr(self.indptr, self.indices, self.data, shape)


@dataclass
class NodeBlock:
    """Node data of block row i (kind "blocks2d"), rows in the row-permuted order."""

    i: int
    row_start: int
    row_stop: int
    orig_ids: np.ndarray
    features: np.ndarray | None = None
    labels: np.ndarray | None = None
    train_mask: np.ndarray | None = None
    val_mask: np.ndarray | None = None
    test_mask: np.ndarray | None = None
    num_classes: int | None = None


@dataclass
class EdgeShard:
    """Part k of a vertex-cut store (kind "edges"): its clones and the entries it holds.

    Rows are the clones in the order of `ids` (new ids: the roots ``row_start..row_stop - 1``
    first, then the leaves ascending); each row holds only the part's entries, columns in the
    new numbering.  `replica_ptr` / `replica_parts` list the parts holding each root.
    """

    k: int
    row_start: int
    row_stop: int
    n_global: int
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray | None
    ids: np.ndarray
    root: np.ndarray
    replica_ptr: np.ndarray
    replica_parts: np.ndarray
    orig_ids: np.ndarray
    features: np.ndarray | None = None
    labels: np.ndarray | None = None
    train_mask: np.ndarray | None = None
    val_mask: np.ndarray | None = None
    test_mask: np.ndarray | None = None
    num_classes: int | None = None

    @property
    def clones(self) -> int:
        return int(self.ids.shape[0])

    @property
    def roots(self) -> int:
        return self.row_stop - self.row_start

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def adjacency(self) -> sp.csr_matrix:
        """The entries as scipy CSR (clones x n_global), columns in the new numbering."""
        return _csr(self.indptr, self.indices, self.data, (self.clones, self.n_global))
