"""What a rank loads, as data: the graph's metadata, the numbering of its nodes, the rows and
columns a rank asks for and the local graph it gets (`gcntrain.schemes.loading` fills them,
`gcntrain.schemes.protocol` declares the schemes that ask for them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class GraphMeta:
    """What a layout may know of the graph before anything is loaded."""

    n: int
    nnz: int
    num_features: int
    num_classes: int | None
    name: str
    content_hash: str = ""


@dataclass(frozen=True)
class Numbering:
    """A renumbering that makes every row part contiguous: ``perm[new] = old``,
    ``inv[old] = new``, part p = new ids ``offsets[p]:offsets[p+1]``.

    A shard store fixes its own numbering: there `perm`/`inv` are None (each shard carries its
    rows' original ids and new-numbering columns), and a 2D block store also fixes the column
    parts (`col_offsets`; None otherwise: the scheme chooses them).
    """

    perm: np.ndarray | None
    inv: np.ndarray | None
    offsets: np.ndarray
    col_offsets: np.ndarray | None = None
    #: an edge assignment that goes with the numbering (a vertex-cut scheme's
    #: `gcntrain.partition.cut_layout.EdgeCut`; None for vertex partitions and at run time
    #: from a store, whose shards carry their own edges)
    cut: Any = None

    @property
    def parts(self) -> int:
        return int(self.offsets.shape[0] - 1)

    @staticmethod
    def identity(n: int, offsets: np.ndarray) -> Numbering:
        ids = np.arange(n, dtype=np.int64)
        return Numbering(ids, ids, np.asarray(offsets, dtype=np.int64))


@dataclass(frozen=True)
class LoadRequest:
    """What one rank reads: the adjacency rows [lo, hi) (new numbering), the adjacency
    columns in `cols` (new numbering; None = all), the node data (ids, features, labels,
    masks) of `node_rows` (a sub-range of `rows`; None = `rows`), the feature columns in
    `features` (None = all); `whole` asks for the whole graph with full validation (content
    hash included).  Split-3D ranks hold adjacency rows of a whole row part but node rows of
    one layer's slice of it.

    A vertex-cut rank reads scattered rows: `ids` (new numbering, any order) replaces `rows`,
    and `entries` (sorted keys ``row * n + col``, new numbering) keeps only its edges of those
    rows; the `LocalGraph` then holds the rows in ascending original id with their new ids in
    `LocalGraph.ids`."""

    rows: tuple[int, int]
    cols: tuple[int, int] | None = None
    features: tuple[int, int] | None = None
    whole: bool = False
    node_rows: tuple[int, int] | None = None
    ids: np.ndarray | None = field(default=None, compare=False)
    entries: np.ndarray | None = field(default=None, compare=False)
    #: the part whose shard a rank reads from a store of per-part shards (vertex cut)
    part: int | None = None


@dataclass
class LocalGraph:
    """What a rank holds after loading (adjacency columns in the new numbering).  The
    adjacency covers `rows`; `orig_ids`, features, labels and masks cover `node_rows`."""

    n: int
    nnz: int
    name: str
    num_classes: int
    num_features: int
    rows: tuple[int, int]
    orig_ids: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray | None
    features: Any
    labels: np.ndarray
    masks: dict[str, np.ndarray]
    node_rows: tuple[int, int] | None = None
    #: new ids of scattered rows (a `LoadRequest` with `ids`); None: the range `rows`
    ids: np.ndarray | None = None
    #: the dtype training computes in (the runner sets it before `Scheme.setup`): a scheme
    #: may build its support's values in it directly (serial), else float64, cast later
    values_dtype: str = "float64"

    def __post_init__(self):
        if self.node_rows is None:
            self.node_rows = self.rows

    @property
    def new_ids(self) -> np.ndarray:
        """New-numbering ids of the adjacency rows."""
        if self.ids is not None:
            return self.ids
        return np.arange(self.rows[0], self.rows[1], dtype=np.int64)
