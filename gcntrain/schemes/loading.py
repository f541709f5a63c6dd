"""Where a rank's rows come from: the embedded default, a graph file, or a row-shard store.

`make_loader(source, partition, seed)` returns ``loader(nblocks, block) -> LocalBlock``, run
by every rank under collective error agreement.  A graph file is read row-selectively
(`gcntrain.data.rows`); a shard store opens only the manifest and the rank's own shard.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from gcntrain.errors import InputError
from gcntrain.schemes.driver import LocalBlock, block_from_graph
from gcntrain.schemes.layout import renumber


def is_shard_store(path: str) -> bool:
    p = Path(path)
    return p.is_dir() or p.name == "manifest.json"


def partition_vector(spec: str, n: int, nblocks: int, seed: int, graph_hash: str) -> np.ndarray:
    """block | random | PART.h5 (checked against the graph's content hash and part count)."""
    from gcntrain.partition.basic import block_partition, random_partition

    if spec == "block":
        return block_partition(n, nblocks)
    if spec == "random":
        return random_partition(n, nblocks, seed=seed)
    from gcntrain.partition.io import read_partition

    res = read_partition(spec, graph_hash or None)
    if res.part is None:
        kind = "2D permutation" if res.row_perm is not None else "vertex-cut (edge)"
        raise InputError(
            f"{spec} holds a {res.method} {kind} partition; the 1D schemes need a "
            "vertex partition (block, random, metis, hypergraph)"
        )
    if res.parts != nblocks:
        raise InputError(
            f"{spec} has {res.parts} parts but this run needs {nblocks} row "
            f"blocks (one per rank, or ranks / replication for 1.5d)"
        )
    if res.part.shape[0] != n:
        raise InputError(f"{spec} partitions {res.part.shape[0]} nodes, the graph has {n}")
    return np.asarray(res.part, dtype=np.int64)


def _require_node_data(features, labels, train, where: str) -> None:
    missing = [
        k
        for k, v in (("node features", features), ("labels", labels), ("a train mask", train))
        if v is None
    ]
    if missing:
        raise InputError(
            f"graph has no {' and no '.join(missing)}; training needs features, "
            "labels and train/val/test masks",
            where,
        )


def _from_file(path: str, spec: str, seed: int, nblocks: int, block: int) -> LocalBlock:
    from gcntrain.data.rows import read_graph_rows
    from gcntrain.data.store import read_meta

    meta = read_meta(path)["attrs"]
    n = int(meta["n"])
    part = partition_vector(spec, n, nblocks, seed, str(meta.get("content_hash", "")))
    perm, inv, offsets = renumber(part, nblocks)
    old = perm[offsets[block] : offsets[block + 1]]
    r = read_graph_rows(path, old)
    _require_node_data(r["features"], r["labels"], r["train_mask"], path)
    M = sp.csr_matrix(
        (
            np.ones(r["indices"].size) if r["data"] is None else r["data"],
            inv[r["indices"]],
            r["indptr"],
        ),
        shape=(old.size, n),
    )
    M.sort_indices()
    masks = {k: r[f"{k}_mask"] for k in ("train", "val", "test") if r[f"{k}_mask"] is not None}
    ncls = r["num_classes"]
    return LocalBlock(
        n,
        offsets,
        block,
        M.indptr.astype(np.int64),
        M.indices.astype(np.int64),
        None if r["data"] is None else M.data.astype(np.float32),
        old,
        r["features"],
        r["labels"].astype(np.int64),
        masks,
        int(ncls if ncls is not None else max(int(r["labels"].max(initial=0)) + 1, 2)),
        r["name"],
    )


def _from_store(path: str, spec: str | None, nblocks: int, block: int) -> LocalBlock:
    from gcntrain.data.shards import open_manifest, read_row_shard

    man = open_manifest(path, check_files=False)
    if man.kind != "rows":
        raise InputError(f"store kind {man.kind!r} is not a 1D row-shard store", path)
    if spec not in (None, "block"):
        raise InputError(
            "--partition does not apply to a shard store (its partition is "
            "fixed when it is written with `gcntrain shard`)",
            path,
        )
    if man.num_parts != nblocks:
        raise InputError(
            f"store has {man.num_parts} row shards but this run needs {nblocks} "
            f"row blocks; reshard with `gcntrain shard --parts {nblocks}`",
            path,
        )
    sh = read_row_shard(man, block)
    _require_node_data(sh.features, sh.labels, sh.train_mask, path)
    offsets = np.array(
        [e["row_start"] for e in man.shards] + [man.shards[-1]["row_stop"]], dtype=np.int64
    )
    M = sp.csr_matrix(
        (np.ones(sh.nnz) if sh.data is None else sh.data, sh.indices, sh.indptr),
        shape=(sh.rows, man.n),
    )
    M.sort_indices()
    masks = {
        k: getattr(sh, f"{k}_mask")
        for k in ("train", "val", "test")
        if getattr(sh, f"{k}_mask") is not None
    }
    ncls = man.num_classes if man.num_classes is not None else sh.num_classes
    return LocalBlock(
        man.n,
        offsets,
        block,
        M.indptr.astype(np.int64),
        M.indices.astype(np.int64),
        None if sh.data is None else M.data.astype(np.float32),
        np.asarray(sh.orig_ids, dtype=np.int64),
        sh.features,
        np.asarray(sh.labels, dtype=np.int64),
        masks,
        int(ncls or 2),
        man.name,
    )


def make_loader(source, partition: str | None = None, seed: int = 0):
    """Loader for `source`: None (embedded default), a Graph, a graph file or a store."""
    spec = partition

    def loader(nblocks: int, block: int) -> LocalBlock:
        from gcntrain.data.graph import Graph

        if source is None or isinstance(source, Graph):
            if source is None:
                from gcntrain.data.generate import default_dataset

                g = default_dataset()
            else:
                g = source
            part = partition_vector(spec or "block", g.n, nblocks, seed, g.content_hash())
            _require_node_data(g.features, g.labels, g.train_mask, g.name)
            return block_from_graph(g, part, nblocks, block)
        path = os.fspath(source)
        if not os.path.exists(path):
            raise InputError("no such graph file or shard store", path)
        if is_shard_store(path):
            return _from_store(path, spec, nblocks, block)
        return _from_file(path, spec or "block", seed, nblocks, block)

    return loader
