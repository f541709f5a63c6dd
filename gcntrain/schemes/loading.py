"""Where a rank's data come from: the embedded default, a Graph, a graph file, or a store.

`open_source(source)` returns a `Source` with three methods, run on every rank under
collective error agreement:

* ``meta()`` -> `GraphMeta` (read without loading arrays);
* ``numbering(parts, spec, seed, col_parts)`` -> `Numbering`: the partition `spec`
  (block | random | PART.h5) renumbered part by part, or the store's own;
* ``load(request, numbering)`` -> `LocalGraph`: the rows, adjacency columns and feature
  columns of a `LoadRequest`.  A graph file is read row-selectively
  (`gcntrain.data.rows`), or whole with full validation (content hash included) when the
  request is the whole graph; a row store opens only the manifest and the rank's shard; a 2D
  block store only the manifest, the rank's block and its block row's node file.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from gcntrain.data.validate import require_node_data
from gcntrain.errors import InputError
from gcntrain.partition.csr import keep_entries
from gcntrain.schemes.layout import renumber
from gcntrain.schemes.protocol import GraphMeta, LoadRequest, LocalGraph, Numbering

DEFAULT_SOURCE = "<embedded default dataset>"


def is_shard_store(path: str) -> bool:
    p = Path(path)
    return p.is_dir() or p.name == "manifest.json"


#: vertex partitioners run at start-up by ``--partition NAME`` (every rank computes the same
#: parts: METIS with its seed, Mt-KaHyPar with its deterministic preset)
STARTUP_METHODS = ("metis", "hypergraph")


def partition_vector(
    spec, n: int, nblocks: int, seed: int, graph_hash: str, structure=None
) -> np.ndarray:
    """block | random | metis | hypergraph | PART.h5 (checked against the graph's content
    hash and part count), or a partition vector given as an array (library callers, tests).
    metis and hypergraph partition the graph at start-up: `structure()` returns its
    (indptr, indices)."""
    from gcntrain.partition.basic import block_partition, random_partition

    if isinstance(spec, np.ndarray):
        part = np.asarray(spec, dtype=np.int64)
        if part.shape != (n,) or (n and (part.min() < 0 or part.max() >= nblocks)):
            raise InputError(f"a partition vector must have {n} entries in 0..{nblocks - 1}")
        return part
    if spec == "block":
        return block_partition(n, nblocks)
    if spec == "random":
        return random_partition(n, nblocks, seed=seed)
    if spec in STARTUP_METHODS:
        if structure is None:
            raise InputError(
                f"--partition {spec} is computed at start-up from a graph file; write a "
                f"partition file with `gcntrain partition -m {spec}` for this source"
            )
        from gcntrain.partition.methods import run_method

        indptr, indices = structure()
        opts = {"preset": "deterministic"} if spec == "hypergraph" else None
        res = run_method(spec, indptr, indices, nblocks, seed=seed, hg_options=opts)
        return np.asarray(res.part, dtype=np.int64)
    if not os.path.exists(spec):
        raise InputError(
            "--partition must be block, random, metis, hypergraph or a partition file; "
            f"no such file: {spec}"
        )
    from gcntrain.partition.io import read_partition

    res = read_partition(spec, graph_hash or None)
    if res.part is None:
        kind = "2D permutation" if res.row_perm is not None else "vertex-cut (edge)"
        raise InputError(
            f"{spec} holds a {res.method} {kind} partition; this scheme needs a "
            "vertex partition (block, random, metis, hypergraph)"
        )
    if res.parts != nblocks:
        raise InputError(
            f"{spec} has {res.parts} parts but this run needs {nblocks} row "
            f"blocks (the scheme's row parts for this number of ranks)"
        )
    if res.part.shape[0] != n:
        raise InputError(f"{spec} partitions {res.part.shape[0]} nodes, the graph has {n}")
    return np.asarray(res.part, dtype=np.int64)


def _spec(spec):
    return "block" if spec is None else spec


def numbering_of(
    spec: str, n: int, parts: int, seed: int, graph_hash: str, structure=None
) -> Numbering:
    part = partition_vector(spec, n, parts, seed, graph_hash, structure)
    perm, inv, offsets = renumber(part, parts)
    return Numbering(perm, inv, offsets)


def whole_graph_numbering(source, parts: int, spec: str | None, seed: int) -> Numbering:
    """`numbering_of` a source that holds the whole graph (in memory or in one file): the
    partition is keyed by the content hash of its `meta()`, computed once per source."""
    meta = source.meta()
    return numbering_of(
        _spec(spec), meta.n, parts, seed, meta.content_hash, lambda: graph_structure(source)
    )


def graph_structure(source) -> tuple[np.ndarray, np.ndarray]:
    """(indptr, indices) of a graph file or in-memory graph source, original numbering."""
    if source.kind == "graph":
        g = source.graph
        return np.asarray(g.indptr, np.int64), np.asarray(g.indices, np.int64)
    from gcntrain.data.store import open_h5, read_dataset

    with open_h5(source.path, "graph file") as f:
        ip = read_dataset(f, "indptr", source.path)
        ix = read_dataset(f, "indices", source.path)
    return np.asarray(ip, np.int64), np.asarray(ix, np.int64)


def _window(indptr, indices, data, cols: tuple[int, int] | None):
    """Keep the entries whose column lies in [lo, hi) (all when `cols` is None)."""
    if cols is None:
        return indptr, indices, data
    return keep_entries(indptr, indices, data, (indices >= cols[0]) & (indices < cols[1]))


def _feature_window(X, cols: tuple[int, int] | None):
    if X is None or cols is None:
        return X
    return X[:, cols[0] : cols[1]]


def _own(a):
    """`a` in its own buffer: a window (view) of the rows read must not keep them all."""
    return a.copy() if isinstance(a, np.ndarray) and a.base is not None else a


def local_graph(
    *,
    n: int,
    nnz: int,
    name: str,
    num_classes: int | None,
    num_features: int,
    req: LoadRequest,
    orig_ids: np.ndarray,
    indptr: np.ndarray,
    cols_new: np.ndarray,
    data: np.ndarray | None,
    features,
    labels: np.ndarray,
    masks: dict,
    where: str,
    ids_new: np.ndarray | None = None,
) -> LocalGraph:
    """Assemble a `LocalGraph`: sort each row's columns, apply the request's windows (and,
    for scattered rows `ids_new`, keep the request's `entries` only)."""
    require_node_data(features, labels, masks.get("train"), where)
    m = int(orig_ids.shape[0])
    M = sp.csr_matrix(
        (np.ones(cols_new.size) if data is None else data, cols_new, indptr), shape=(m, n)
    )
    M.sort_indices()
    ip, ix, dv = _window(
        M.indptr.astype(np.int64),
        M.indices.astype(np.int64),
        None if data is None else M.data.astype(np.float32),
        req.cols,
    )
    if ids_new is not None:
        return _scattered(
            n=n,
            nnz=nnz,
            name=name,
            num_classes=num_classes,
            num_features=num_features,
            req=req,
            orig_ids=orig_ids,
            ids_new=ids_new,
            csr=(ip, ix, dv),
            features=features,
            labels=labels,
            masks=masks,
        )
    ncls = num_classes
    if ncls is None:
        ncls = max(int(np.asarray(labels).max(initial=0)) + 1, 2)
    nodes = req.node_rows or req.rows
    if tuple(nodes) != tuple(req.rows):
        cut = slice(int(nodes[0] - req.rows[0]), int(nodes[1] - req.rows[0]))
        orig_ids, features, labels = orig_ids[cut], features[cut], np.asarray(labels)[cut]
        masks = {k: None if v is None else np.asarray(v)[cut] for k, v in masks.items()}
    return LocalGraph(
        n=n,
        nnz=nnz,
        name=name,
        num_classes=int(ncls),
        num_features=int(num_features),
        rows=(int(req.rows[0]), int(req.rows[1])),
        orig_ids=_own(np.asarray(orig_ids, dtype=np.int64)),
        indptr=ip,
        indices=ix,
        data=dv,
        features=_own(_feature_window(features, req.features)),
        labels=_own(np.asarray(labels, dtype=np.int64)),
        masks={k: _own(np.asarray(v)) for k, v in masks.items() if v is not None},
        node_rows=(int(nodes[0]), int(nodes[1])),
    )


def _scattered(
    *, n, nnz, name, num_classes, num_features, req, orig_ids, ids_new, csr, features, labels, masks
) -> LocalGraph:
    """The `LocalGraph` of scattered rows: the request's entries of them, every row's node
    data."""
    ip, ix, dv = csr
    if req.entries is not None:
        key = np.repeat(np.asarray(ids_new, np.int64), np.diff(ip)) * n + ix
        pos = np.searchsorted(req.entries, key)
        pos[pos >= req.entries.size] = 0
        keep = req.entries.size > 0
        keep = (req.entries[pos] == key) if keep else np.zeros(key.size, dtype=bool)
        ip, ix, dv = keep_entries(ip, ix, dv, keep)
    ncls = num_classes
    if ncls is None:
        ncls = max(int(np.asarray(labels).max(initial=0)) + 1, 2)
    m = int(np.asarray(orig_ids).shape[0])
    return LocalGraph(
        n=n,
        nnz=nnz,
        name=name,
        num_classes=int(ncls),
        num_features=int(num_features),
        rows=(0, m),
        orig_ids=_own(np.asarray(orig_ids, dtype=np.int64)),
        indptr=ip,
        indices=ix,
        data=dv,
        features=_own(_feature_window(features, req.features)),
        labels=_own(np.asarray(labels, dtype=np.int64)),
        masks={k: _own(np.asarray(v)) for k, v in masks.items() if v is not None},
        node_rows=(0, m),
        ids=np.asarray(ids_new, dtype=np.int64),
    )


def _rows_of(req: LoadRequest, numbering: Numbering) -> tuple[np.ndarray, np.ndarray | None]:
    """(original ids to read, ascending for scattered rows; their new ids or None)."""
    if req.ids is None:
        lo, hi = req.rows
        return numbering.perm[lo:hi], None
    old = np.sort(numbering.perm[np.asarray(req.ids, dtype=np.int64)])
    return old, numbering.inv[old]


def _rows_in_order(read_rows, path, old: np.ndarray) -> dict:
    """`read_rows(path, ids)` (which reads ascending ids) for the ids `old` in their given
    order: a part ordered by ``--reorder`` lists its original ids out of order."""
    srt = np.argsort(old, kind="stable")
    if np.array_equal(srt, np.arange(old.shape[0])):
        return read_rows(path, old)
    r = read_rows(path, old[srt])
    pos = np.empty_like(srt)
    pos[srt] = np.arange(srt.shape[0], dtype=srt.dtype)  # row i of `old` is row pos[i] read
    ip = np.asarray(r["indptr"], np.int64)
    counts = np.diff(ip)[pos]
    starts = ip[:-1][pos]
    take = np.repeat(starts - np.concatenate(([0], np.cumsum(counts)[:-1])), counts)
    take += np.arange(int(counts.sum()), dtype=np.int64)
    out = dict(r)
    out["indptr"] = np.concatenate(([0], np.cumsum(counts))).astype(ip.dtype)
    out["indices"] = np.asarray(r["indices"])[take]
    for key in ("data", "features", "labels", "train_mask", "val_mask", "test_mask"):
        if out.get(key) is not None:
            out[key] = np.asarray(out[key])[take if key == "data" else pos]
    return out


def check_classes(local: LocalGraph) -> LocalGraph:
    """Classification needs at least two classes (same rule as the serial path)."""
    if local.num_classes < 2:
        raise InputError(f"need at least 2 classes, found {local.num_classes}", local.name)
    return local


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
        g = self.graph
        if req.whole:
            from gcntrain.model.run import check_trainable

            check_trainable(g, self.label)
        old, ids_new = _rows_of(req, numbering)
        A = g.adjacency()[old]
        masks = {
            k: None
            if getattr(g, f"{k}_mask") is None
            else np.asarray(getattr(g, f"{k}_mask"), dtype=bool)[old]
            for k in ("train", "val", "test")
        }
        return local_graph(
            n=g.n,
            nnz=g.nnz,
            name=g.name,
            num_classes=g.num_classes,
            num_features=g.num_features,
            req=req,
            orig_ids=old,
            indptr=A.indptr.astype(np.int64),
            cols_new=numbering.inv[A.indices.astype(np.int64)],
            data=None if g.data is None else A.data.astype(np.float32),
            features=None if g.features is None else g.features[old],
            labels=None if g.labels is None else np.asarray(g.labels, dtype=np.int64)[old],
            masks=masks,
            where=self.label,
            ids_new=ids_new,
        )


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

            return GraphSource(read_graph(self.path), self.path).load(req, numbering)
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
            cols_new=numbering.inv[r["indices"]],
            data=r["data"],
            features=r["features"],
            labels=r["labels"],
            masks={k: r[f"{k}_mask"] for k in ("train", "val", "test")},
            where=self.path,
            ids_new=ids_new,
        )


def _with_perm(numbering: Numbering, perm: np.ndarray, inv: np.ndarray) -> Numbering:
    return Numbering(
        np.asarray(perm, np.int64),
        np.asarray(inv, np.int64),
        numbering.offsets,
        numbering.col_offsets,
    )


def _no_partition(spec, path: str) -> None:
    if spec is not None and not (isinstance(spec, str) and spec == "block"):
        raise InputError(
            "--partition does not apply to a shard store (its partition is "
            "fixed when it is written with `gcntrain shard`)",
            path,
        )


class _StoreSource:
    """A shard store: its manifest (opened once) gives the metadata and the numbering."""

    kind = "store"
    #: whether the store is a vertex-cut (edges) store, whose shards are parts' clones
    cut_store = False

    def __init__(self, path: str, manifest):
        self.path = path
        self.label = path
        self.man = manifest

    def meta(self) -> GraphMeta:
        m = self.man
        return GraphMeta(m.n, m.nnz, m.num_features, m.num_classes, m.name, m.content_hash)


class RowStoreSource(_StoreSource):
    """A 1D row-shard store (`gcntrain shard --parts B`): its partition is the numbering."""

    def numbering(self, parts: int, spec: str | None, seed: int, col_parts=None) -> Numbering:
        man = self.man
        _no_partition(spec, self.path)
        if man.num_parts != parts:
            raise InputError(
                f"store has {man.num_parts} row shards but this run needs {parts} "
                f"row blocks; reshard with `gcntrain shard --parts {parts}`",
                self.path,
            )
        return Numbering(None, None, man.offsets)

    def whole(self, numbering: Numbering):
        from gcntrain.data.shards import assemble, read_perm

        p = read_perm(self.man)
        return assemble(self.man), _with_perm(numbering, p["perm"], p["iperm"])

    def load(self, req: LoadRequest, numbering: Numbering) -> LocalGraph:
        from gcntrain.data.shards import read_row_shard

        man = self.man
        starts = [int(e["row_start"]) for e in man.shards]
        k = starts.index(int(req.rows[0]))
        sh = read_row_shard(man, k)
        return local_graph(
            n=man.n,
            nnz=man.nnz,
            name=man.name,
            num_classes=man.num_classes if man.num_classes is not None else sh.num_classes,
            num_features=man.num_features,
            req=req,
            orig_ids=sh.orig_ids,
            indptr=sh.indptr.astype(np.int64),
            cols_new=sh.indices.astype(np.int64),
            data=sh.data,
            features=sh.features,
            labels=sh.labels,
            masks={k: getattr(sh, f"{k}_mask") for k in ("train", "val", "test")},
            where=self.path,
        )


class BlockStoreSource(_StoreSource):
    """A 2D block store (`gcntrain shard --grid RxC`) whose rows and columns share one
    numbering: its row ranges are the row parts, its column ranges the column parts."""

    def numbering(self, parts: int, spec: str | None, seed: int, col_parts=None) -> Numbering:
        man = self.man
        _no_partition(spec, self.path)
        r, c = man.grid
        if col_parts is None:
            raise InputError(
                f"store is a {r}x{c} 2D block store; this run reads row blocks "
                f"(shard with --parts instead, or read its blocks with --load-grid {r}x{c} "
                "where the scheme offers it)",
                self.path,
            )
        if (r, c) != (parts, col_parts):
            raise InputError(
                f"store has a {r}x{c} block grid but this run needs {parts}x{col_parts}; "
                f"reshard with `gcntrain shard --grid {parts}x{col_parts}`",
                self.path,
            )
        if man.row_perm != man.col_perm or (man.row_perm and not self._same_perm()):
            raise InputError(
                "store permutes rows and columns differently (--permute double); this "
                "scheme needs one numbering for both (shard with --permute none or random)",
                self.path,
            )
        rows = np.array([a for a, _ in man.row_ranges] + [man.row_ranges[-1][1]], np.int64)
        cols = np.array([a for a, _ in man.col_ranges] + [man.col_ranges[-1][1]], np.int64)
        return Numbering(None, None, rows, cols)

    def _same_perm(self) -> bool:
        from gcntrain.data.shards import read_perm

        p = read_perm(self.man)
        return bool(np.array_equal(p["row_perm"], p["col_perm"]))

    def whole(self, numbering: Numbering):
        from gcntrain.data.shards import assemble, read_perm

        p = read_perm(self.man)
        ident = np.arange(self.man.n, dtype=np.int64)
        perm, inv = p.get("row_perm", ident), p.get("row_iperm", ident)
        return assemble(self.man), _with_perm(numbering, perm, inv)

    def load(self, req: LoadRequest, numbering: Numbering) -> LocalGraph:
        from gcntrain.data.shards import read_block_nodes, read_block_shard

        man = self.man
        i = [int(a) for a, _ in man.row_ranges].index(int(req.rows[0]))
        j = [int(a) for a, _ in man.col_ranges].index(int(req.cols[0]))
        blk = read_block_shard(man, i, j)
        nodes = read_block_nodes(man, i)
        return local_graph(
            n=man.n,
            nnz=man.nnz,
            name=man.name,
            num_classes=man.num_classes,
            num_features=man.num_features,
            req=LoadRequest(req.rows, None, req.features, node_rows=req.node_rows),
            orig_ids=nodes.orig_ids,
            indptr=blk.indptr.astype(np.int64),
            cols_new=blk.indices.astype(np.int64) + blk.col_start,
            data=blk.data,
            features=nodes.features,
            labels=nodes.labels,
            masks={k: getattr(nodes, f"{k}_mask") for k in ("train", "val", "test")},
            where=self.path,
        )


class EdgeStoreSource(_StoreSource):
    """A vertex-cut store (`gcntrain shard -m libra --parts P`): one shard per rank, holding
    the rank's clones (its roots, the new ids ``offsets[p]:offsets[p+1]``, then its leaves)
    and only its own edges of them."""

    cut_store = True

    def numbering(self, parts: int, spec: str | None, seed: int, col_parts=None) -> Numbering:
        man = self.man
        _no_partition(spec, self.path)
        if man.num_parts != parts:
            raise InputError(
                f"store has {man.num_parts} vertex-cut shards but this run has {parts} "
                f"ranks; reshard with `gcntrain shard -m libra --parts {parts}`",
                self.path,
            )
        return Numbering(None, None, man.offsets)

    def whole(self, numbering: Numbering):
        """(the graph in its original entry order, the numbering with perm/inv and the cut
        `EdgeCut` rebuilt from perm.h5's `edge_part`, which follows that entry order)."""
        from gcntrain.data.shards import assemble, read_perm
        from gcntrain.partition.cut_layout import EdgeCut

        p = read_perm(self.man)
        g = assemble(self.man)
        offsets = self.man.offsets
        cut = EdgeCut.from_csr(g.indptr, g.indices, p["edge_part"], p["iperm"], offsets)
        return g, Numbering(p["perm"], p["iperm"], offsets, numbering.col_offsets, cut=cut)

    def _shard_of(self, req: LoadRequest) -> int:
        """Shard ``req.part`` (a vertex-cut store has one shard per part, in part order)."""
        k = -1 if req.part is None else int(req.part)
        if not 0 <= k < len(self.man.shards):
            raise InputError(f"no vertex-cut shard for part {req.part}", self.path)
        return k

    def load(self, req: LoadRequest, numbering: Numbering) -> LocalGraph:
        """The rank's shard as it is: rows = its clones (``rows = (0, m)``, new ids in
        `LocalGraph.ids`), its entries only (columns new ids, sorted within rows)."""
        from gcntrain.data.shards import read_edge_shard

        man = self.man
        sh = read_edge_shard(man, self._shard_of(req))
        masks = {k: getattr(sh, f"{k}_mask") for k in ("train", "val", "test")}
        require_node_data(sh.features, sh.labels, masks["train"], self.path)
        ncls = man.num_classes
        if ncls is None:
            ncls = max(int(np.asarray(sh.labels).max(initial=0)) + 1, 2)
        m = sh.clones
        return LocalGraph(
            n=man.n,
            nnz=man.nnz,
            name=man.name,
            num_classes=int(ncls),
            num_features=int(man.num_features),
            rows=(0, m),
            orig_ids=np.asarray(sh.orig_ids, dtype=np.int64),
            indptr=sh.indptr.astype(np.int64),
            indices=sh.indices.astype(np.int64),
            data=None if sh.data is None else sh.data.astype(np.float32),
            features=_own(_feature_window(sh.features, req.features)),
            labels=np.asarray(sh.labels, dtype=np.int64),
            masks={k: np.asarray(v, dtype=bool) for k, v in masks.items() if v is not None},
            node_rows=(0, m),
            ids=np.asarray(sh.ids, dtype=np.int64),
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
