"""Edge lists held compactly while a text file is parsed block by block, then relabelled
and assembled into the converters' CSR in bounded memory.

`EdgeChunks` keeps the parsed edges as a list of blocks (int32 ids while they fit, float32
values), never one int64 copy of the whole list.  `assemble_edges` builds the CSR the
converters have always produced:

* a pattern (no values) is counted, scattered and sorted row by row with the generators'
  passes (`gcntrain.kernels.edges`: `edge_degrees`, `edge_scatter`, `sort_dedup_rows`),
  the options ``symmetrize`` and ``self_loops`` applied during the build, so memory is the
  edge blocks plus the stored entries;
* values (a third column, a real or integer Matrix Market file) are counted, scattered and
  merged row by row as well (`gcntrain.data.formats.weighted`: by maximum for edge lists,
  by sum for Matrix Market), so memory is the edge blocks plus the stored entries and values.

The arrays equal those of ``coo_to_csr`` followed by ``symmetrize`` and ``set_self_loops``
on the same entries, whatever the block size (values summed in the file's order: see
`gcntrain.data.formats.weighted`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gcntrain.data.formats.weighted import values_symmetric, weighted_csr
from gcntrain.data.graph import Graph
from gcntrain.data.memory import check_fits
from gcntrain.data.preprocess import index_dtype
from gcntrain.errors import FormatError
from gcntrain.partition.unique import unique_ints

#: ids per batch when the compact relabelling needs a sort (ids far apart)
_UNIQUE_BATCH = 1 << 24


@dataclass
class EdgeChunks:
    """Edges parsed so far: blocks of (src, dst[, values]).

    Attributes
    ----------
    src, dst : list of integer arrays (int32 while every id of a block fits, else int64)
    values : list of float32 arrays, or None for a pattern (no third column)
    mirror : list of bools, one per block: the block also stands for its transpose
        (Matrix Market symmetric storage; its diagonal entries once)
    negate_mirror : the transposed entries take the negated value (skew-symmetric storage)
    hi : largest id seen (-1 before any edge)
    count : edges held (each mirrored block counted once)
    """

    src: list = field(default_factory=list)
    dst: list = field(default_factory=list)
    values: list | None = None
    mirror: list = field(default_factory=list)
    negate_mirror: bool = False
    hi: int = -1
    count: int = 0

    def add(
        self, src: np.ndarray, dst: np.ndarray, values: np.ndarray | None, mirror: bool = False
    ) -> None:
        """Append a block of edges (copied: the arrays may be a parser's reused buffers)."""
        if src.size == 0:
            return
        hi = int(max(src.max(), dst.max()))
        ids = np.int32 if hi < 2**31 else np.int64
        self.src.append(src.astype(ids))
        self.dst.append(dst.astype(ids))
        self.mirror.append(bool(mirror))
        if values is not None:
            if self.values is None:
                self.values = []
            self.values.append(values.astype(np.float32))
        self.hi = max(self.hi, hi)
        self.count += int(src.size)

    @property
    def weighted(self) -> bool:
        return self.values is not None

    def relabel(self, path: str, relabel: bool = True) -> tuple[int, np.ndarray | None]:
        """Number the nodes: with `relabel`, the ids that occur onto ``0..n-1`` in
        increasing order (in place); otherwise ``n = hi + 1``.

        Returns
        -------
        n : int
        original : int64 (n,) of the ids before relabelling, or None where nothing changed
            (ids already ``0..n-1``, or `relabel` False)

        Raises
        ------
        FormatError
            No edges; `InputError` when ``--no-relabel`` makes a graph too large.
        """
        if self.count == 0:
            raise FormatError("no edges found (empty edge list)", path)
        if not relabel:
            n = self.hi + 1
            check_fits(  # row pointers and counts scale with n, the build with the entries
                24.0 * n + 32.0 * self.count,
                f"--no-relabel: the largest node id {n - 1} makes a graph of {n} nodes, which",
                hint="drop --no-relabel to number the nodes 0..n-1",
            )
            return n, None
        if self.hi < 8 * self.count:  # a bitmap of the ids is no larger than the edges
            present = np.zeros(self.hi + 1, dtype=bool)
            for a in (*self.src, *self.dst):
                present[a] = True
            original = np.flatnonzero(present).astype(np.int64)
            if original.size == self.hi + 1:
                return int(original.size), None
            perm = np.cumsum(present, dtype=index_dtype(original.size)) - 1
            del present
            self._map(lambda a: _relabel(a, perm))
        else:  # ids far apart: sort the distinct ones, batch by batch
            original = _distinct(self.src + self.dst)
            if original.size == self.hi + 1:
                return int(original.size), None
            self._map(lambda a: np.searchsorted(original, a).astype(a.dtype))
        n = int(original.size)
        if n < 2**31:
            self._map(lambda a: a.astype(np.int32, copy=False))
        self.hi = n - 1
        return n, original

    def _map(self, fn) -> None:
        for lst in (self.src, self.dst):
            for i, a in enumerate(lst):
                lst[i] = fn(a)

    def pattern_csr(
        self, n: int, symmetrize: bool, self_loops: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """CSR of the pattern (values ignored), the options applied; consumes the blocks.

        Parameters
        ----------
        n : nodes (ids in ``[0, n)``)
        symmetrize : store every entry in both directions
        self_loops : "keep" (the diagonal entries read), "drop" or "add" (every node)

        Returns
        -------
        indptr : int64 (n + 1,)
        indices : (nnz,) of `index_dtype(n)`, rows sorted without repeats (a view of the
            front of the scattered entries)
        """
        from gcntrain.kernels.edges import edge_degrees, edge_scatter, sort_dedup_rows

        loops = None
        if self_loops == "add":
            loops = np.ones(n, dtype=bool)
        elif self_loops == "keep":
            loops = np.zeros(n, dtype=bool)
            for s, d in zip(self.src, self.dst, strict=True):
                loops[s[s == d]] = True
        indptr = np.zeros(n + 1, dtype=np.int64)
        for s, d, m in zip(self.src, self.dst, self.mirror, strict=True):
            edge_degrees(s, d, symmetrize or m, indptr[1:])
        if loops is not None:
            indptr[1:] += loops
        np.cumsum(indptr, out=indptr)
        indices = np.empty(int(indptr[n]), dtype=index_dtype(n))
        cursor = indptr[:-1].copy()
        for i, m in enumerate(self.mirror):
            edge_scatter(self.src[i], self.dst[i], symmetrize or m, cursor, indices)
            self.src[i] = self.dst[i] = None  # scattered: free the block
        self.src, self.dst, self.values, self.mirror, self.count = [], [], None, [], 0
        if loops is not None:
            rows = np.flatnonzero(loops)
            indices[cursor[rows]] = rows
            del rows
        del cursor, loops
        return indptr, indices[: sort_dedup_rows(indptr, indices)]


def _relabel(a: np.ndarray, perm: np.ndarray) -> np.ndarray:
    from gcntrain.kernels.edges import relabel_inplace

    relabel_inplace(a, perm)
    return a


def _distinct(blocks: list[np.ndarray]) -> np.ndarray:
    """Sorted distinct values (int64) of a list of integer arrays, merged batch by batch."""
    done = np.empty(0, dtype=np.int64)
    pending: list[np.ndarray] = []
    size = 0
    for a in blocks:
        u = unique_ints(np.asarray(a).ravel())
        pending.append(u)
        size += u.size
        if size >= max(_UNIQUE_BATCH, done.size):
            done = unique_ints(
                np.concatenate([done, *pending]).astype(np.int64, copy=False), overwrite=True
            )
            pending, size = [], 0
    if pending:
        done = unique_ints(
            np.concatenate([done, *pending]).astype(np.int64, copy=False), overwrite=True
        )
    return done


def structure_counts(indptr: np.ndarray, indices: np.ndarray, symmetric: bool) -> dict:
    """``self_loops`` and ``undirected_edges`` (distinct pairs {u, v}, u != v) of a CSR
    pattern with rows sorted without repeats, and ``symmetric_pattern``: whether every
    off-diagonal entry has its transpose (`symmetric`: known to be so)."""
    from gcntrain.kernels.edges import csr_check, reciprocal_pairs

    bad, loops = csr_check(indptr, indices, indptr.shape[0] - 1)
    if bad >= 0:  # cannot happen for a built CSR; a guard for the kernels' contract
        raise FormatError(f"row {bad} is not sorted, repeats a column or is out of range")
    off = int(indptr[-1]) - int(loops)
    both = off // 2 if symmetric else int(reciprocal_pairs(indptr, indices))
    return {
        "self_loops": int(loops),
        "undirected_edges": off - both,
        "symmetric_pattern": off == 2 * both,
    }


def assemble_edges(
    path: str,
    chunks: EdgeChunks,
    *,
    n: int | None = None,
    relabel: bool = True,
    duplicates: str = "max",
    symmetrize: bool = False,
    self_loops: str = "keep",
) -> tuple[Graph, dict]:
    """The converters' graph of parsed edges, with the options applied.

    Parameters
    ----------
    path : the source (error messages, the graph's name comes later)
    chunks : the parsed edges (consumed)
    n : nodes when the format gives them (Matrix Market; no relabelling); else from the ids
    relabel : map the ids to ``0..n-1`` (`EdgeChunks.relabel`)
    duplicates : how values of repeated entries merge ("max": edge lists, "sum": Matrix
        Market)
    symmetrize, self_loops : as ``gcntrain convert``

    Returns
    -------
    graph : Graph
        Sorted, duplicate-free CSR; ``directed`` False exactly when the matrix is symmetric;
        ``extra["original_ids"]`` where the ids were relabelled.
    counts : dict
        ``self_loops``, ``undirected_edges`` (as `structure_counts`).
    """
    original = None
    if n is None:
        n, original = chunks.relabel(path, relabel)
    if not chunks.weighted:
        indptr, indices = chunks.pattern_csr(n, symmetrize, self_loops)
        data = None
    else:
        indptr, indices, data = weighted_csr(chunks, n, duplicates, symmetrize, self_loops)
    counts = structure_counts(indptr, indices, symmetrize)
    symmetric = symmetrize or counts.pop("symmetric_pattern")
    if symmetric and data is not None and not symmetrize:  # the values must agree too
        symmetric = values_symmetric(indptr, indices, data)
    counts.pop("symmetric_pattern", None)
    g = Graph(indptr=indptr, indices=indices, data=data, directed=not symmetric)
    if original is not None:
        g.extra["original_ids"] = original
    return g, counts
