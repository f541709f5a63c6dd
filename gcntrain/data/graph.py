"""In-memory graph record shared by converters, generators, the HDF5 store and the trainer."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from gcntrain.partition.unique import unique_ints

#: the arrays `Graph.content_hash` covers, in its order (also streamed from a file by
#: `gcntrain.data.store.verify_content_hash`)
HASHED_ARRAYS = (
    "indptr",
    "indices",
    "data",
    "features",
    "labels",
    "train_mask",
    "val_mask",
    "test_mask",
)


@dataclass
class Graph:
    """A graph in CSR form with optional node data.

    Attributes
    ----------
    indptr : int64 array (n + 1,)
    indices : int32 or int64 array (nnz,)
    data : float32 array (nnz,) or None (all ones)
    features : float32 array (n, f) or None
    labels : int64 array (n,) with -1 for unlabeled, or None
    train_mask, val_mask, test_mask : bool arrays (n,) or None
    name : dataset name
    directed : whether the adjacency is meant as directed
    num_classes : number of classes (default: max label + 1)
    """

    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray | None = None
    features: np.ndarray | None = None
    labels: np.ndarray | None = None
    train_mask: np.ndarray | None = None
    val_mask: np.ndarray | None = None
    test_mask: np.ndarray | None = None
    name: str = "graph"
    directed: bool = False
    num_classes: int | None = None
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.num_classes is None and self.labels is not None and self.labels.size:
            self.num_classes = int(max(int(self.labels.max()) + 1, 0))

    @property
    def n(self) -> int:
        return int(self.indptr.shape[0] - 1)

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    @property
    def num_features(self) -> int:
        return 0 if self.features is None else int(self.features.shape[1])

    def values(self) -> np.ndarray:
        """Edge values, ones when `data` is absent."""
        if self.data is None:
            return np.ones(self.nnz, dtype=np.float32)
        return self.data

    def adjacency(self) -> sp.csr_matrix:
        """The adjacency as a scipy CSR matrix (n x n)."""
        return sp.csr_matrix((self.values(), self.indices, self.indptr), shape=(self.n, self.n))

    def self_loop_count(self) -> int:
        rows = np.repeat(np.arange(self.n), np.diff(self.indptr))
        return int(np.count_nonzero(rows == self.indices))

    def num_undirected_edges(self) -> int:
        """Distinct unordered pairs {u, v}, u != v, over the stored entries."""
        rows = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self.indptr))
        cols = self.indices.astype(np.int64)
        off = rows != cols
        lo = np.minimum(rows[off], cols[off])
        hi = np.maximum(rows[off], cols[off])
        return int(unique_ints(lo * self.n + hi, overwrite=True).size)

    def content_hash(self) -> str:
        """SHA-256 over structure and node data; stored in files, checked by consumers."""
        h = hashlib.sha256()
        for name in HASHED_ARRAYS:
            a = getattr(self, name)
            h.update(name.encode())
            if a is None:
                h.update(b"\x00none")
                continue
            a = np.ascontiguousarray(a)
            if name == "indices" or name == "indptr":
                a = a.astype(np.int64, copy=False)
            h.update(str(a.dtype).encode() + str(a.shape).encode())
            h.update(a.tobytes())
        return h.hexdigest()
