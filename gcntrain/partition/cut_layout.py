"""Vertex-cut layouts: who holds which clone, which rank roots each split vertex, and who sends
what to whom in the one-level trees of DistGNN (section 5.3), vectorised over all parts.

Pure: arrays in, arrays out, no MPI.  The numbering sorts the vertices by their root part
(`root_numbering`), so part p's roots are the new ids ``offsets[p]:offsets[p+1]`` and the root
of any vertex follows from its id.  A part's *clones* are its roots plus every vertex an edge
of the part touches; a clone that is not a root is a *leaf* of its vertex's tree.  Clones are
ordered roots first (ascending ids), then leaves (ascending ids): `clones_of`.

Every function here is used both by a rank at run time (on its own entries) and by the plan
(on all entries), so the runtime and the simulator share one description of the traffic.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gcntrain.partition.csr import row_ids
from gcntrain.partition.unique import unique_ints


def fill_roots(root: np.ndarray, P: int) -> np.ndarray:
    """Roots with every vertex that has no edge (root -1) rooted at part ``v mod P``."""
    root = np.asarray(root, dtype=np.int64).copy()
    lone = np.flatnonzero(root < 0)
    root[lone] = lone % int(P)
    return root


def root_numbering(root: np.ndarray, P: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(perm new -> old, inv old -> new, offsets): vertices sorted by root part, then id."""
    root = np.asarray(root, dtype=np.int64)
    perm = np.argsort(root, kind="stable").astype(np.int64)
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size, dtype=np.int64)
    offsets = np.zeros(int(P) + 1, dtype=np.int64)
    np.cumsum(np.bincount(root, minlength=int(P)), out=offsets[1:])
    return perm, inv, offsets


def root_of(ids: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Root part of every new id."""
    return np.searchsorted(offsets, np.asarray(ids, dtype=np.int64), side="right") - 1


def bucket_of(ids: np.ndarray, offsets: np.ndarray, delay: int) -> np.ndarray:
    """cd-r bucket of every new id: each root part's vertices cut into `delay` contiguous
    ranges of near-equal size (Algorithm 4, lines 3-6), computable from the id alone."""
    ids = np.asarray(ids, dtype=np.int64)
    p = root_of(ids, offsets)
    size = np.maximum(offsets[p + 1] - offsets[p], 1)
    return ((ids - offsets[p]) * int(delay)) // size


@dataclass
class EdgeCut:
    """An edge assignment in the root numbering.

    Attributes
    ----------
    P : parts
    offsets : int64 (P + 1), root ranges of the new ids
    row, col : int64 (nnz,) new ids of every stored adjacency entry (its row and column)
    part : int64 (nnz,) the part holding each entry
    """

    P: int
    offsets: np.ndarray
    row: np.ndarray
    col: np.ndarray
    part: np.ndarray
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def n(self) -> int:
        return int(self.offsets[-1])

    @staticmethod
    def from_csr(indptr, indices, edge_part, inv, offsets) -> EdgeCut:
        """The cut of a CSR graph (original numbering, `edge_part` in its entry order).

        Duplicate entries (a graph file may store (i, j) twice) all go to the part of the
        first copy, so that a rank keeping its entries by (row, col) keeps all copies or none.
        """
        inv = np.asarray(inv, dtype=np.int64)
        offsets = np.asarray(offsets, dtype=np.int64)
        row = inv[row_ids(np.asarray(indptr, dtype=np.int64))]
        col = inv[np.asarray(indices, dtype=np.int64)]
        part = np.asarray(edge_part, dtype=np.int64)
        n = int(offsets[-1])
        _, first, back = unique_ints(row * n + col, return_index=True, return_inverse=True)
        if first.size != row.size:
            part = part[first][back]
        return EdgeCut(int(offsets.shape[0] - 1), offsets, row, col, part)

    def _cached(self, name, fn):
        if name not in self._cache:
            self._cache[name] = fn()
        return self._cache[name]

    def replicas(self) -> tuple[np.ndarray, np.ndarray]:
        """(part, vertex) of every clone, sorted by part then vertex (roots included)."""

        def make():
            n = self.n
            roots = np.arange(n, dtype=np.int64)
            parts = np.concatenate([self.part, self.part, root_of(roots, self.offsets)])
            verts = np.concatenate([self.row, self.col, roots])
            key = unique_ints(parts * n + verts, overwrite=True)
            return key // max(n, 1), key % max(n, 1)

        return self._cached("replicas", make)

    def clone_counts(self) -> np.ndarray:
        """(P,) clones per part."""
        parts, _ = self.replicas()
        return np.bincount(parts, minlength=self.P).astype(np.int64)

    def replica_counts(self) -> np.ndarray:
        """(n,) parts holding each vertex."""
        _, verts = self.replicas()
        return np.bincount(verts, minlength=self.n).astype(np.int64)

    def replication_factor(self) -> float:
        """Mean clones per vertex (DistGNN Table 4)."""
        return float(self.replica_counts().mean()) if self.n else 1.0

    def clones_of(self, p: int) -> np.ndarray:
        """New ids of part p's clones: its roots (ascending), then its leaves (ascending)."""
        parts, verts = self.replicas()
        lo, hi = np.searchsorted(parts, [p, p + 1])
        v = verts[lo:hi]
        own = (v >= self.offsets[p]) & (v < self.offsets[p + 1])
        return np.concatenate([v[own], v[~own]])

    def entries_of(self, p: int) -> np.ndarray:
        """Sorted keys ``row * n + col`` of part p's entries."""
        sel = self.part == p
        return np.sort(self.row[sel] * self.n + self.col[sel])

    def leaf_pairs(self, delay: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(leaf part, root part, count) of the leaves every part holds of every other part's
        roots; with `delay` r, counts per bucket: an (r, pairs) array (bucket b's leaves)."""
        parts, verts = self.replicas()
        roots = root_of(verts, self.offsets)
        leaf = parts != roots
        src, dst, v = parts[leaf], roots[leaf], verts[leaf]
        key = src * self.P + dst
        uniq, inverse = unique_ints(key, return_inverse=True)
        if delay is None:
            cnt = np.bincount(inverse, minlength=uniq.size).astype(np.int64)
        else:
            b = bucket_of(v, self.offsets, delay)
            cnt = np.zeros((int(delay), uniq.size), dtype=np.int64)
            np.add.at(cnt, (b, inverse), 1)
        return uniq // self.P, uniq % self.P, cnt
