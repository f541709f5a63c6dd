"""Whole-graph sources (an in-memory `Graph`: `GraphSource`; a graph file: `FileSource`) and
`open_source`, which picks the source (or shard-store source) for what a caller gives.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from gcntrain.data.validate import require_node_data
from gcntrain.errors import InputError
from gcntrain.schemes.graphs import GraphMeta, LoadRequest, LocalGraph, Numbering
from gcntrain.schemes.loading.assemble import (
    _rows_in_order,
    _rows_of,
    gather_rows,
    local_graph,
    take_rows,
)
from gcntrain.schemes.loading.numbering import whole_graph_numbering
from gcntrain.schemes.loading.stores import (
    BlockStoreSource,
    EdgeStoreSource,
    RowStoreSource,
    _StoreSource,
)

DEFAULT_SOURCE = "<embedded default dataset>"


def is_shard_store(path: str) -> bool:
    p = Path(path)
    return p.is_dir() or p.name == "manifest.json"


class GraphSource:
    """An in-memory graph (the embedded default dataset, or a `Graph` given by a caller)."""

    kind = "graph"

    def __init__(self, graph, label: str):
        self.graph = graph
        self.label = label
        self._meta: GraphMeta | None = None

    def meta(self) -> GraphMeta:
        """The graph's `GraphMeta` (its content hash computed once per source: the graph is
        not to change under a source that plans or loads it)."""
        if self._meta is None:
            g = self.graph
            self._meta = GraphMeta(
                g.n, g.nnz, g.num_features, g.num_classes, g.name, g.content_hash()
            )
        return self._meta

    def numbering(self, parts: int, spec: str | None, seed: int, col_parts=None) -> Numbering:
        return whole_graph_numbering(self, parts, spec, seed)

    def whole(self, numbering: Numbering):
        """(the whole graph in its original numbering, `numbering` with perm/inv) for plans."""
        return self.graph, numbering

    def load(self, req: LoadRequest, numbering: Numbering) -> LocalGraph:
        return self.load_rows(req, numbering)

    def load_rows(self, req: LoadRequest, numbering: Numbering, share: bool = False):
        """`load`; with `share` the node data of a whole request in its own order are the
        graph's arrays themselves (not copied: a graph read for this load only)."""
        g = self.graph
        if req.whole:
            from gcntrain.model.run import check_trainable

            check_trainable(g, self.label)
        old, ids_new = _rows_of(req, numbering)
        same = req.whole and ids_new is None and _is_identity(old, g.n)
        if same:  # every row in its own place: the graph's arrays as they are (not copied)
            ip, ix, dv = g.indptr, g.indices, g.data
        else:
            ip, ix, dv = gather_rows(g.indptr, g.indices, g.data, old, numbering.inv)
        masks = {
            k: take_rows(_mask(getattr(g, f"{k}_mask")), old, share)
            for k in ("train", "val", "test")
        }
        labels = None if g.labels is None else np.asarray(g.labels, dtype=np.int64)
        return local_graph(
            n=g.n,
            nnz=g.nnz,
            name=g.name,
            num_classes=g.num_classes,
            num_features=g.num_features,
            req=req,
            orig_ids=old,
            indptr=ip,
            cols_new=ix,
            data=dv,
            features=take_rows(g.features, old, share),
            labels=take_rows(labels, old, share),
            masks=masks,
            where=self.label,
            ids_new=ids_new,
            keep_index_dtype=same,
        )


def _is_identity(old: np.ndarray, n: int) -> bool:
    """Whether `old` lists 0 .. n-1 in order (the whole graph in its own numbering)."""
    return old.shape[0] == n and bool(np.array_equal(old, np.arange(n, dtype=old.dtype)))


def _relabelled(indices: np.ndarray, inv: np.ndarray) -> np.ndarray:
    """``inv[indices]``: original column ids to new ones; the ids as they are when the
    numbering keeps every id (a block partition), without a gather."""
    if _is_identity(inv, inv.shape[0]):
        return indices
    return inv[indices]


def _mask(a):
    return None if a is None else np.asarray(a, dtype=bool)


class FileSource:
    """A single-file graph store."""

    kind = "file"

    def __init__(self, path: str):
        self.path = path
        self.label = path
        self._meta: GraphMeta | None = None

    def meta(self) -> GraphMeta:
        if self._meta is None:
            self._meta = self._read_meta()
        return self._meta

    def _read_meta(self) -> GraphMeta:
        from gcntrain.data.store import read_meta

        m = read_meta(self.path)
        a, ds = m["attrs"], m["datasets"]
        nc = int(a.get("num_classes", -1))
        nf = (
            int(a["num_features"])
            if "num_features" in a
            else (int(ds["features"]["shape"][1]) if "features" in ds else 0)
        )
        return GraphMeta(
            int(a["n"]),
            int(a.get("nnz", ds.get("indices", {"shape": [0]})["shape"][0])),
            nf,
            None if nc < 0 else nc,
            str(a.get("name", Path(self.path).stem)),
            str(a.get("content_hash", "")),
        )

    def numbering(self, parts: int, spec: str | None, seed: int, col_parts=None) -> Numbering:
        return whole_graph_numbering(self, parts, spec, seed)

    def whole(self, numbering: Numbering):
        from gcntrain.data.store import read_graph

        return read_graph(self.path), numbering

    def verify(self) -> None:
        """The check a row-selective read cannot make: the content hash of the whole file,
        streamed slice by slice (`verify_content_hash`: one slice in memory, not the graph);
        each rank's read validates the structure and node data of its own rows."""
        from gcntrain.data.store import verify_content_hash

        verify_content_hash(self.path)

    def load(self, req: LoadRequest, numbering: Numbering) -> LocalGraph:
        if req.whole:
            from gcntrain.data.store import read_graph

            # the graph read here is dropped after the load: its node data are not copied
            return GraphSource(read_graph(self.path), self.path).load_rows(req, numbering, True)
        from gcntrain.data.rows import read_graph_rows

        meta = self.meta()
        old, ids_new = _rows_of(req, numbering)
        r = _rows_in_order(read_graph_rows, self.path, old)
        require_node_data(r["features"], r["labels"], r["train_mask"], self.path)
        return local_graph(
            n=r["n"],
            nnz=meta.nnz,
            name=r["name"],
            num_classes=r["num_classes"],
            num_features=meta.num_features,
            req=req,
            orig_ids=old,
            indptr=r["indptr"],
            cols_new=_relabelled(r["indices"], numbering.inv),
            data=r["data"],
            features=r["features"],
            labels=r["labels"],
            masks={k: r[f"{k}_mask"] for k in ("train", "val", "test")},
            where=self.path,
            ids_new=ids_new,
        )


def open_source(source):
    """A `Source` for None (the embedded default), a `Graph`, a graph file or a store."""
    from gcntrain.data.graph import Graph

    if isinstance(source, (GraphSource, FileSource, _StoreSource)):
        return source
    if source is None:
        from gcntrain.data.generate import default_dataset

        return GraphSource(default_dataset(), DEFAULT_SOURCE)
    if isinstance(source, Graph):
        return GraphSource(source, source.name)
    path = os.fspath(source)
    if not os.path.exists(path):
        raise InputError("no such graph file or shard store", path)
    if is_shard_store(path):
        from gcntrain.data.shards import open_manifest

        man = open_manifest(path, check_files=False)
        if man.kind == "rows":
            return RowStoreSource(path, man)
        if man.kind == "edges":
            return EdgeStoreSource(path, man)
        return BlockStoreSource(path, man)
    return FileSource(path)
