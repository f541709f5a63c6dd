"""The record a partitioning run produces: what the file stores and the report describes."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class PartitionResult:
    """Output of one partitioning method.

    Exactly one of the layouts is set:

    * vertex partition (block, random, metis, hypergraph, mvc): `part` (n,) int64;
    * vertex cut (libra, random-edge): `edge_part` (nnz,) + `replica_ptr`/`replica_parts`
      (CSR vertex -> parts) + `root` (n,);
    * 2D permutation (double-perm): `row_perm`, `col_perm` and `grid` (r, c).

    `mvc` (optional, with a vertex partition) holds the hybrid pre/post split arrays:
    ``edge_mode`` (int8 per nonzero: -1 local, 0 pre, 1 post), ``pair_src``, ``pair_dst``,
    ``pre_volume``, ``post_volume``, ``hybrid_volume``.

    Attributes
    ----------
    method : method name (e.g. "metis")
    parts : number of parts P
    params : method parameters (JSON-serialisable)
    seed : random seed used
    graph_content_hash : `Graph.content_hash()` of the partitioned graph ("" if unknown)
    """

    method: str
    parts: int
    part: np.ndarray | None = None
    edge_part: np.ndarray | None = None
    replica_ptr: np.ndarray | None = None
    replica_parts: np.ndarray | None = None
    root: np.ndarray | None = None
    row_perm: np.ndarray | None = None
    col_perm: np.ndarray | None = None
    grid: tuple[int, int] | None = None
    mvc: dict[str, np.ndarray] | None = None
    params: dict = field(default_factory=dict)
    seed: int = 0
    graph_content_hash: str = ""
    seconds: float = 0.0

    @property
    def kind(self) -> str:
        """ "vertex", "vertex-cut" or "permutation"."""
        if self.part is not None:
            return "vertex"
        if self.edge_part is not None:
            return "vertex-cut"
        if self.row_perm is not None:
            return "permutation"
        raise ValueError("partition result holds no layout")
