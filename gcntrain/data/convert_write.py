"""Write a converted edge list to a graph file as the generators do: every array written
slice by slice and hashed as it is written (`gcntrain.data.generators.write`), synthetic
node data (``convert --features``) drawn block by block.

The file is the one `gcntrain.data.store.write_graph` writes for the same graph (the one
`convert_source` returns, with `gcntrain.data.generate.random_node_data` where asked): the
same datasets, attributes and `content_hash`, without the int64 copy of the indices that
hashing the whole graph at once makes.
"""

from __future__ import annotations

import os
import time

import numpy as np

from gcntrain.data.generators.build import BLOCK_ROWS, random_split
from gcntrain.data.generators.write import SLICE_ENTRIES, _HashedWriter
from gcntrain.data.graph import Graph
from gcntrain.data.store import GRAPH_FORMAT, _extra_json, atomic_h5, index_dtype
from gcntrain.data.validate import FORMAT_VERSION, validate_node_data, validate_values
from gcntrain.errors import FormatError, InputError


def write_converted(
    path: str | os.PathLike,
    g: Graph,
    counts: dict,
    *,
    synthetic: tuple[int, int, int] | None = None,
    block_rows: int = BLOCK_ROWS,
    slice_entries: int = SLICE_ENTRIES,
) -> dict:
    """Write an edge list's graph (no node data of its own) to `path`.

    Parameters
    ----------
    path : path-like
        Destination (temporary name, then rename); its parent directory must exist.
    g : Graph
        The structure (`gcntrain.data.convert.convert_edges`): canonical CSR, the stored
        dtypes, no features or labels.
    counts : dict
        ``self_loops`` and ``undirected_edges`` of `g`.
    synthetic : (features, classes, seed), optional
        Draw node data as `random_node_data` does (same file), block by block.
    block_rows, slice_entries : rows of features, entries of a 1-D array written at once
        (the file does not depend on them).

    Returns
    -------
    dict
        `convert`'s summary counts (``nodes`` ... ``test``), ``content_hash`` and
        ``seconds_write``.
    """
    t0 = time.perf_counter()
    where = f"graph '{g.name}'"
    n = g.n
    if g.features is not None or g.labels is not None:
        raise ValueError("write_converted writes graphs without node data of their own")
    if g.indptr.dtype != np.int64 or g.indices.dtype != index_dtype(n):
        raise FormatError("indptr must be int64 and indices of the stored index dtype", where)
    extra = dict(g.extra)
    num_features, num_classes = 0, None
    if synthetic is not None:
        num_features, num_classes, seed = (int(v) for v in synthetic)
        if num_features < 1 or num_classes < 2:
            raise InputError("need features >= 1 and classes >= 2")
        extra.update(node_data="synthetic", node_data_seed=seed)
    sizes = [None, None, None]
    with atomic_h5(path) as f:
        w = _HashedWriter(f, slice_entries)
        w.ids("indptr", g.indptr)
        w.ids("indices", g.indices)
        if g.data is None:
            w.absent("data")
        else:
            validate_values(g.data, g.nnz, where)
            w.array("data", np.asarray(g.data, dtype=np.float32))
        if synthetic is None:
            for name in ("features", "labels", "train_mask", "val_mask", "test_mask"):
                w.absent(name)
        else:
            rng = np.random.default_rng(seed)
            step = max(int(block_rows), 1)
            blocks = (
                rng.standard_normal((min(step, n - lo), num_features), dtype=np.float32)
                for lo in range(0, n, step)
            )
            w.rows("features", n, num_features, blocks, where)
            labels = rng.integers(0, num_classes, n).astype(np.int64)
            masks = random_split(n, rng)
            names = ("train_mask", "val_mask", "test_mask")
            validate_node_data(
                n, where, labels=labels, num_classes=num_classes, **dict(zip(names, masks))
            )
            w.array("labels", labels)
            for name, m in zip(names, masks):
                w.array(name, m, stored=np.uint8)
            sizes = [int(np.count_nonzero(m)) for m in masks]
        chash = w.h.hexdigest()
        a = f.attrs
        a["format"] = GRAPH_FORMAT
        a["format_version"] = FORMAT_VERSION
        a["name"] = str(g.name)
        a["n"] = n
        a["nnz"] = g.nnz
        a["directed"] = np.uint8(g.directed)
        a["self_loops"] = int(counts["self_loops"])
        a["num_classes"] = -1 if num_classes is None else num_classes
        a["num_features"] = num_features
        a["content_hash"] = chash
        if extra:
            a["extra"] = _extra_json(extra)
    return {
        "name": str(g.name),
        "nodes": n,
        "nnz": g.nnz,
        "undirected_edges": int(counts["undirected_edges"]),
        "self_loops": int(counts["self_loops"]),
        "directed": bool(g.directed),
        "weighted": g.data is not None,
        "features": num_features,
        "classes": num_classes,
        "train": sizes[0],
        "val": sizes[1],
        "test": sizes[2],
        "content_hash": chash,
        "seconds_write": time.perf_counter() - t0,
    }
