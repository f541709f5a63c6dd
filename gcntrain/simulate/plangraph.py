"""What a plan reads of a graph: its structure and a summary of its node data.

A plan needs the adjacency (to build the support's pattern), and of the node data only the
feature width, the bytes per stored value, each node's stored feature entries (the flops of
a sparse first layer), how many of them are nonzero (whether the run stores the input as
CSR), the labels (the classes where the file does not say) and which masks exist.  A graph
file is read without its features: they are streamed a block of rows at a time and
counted (64 features are 256 bytes per node, more than the adjacency of most graphs).  The
file is validated as `read_graph` validates it (structure, node arrays, content hash,
streamed); a rows shard store is read one shard at a time, in its own numbering
(`read_store_plan_graph`); other sources (an in-memory graph, a 2D block or vertex-cut
store) are summarised from their whole graph.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import h5py
import numpy as np
import scipy.sparse as sp

from gcntrain.data.store_rows import row_ranges

#: feature values read at once from a graph file
FEATURE_BLOCK = 1 << 22
MASKS = ("train", "val", "test")


def row_blocks(indptr: np.ndarray, limit: int) -> list[tuple[int, int]]:
    """[lo, hi) row ranges of about `limit` entries each (at least one row each)."""
    return row_ranges(indptr, 0, indptr.shape[0] - 1, limit)


@dataclass
class PlanGraph:
    """A graph as a plan sees it (original numbering).

    Attributes
    ----------
    n : nodes
    indptr, indices, data : the adjacency (None once the support is built)
    num_features : feature columns (0: no features)
    itemsize : bytes per stored feature value (None without features)
    stored : (n,) int64 stored feature entries per node, or None without features
    nonzero : nonzero feature values in all
    labels : the labels or None
    masks : the masks present (of train, val, test)
    """

    n: int
    indptr: np.ndarray | None
    indices: np.ndarray | None
    data: np.ndarray | None
    num_features: int
    itemsize: int | None
    stored: np.ndarray | None
    nonzero: int
    labels: np.ndarray | None
    masks: tuple
    #: the graph file whose adjacency `blocks` reads (indices and data are then None)
    path: str | None = None
    #: a rows store's graph: the original id of every row (the graph is in the store's
    #: numbering; `own` maps a run's numbering into it), None for the original numbering
    order: np.ndarray | None = None
    #: ``reader(limit)`` yields the blocks of the adjacency (a store's shards, read a
    #: block of rows at a time) where neither the arrays nor a file `path` are held
    reader: object = None
    #: adjacency entries per block that `blocks` reads whatever it is asked for (None:
    #: as asked; `gcntrain.simulate.planmemory` sets it from --max-memory)
    block_limit: int | None = None

    def own(self, perm: np.ndarray) -> np.ndarray:
        """`perm` (``perm[new] = original id``) as rows of this graph: itself in the
        original numbering, else the store's rows of those ids."""
        if self.order is None:
            return perm
        where = np.empty_like(self.order)
        where[self.order] = np.arange(self.order.shape[0], dtype=self.order.dtype)
        return where[np.asarray(perm, dtype=np.int64)]

    def blocks(self, limit: int):
        """Yield (lo, hi, row pointers from 0, column ids, values or None) of the adjacency,
        ranges of rows of about `limit` entries (read from the file block by block and
        validated there, when the graph is a file's)."""
        indptr = np.asarray(self.indptr, dtype=np.int64)
        limit = self.block_limit or limit
        if self.reader is not None:
            yield from self.reader(limit)
            return
        if self.path is None:
            for lo, hi in row_blocks(indptr, limit):
                a, b = int(indptr[lo]), int(indptr[hi])
                data = None if self.data is None else self.data[a:b]
                yield lo, hi, indptr[lo : hi + 1] - a, self.indices[a:b], data
            return
        from gcntrain.data.store import open_h5
        from gcntrain.data.validate import validate_csr, validate_values

        where = self.path
        with open_h5(self.path, "graph file") as f:
            has_data = "data" in f
            for lo, hi in row_blocks(indptr, limit):
                a, b = int(indptr[lo]), int(indptr[hi])
                ptr = indptr[lo : hi + 1] - a
                ix = np.asarray(f["indices"][a:b])
                validate_csr(ptr, ix, self.n, where, n_rows=hi - lo)
                data = np.asarray(f["data"][a:b]) if has_data else None
                if data is not None:
                    validate_values(data, b - a, where)
                yield lo, hi, ptr, ix, data

    @property
    def has_features(self) -> bool:
        return self.stored is not None

    def drop_structure(self) -> None:
        """Forget the adjacency (the plan holds the support's pattern from here on)."""
        self.indptr = self.indices = self.data = None
        self.reader = None


def from_graph(g) -> PlanGraph:
    """The summary of an in-memory `Graph`."""
    X = g.features
    stored, nonzero, itemsize = None, 0, None
    if X is not None:
        if sp.issparse(X):
            C = sp.csr_matrix(X)
            stored = np.diff(C.indptr).astype(np.int64)
            nonzero = int(np.count_nonzero(C.data))
        else:
            stored = np.count_nonzero(X, axis=1).astype(np.int64)
            nonzero = int(stored.sum())
        itemsize = int(X.dtype.itemsize)
    return PlanGraph(
        n=g.n,
        indptr=g.indptr,
        indices=g.indices,
        data=g.data,
        num_features=int(g.num_features or 0),
        itemsize=itemsize,
        stored=stored,
        nonzero=nonzero,
        labels=g.labels,
        masks=tuple(k for k in MASKS if getattr(g, f"{k}_mask") is not None),
    )


def read_plan_graph(path) -> PlanGraph:
    """The summary of a graph file: its row pointers and node arrays; the features streamed
    (`FEATURE_BLOCK` values at a time) and counted, the column ids and values left in the
    file for `PlanGraph.blocks`.  `FormatError` as `read_graph` on a bad file (a bad
    column id or value when `blocks` reaches it)."""
    from gcntrain.data.store import (
        check_declared_sizes,
        int_attr,
        open_h5,
        read_dataset,
        read_mask,
        verify_content_hash,
    )
    from gcntrain.data.validate import (
        check_format,
        validate_csr,
        validate_features,
        validate_node_data,
    )
    from gcntrain.errors import FormatError

    where = str(path)
    verify_content_hash(path)
    with open_h5(path, "graph file") as f:
        check_format(f.attrs, "gcntrain-graph", where)
        check_declared_sizes(f, where)
        n = int_attr(f.attrs, "n", where)
        nnz = int_attr(f.attrs, "nnz", where)
        ncls = int_attr(f.attrs, "num_classes", where, default=-1)
        declared = int_attr(f.attrs, "num_features", where, default=-1)
        indptr = read_dataset(f, "indptr", where)
        for name in ("indices", "data"):
            if name in f and not isinstance(f[name], h5py.Dataset):
                raise FormatError(f"'{name}' is not a dataset", where)
        if "indices" not in f:
            raise FormatError("missing dataset 'indices'", where)
        stored_entries = int(f["indices"].shape[0]) if f["indices"].ndim == 1 else -1
        if stored_entries < 0 or ("data" in f and f["data"].shape != (stored_entries,)):
            raise FormatError("indices and data must be 1-D arrays of one length", where)
        labels = read_dataset(f, "labels", where, required=False)
        masks = {f"{k}_mask": read_mask(f, f"{k}_mask", where) for k in MASKS}
        stored, nonzero, itemsize, nf = None, 0, None, 0
        if "features" in f:
            ds = f["features"]
            if len(ds.shape) != 2 or ds.shape[0] != n:
                raise FormatError(f"features have shape {ds.shape}, expected ({n}, f)", where)
            nf = int(ds.shape[1])
            itemsize = int(ds.dtype.itemsize)
            stored = np.zeros(n, dtype=np.int64)
            step = max(FEATURE_BLOCK // max(nf, 1), 1)
            for lo in range(0, n, step):
                X = np.asarray(ds[lo : lo + step])
                validate_features(X, X.shape[0], where)
                stored[lo : lo + X.shape[0]] = np.count_nonzero(X, axis=1)
            nonzero = int(stored.sum())
    if n < 0 or nnz < 0:
        raise FormatError(f"negative n ({n}) or nnz ({nnz}) attribute", where)
    # the row pointers against the entry count (column ids: a zero-stride stand-in of the
    # stored length; `PlanGraph.blocks` checks the real ones block by block)
    ids = np.broadcast_to(np.zeros(1, dtype=np.int64), (stored_entries,))
    validate_csr(indptr, ids, max(n, 1), where, n_rows=n, nnz=nnz)
    validate_node_data(n, where, labels=labels, num_classes=None if ncls < 0 else ncls, **masks)
    if declared >= 0 and declared != nf:
        raise FormatError(
            f"attribute num_features is {declared} but features has {nf} columns", where
        )
    return PlanGraph(
        n=n,
        indptr=indptr,
        indices=None,
        data=None,
        num_features=nf,
        itemsize=itemsize,
        stored=stored,
        nonzero=nonzero,
        labels=labels,
        masks=tuple(k for k in MASKS if masks[f"{k}_mask"] is not None),
        path=where,
    )


def read_store_plan_graph(man) -> PlanGraph:
    """The summary of a rows store, in the store's numbering (`PlanGraph.order`: the
    original ids of its rows), one shard in memory at a time; `PlanGraph.blocks` reads the
    adjacency from the shard files (`gcntrain.data.store_rows`)."""
    from gcntrain.data.store_rows import row_store_blocks, row_store_summary

    s = row_store_summary(man)
    indptr = s.indptr
    return PlanGraph(
        n=man.n,
        indptr=indptr,
        indices=None,
        data=None,
        num_features=s.num_features,
        itemsize=s.itemsize,
        stored=s.stored,
        nonzero=s.nonzero,
        labels=s.labels,
        masks=s.masks,
        order=s.order,
        reader=lambda limit: row_store_blocks(man, indptr, limit),
    )


def plan_graph(src, numbering):
    """(PlanGraph, numbering with perm / inv) of a source for a plan; a rows store read a
    shard at a time (`read_store_plan_graph`), in the store's numbering."""
    if getattr(src, "held_rows", False):
        graph = read_store_plan_graph(src.man)
        src.kind = "store" if numbering.perm is None else "file"
        if numbering.perm is None:  # the store's own numbering: its rows as they are
            order = graph.order
            if order is None:  # a store in the original order
                perm, inv = np.arange(graph.n, dtype=np.int64), np.arange(graph.n, dtype=np.int64)
            else:
                perm, inv = order.copy(), np.empty_like(order)
                inv[order] = np.arange(order.shape[0], dtype=np.int64)
            numbering = replace(numbering, perm=perm, inv=inv)
        return graph, numbering
    if src.kind == "file":
        return read_plan_graph(src.path), numbering
    graph, numbering = src.whole(numbering)
    return from_graph(graph), numbering
