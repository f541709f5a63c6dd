"""Shard-store sources: a 1D row store (`RowStoreSource`), a 2D block store
(`BlockStoreSource`) and a vertex-cut store (`EdgeStoreSource`), each opening only its
manifest and the shards a rank reads.
"""

from __future__ import annotations

import numpy as np

from gcntrain.data.validate import require_node_data
from gcntrain.errors import InputError
from gcntrain.schemes.graphs import GraphMeta, LoadRequest, LocalGraph, Numbering
from gcntrain.schemes.loading.assemble import _feature_window, _own, local_graph


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

    def _shard_numbering(self, spec, parts: int, what: str, reshard: str) -> Numbering:
        """The store's own numbering (no --partition may be given), when its shards are the
        `parts` the run needs (`what`: the run's count in words; `reshard`: the command
        that makes a fitting store)."""
        _no_partition(spec, self.path)
        if self.man.num_parts != parts:
            raise InputError(
                f"store has {self.man.num_parts} {self.shard_words} but this run {what}; "
                f"reshard with `{reshard}`",
                self.path,
            )
        return Numbering(None, None, self.man.offsets)


class RowStoreSource(_StoreSource):
    """A 1D row-shard store (`gcntrain shard --parts B`): its partition is the numbering."""

    shard_words = "row shards"

    def numbering(self, parts: int, spec: str | None, seed: int, col_parts=None) -> Numbering:
        reshard = f"gcntrain shard --parts {parts}"
        return self._shard_numbering(spec, parts, f"needs {parts} row blocks", reshard)

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

    shard_words = "vertex-cut shards"

    def numbering(self, parts: int, spec: str | None, seed: int, col_parts=None) -> Numbering:
        reshard = f"gcntrain shard -m libra --parts {parts}"
        return self._shard_numbering(spec, parts, f"has {parts} ranks", reshard)

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
