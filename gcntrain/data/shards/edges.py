"""The vertex-cut layout of an "edges" store (docs/format.md): its numbering and shard arrays.

Pure: arrays in, arrays out.  The numbering, the clone order and the duplicate rule are those
of `gcntrain.partition.cut_layout`, so a shard holds what a vertex-cut rank computes from the
same cut: part p's roots are the new ids ``offsets[p]:offsets[p+1]``, its clones are
`EdgeCut.clones_of(p)` (roots ascending, then leaves ascending).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from gcntrain.data.shards.reorder import CSR, row_sort_order
from gcntrain.errors import InputError
from gcntrain.partition.cut_layout import EdgeCut, fill_roots, root_numbering


@dataclass
class EdgeLayout:
    """A vertex cut in the root numbering.

    Attributes
    ----------
    perm, inv : int64 (n,) new -> original and original -> new ids
    offsets : int64 (P + 1,) root ranges of the new ids
    root : int64 (n,) root part of every vertex (original ids; vertices without edges filled)
    cut : the `EdgeCut` (entries in the graph's entry order, duplicates canonicalised)
    """

    perm: np.ndarray
    inv: np.ndarray
    offsets: np.ndarray
    root: np.ndarray
    cut: EdgeCut

    @cached_property
    def entries_by_part(self) -> tuple[np.ndarray, np.ndarray]:
        """(entry order grouping the entries by part, stably; (P + 1,) group bounds)."""
        part = self.cut.part
        order = np.argsort(part, kind="stable")
        bounds = np.zeros(self.cut.P + 1, dtype=np.int64)
        np.cumsum(np.bincount(part, minlength=self.cut.P), out=bounds[1:])
        return order, bounds

    @cached_property
    def vertex_replicas(self) -> tuple[np.ndarray, np.ndarray]:
        """(int64 (n + 1,) pointers, parts): the parts holding each vertex, ascending."""
        parts, verts = self.cut.replicas()
        order = np.argsort(verts, kind="stable")  # replicas() is sorted by part, then vertex
        ptr = np.zeros(self.cut.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(verts, minlength=self.cut.n), out=ptr[1:])
        return ptr, parts[order]

    def clone_csr(self, p: int, ids: np.ndarray, data: np.ndarray | None) -> CSR:
        """Part p's entries as CSR over its clones `ids` (rows in that order).

        Columns are new ids, sorted within each row (stable: duplicates keep the graph's
        order); `data` (the graph's values, entry order) is gathered alike.
        """
        order, bounds = self.entries_by_part
        sel = order[bounds[p] : bounds[p + 1]]
        by_id = np.argsort(ids)
        local = by_id[np.searchsorted(ids[by_id], self.cut.row[sel])]
        grouped = sel[np.argsort(local, kind="stable")]
        ptr = np.zeros(ids.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(local, minlength=ids.shape[0]), out=ptr[1:])
        within = row_sort_order(ptr, self.cut.col[grouped])
        if within is not None:
            grouped = grouped[within]
        return ptr, self.cut.col[grouped], None if data is None else data[grouped]

    def replica_lists(self, p: int) -> tuple[np.ndarray, np.ndarray]:
        """(replica_ptr, replica_parts) of part p's roots (local pointers from 0)."""
        ptr, parts = self.vertex_replicas
        s, e = int(self.offsets[p]), int(self.offsets[p + 1])
        return ptr[s : e + 1] - ptr[s], parts[ptr[s] : ptr[e]]


def edge_layout(
    indptr: np.ndarray, indices: np.ndarray, edge_part: np.ndarray, root: np.ndarray, P: int
) -> EdgeLayout:
    """The layout of a vertex cut of a CSR graph.

    Parameters
    ----------
    indptr, indices : CSR of the graph (original numbering)
    edge_part : int array (nnz,) part of every stored entry, in the graph's entry order
    root : int array (n,) root part of every vertex, -1 for a vertex without edges (rooted
        at ``v mod P``, `fill_roots`)
    P : number of parts

    Returns
    -------
    EdgeLayout
    """
    check_cut(edge_part, root, int(indptr[-1]), indptr.shape[0] - 1, P)
    root = fill_roots(root, P)
    perm, inv, offsets = root_numbering(root, P)
    cut = EdgeCut.from_csr(indptr, indices, edge_part, inv, offsets)
    return EdgeLayout(perm, inv, offsets, root, cut)


def check_cut(edge_part: np.ndarray, root: np.ndarray, nnz: int, n: int, P: int) -> None:
    """Raise `InputError` unless `edge_part` and `root` describe a P-part cut of the graph."""
    if int(P) < 1:
        raise InputError(f"number of parts is {P} (must be >= 1)")
    for name, a, size, lo in (("edge_part", edge_part, nnz, 0), ("root", root, n, -1)):
        a = np.asarray(a)
        if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
            raise InputError(f"vertex cut: {name} must be a 1-D integer array")
        if a.shape[0] != size:
            what = "stored entries" if name == "edge_part" else "nodes"
            raise InputError(
                f"vertex cut: {name} has {a.shape[0]} entries but the graph has {size} {what}"
            )
        if a.size and (int(a.min()) < lo or int(a.max()) >= P):
            raise InputError(f"vertex cut: {name} has part ids outside [{lo}, {P})")
