"""NumPy ``.npz`` attributed graphs (the heterophilous-graphs layout).

Arrays: ``edges`` (m, 2) int, ``node_features`` (n, f), ``node_labels`` (n,), and optional
``train_masks``/``val_masks``/``test_masks``: 1-D (n,) masks, or 2-D with one split per row
((k, n); (n, k) is accepted too).
"""

from __future__ import annotations

import zipfile

import numpy as np

from gcntrain.data.formats.common import dataset_name, graph_from_coo, require_file
from gcntrain.data.graph import Graph
from gcntrain.errors import FormatError, InputError


def _mask(z, key: str, n: int, split: int, path: str) -> np.ndarray | None:
    if key not in z:
        return None
    m = np.asarray(z[key])
    if m.ndim == 1:
        if m.shape[0] != n:
            raise FormatError(f"{key} has length {m.shape[0]}, expected {n} nodes", path)
        return m.astype(bool)
    if m.ndim != 2:
        raise FormatError(f"{key} must be 1-D or 2-D, got shape {m.shape}", path)
    if m.shape[1] != n and m.shape[0] == n:
        m = m.T
    if m.shape[1] != n:
        raise FormatError(f"{key} has shape {m.shape}, expected (splits, {n})", path)
    if not 0 <= split < m.shape[0]:
        raise InputError(f"split {split} out of range: {key} holds {m.shape[0]} splits", path)
    return np.ascontiguousarray(m[split]).astype(bool)


def load_npz(path: str, *, split: int = 0) -> Graph:
    """Read an ``.npz`` graph with node features, labels and (multi-split) masks.

    Parameters
    ----------
    path : the ``.npz`` file
    split : which row of 2-D mask arrays to use

    Each ``edges`` row (u, v) becomes the entry (row u, column v); duplicates are merged.
    Undirected data sets that store each edge once need ``symmetrize``.

    Raises
    ------
    InputError
        Missing file or split out of range; `FormatError` for missing or mismatched arrays.
    """
    require_file(path)
    try:
        z = np.load(path, allow_pickle=False)
    except (ValueError, OSError, zipfile.BadZipFile) as e:
        raise FormatError(f"not a readable .npz file ({e})", path) from None
    with z:
        if "edges" not in z:
            raise FormatError(f"missing array 'edges' (has: {', '.join(z.files)})", path)
        edges = np.asarray(z["edges"])
        if edges.ndim != 2 or edges.shape[1] != 2:
            if edges.ndim == 2 and edges.shape[0] == 2:
                edges = edges.T
            else:
                raise FormatError(f"edges must have shape (m, 2), got {edges.shape}", path)
        if not np.issubdtype(edges.dtype, np.integer):
            raise FormatError(f"edges must be integers, got {edges.dtype}", path)
        features = labels = None
        n = None
        if "node_features" in z:
            features = np.ascontiguousarray(z["node_features"], dtype=np.float32)
            if features.ndim != 2:
                raise FormatError(f"node_features must be 2-D, got {features.shape}", path)
            n = features.shape[0]
        if "node_labels" in z:
            labels = np.asarray(z["node_labels"])
            if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
                raise FormatError("node_labels must be a 1-D integer array", path)
            labels = labels.astype(np.int64)
            if n is not None and labels.shape[0] != n:
                raise FormatError(
                    f"node_labels has {labels.shape[0]} rows but node_features has {n}", path
                )
            n = labels.shape[0]
        hi = int(edges.max()) + 1 if edges.size else 0
        if edges.size and int(edges.min()) < 0:
            raise FormatError("negative node id in edges", path)
        if n is None:
            n = hi
        elif hi > n:
            raise FormatError(f"edges use node id {hi - 1} but there are {n} nodes", path)
        masks = {k: _mask(z, f"{k}_masks", n, split, path) for k in ("train", "val", "test")}
    u = edges[:, 0].astype(np.int64)
    v = edges[:, 1].astype(np.int64)
    g = graph_from_coo(
        u,
        v,
        None,
        n,
        name=dataset_name(path),
        features=features,
        labels=labels,
        train_mask=masks["train"],
        val_mask=masks["val"],
        test_mask=masks["test"],
    )
    g.extra["split"] = split
    return g
