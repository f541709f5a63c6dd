"""Graphs from arrays, SciPy matrices and NetworkX graphs (`gcntrain.api`'s constructors),
assembled with the converters' own functions (`gcntrain.data.formats.common.graph_from_coo`,
`gcntrain.data.convert.apply_options` for ``symmetrize`` / ``self_loops``) and checked with
the graph store's validation (`gcntrain.data.store.normalize_graph`, `validate_graph`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import scipy.sparse as sp

from gcntrain.data.graph import Graph
from gcntrain.errors import InputError

#: names of the node masks, in the order `masks` takes them as a sequence
SPLITS = ("train", "val", "test")

MaskLike = np.ndarray | Iterable[int] | None


def _index_or_mask(value: MaskLike, n: int, split: str) -> np.ndarray | None:
    """A bool mask of `n` nodes from a bool mask or an integer array of node indices."""
    if value is None:
        return None
    a = np.asarray(value)
    if a.dtype == np.bool_:
        if a.shape != (n,):
            raise InputError(f"{split} mask has shape {a.shape}, expected ({n},)")
        return a.copy()
    if a.size == 0:
        return np.zeros(n, dtype=bool)
    if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
        raise InputError(
            f"{split} must be a bool mask of {n} nodes or an array of node indices, got "
            f"{a.dtype} of shape {a.shape}"
        )
    if int(a.min()) < 0 or int(a.max()) >= n:
        bad = int(a[(a < 0) | (a >= n)][0])
        raise InputError(f"{split} index {bad} is out of range for {n} nodes")
    m = np.zeros(n, dtype=bool)
    m[a] = True
    return m


def _split_masks(
    n: int,
    masks: Mapping[str, MaskLike] | tuple | list | None,
    train: MaskLike,
    val: MaskLike,
    test: MaskLike,
) -> dict[str, np.ndarray | None]:
    given = {"train": train, "val": val, "test": test}
    if masks is not None:
        if isinstance(masks, Mapping):
            unknown = sorted(set(masks) - set(SPLITS))
            if unknown:
                raise InputError(
                    f"unknown mask name(s) {', '.join(unknown)} (known: {', '.join(SPLITS)})"
                )
            items = dict(masks)
        else:
            if len(masks) != 3:
                raise InputError(f"masks must be (train, val, test), got {len(masks)} arrays")
            items = dict(zip(SPLITS, masks))
        for k, v in items.items():
            if given[k] is not None:
                raise InputError(f"the {k} split is given twice (in masks and as {k}=)")
            given[k] = v
    return {k: _index_or_mask(v, n, k) for k, v in given.items()}


def _assemble(
    rows: np.ndarray,
    cols: np.ndarray,
    values: np.ndarray | None,
    n: int,
    *,
    features,
    labels,
    masks,
    train,
    val,
    test,
    num_classes: int | None,
    name: str,
    symmetrize: bool,
    self_loops: str,
    source: str,
) -> Graph:
    """The shared end of every constructor: CSR by the converters' functions, node data,
    the structural options, the store's dtypes and validation."""
    from gcntrain.data import preprocess
    from gcntrain.data.convert import apply_options
    from gcntrain.data.formats.common import graph_from_coo
    from gcntrain.data.store import normalize_graph, validate_graph

    if self_loops not in preprocess.SELF_LOOP_MODES:
        raise InputError(
            f"unknown self-loop mode '{self_loops}' "
            f"(known: {', '.join(preprocess.SELF_LOOP_MODES)})"
        )
    if features is not None:
        features = features.toarray() if sp.issparse(features) else np.asarray(features)
        if features.ndim == 1:
            features = features[:, None]
        if features.dtype.kind not in "biuf":
            raise InputError(f"features must be numbers, got dtype {features.dtype}")
        features = np.ascontiguousarray(features, dtype=np.float32)
    if labels is not None:
        labels = np.asarray(labels)
        if labels.dtype.kind not in "iu":
            raise InputError(f"labels must be integers (-1: unlabeled), got dtype {labels.dtype}")
        labels = labels.astype(np.int64)
    split = _split_masks(n, masks, train, val, test)
    g = graph_from_coo(
        rows,
        cols,
        values,
        n,
        name=name,
        features=features,
        labels=labels,
        train_mask=split["train"],
        val_mask=split["val"],
        test_mask=split["test"],
        num_classes=num_classes,
    )
    g = apply_options(g, symmetrize=symmetrize, self_loops=self_loops, extra={"source": source})
    g = normalize_graph(g)
    validate_graph(g, f"graph '{g.name}'")
    return g


def _values(values, m: int) -> np.ndarray | None:
    if values is None:
        return None
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if v.shape[0] != m:
        raise InputError(f"edge values have {v.shape[0]} entries for {m} edges")
    return v.astype(np.float32)


def graph_from_arrays(
    src: Iterable[int],
    dst: Iterable[int],
    num_nodes: int | None = None,
    *,
    values: Iterable[float] | None = None,
    features=None,
    labels=None,
    masks=None,
    train: MaskLike = None,
    val: MaskLike = None,
    test: MaskLike = None,
    num_classes: int | None = None,
    name: str = "graph",
    symmetrize: bool = False,
    self_loops: str = "keep",
) -> Graph:
    """A `Graph` from an edge list: edge ``k`` is the entry (row ``src[k]``, column
    ``dst[k]``), as one line of a SNAP or CSV edge list.

    Parameters
    ----------
    src, dst : integer arrays (m,)
        Node ids in ``0..num_nodes-1``; repeated pairs are merged (largest value).
    num_nodes : int, optional
        Number of nodes; default the features' or labels' rows, else the largest id + 1.
    values : float array (m,), optional
        Edge values; default none (a pattern: every entry is 1).
    features : (n, f) array or scipy sparse matrix, optional
        Node features (stored as float32).
    labels : integer array (n,), optional
        Node classes, -1 for unlabeled.
    masks : {"train": ..., "val": ..., "test": ...} or (train, val, test), optional
        The splits, each a bool mask of n nodes or an integer array of node indices.
    train, val, test : optional
        The same, one split at a time.
    num_classes : int, optional
        Default: the largest label + 1.
    name : str
        The graph's name (summaries, the HDF5 file).
    symmetrize : bool
        Replace A by the pattern of A + Aᵀ (``gcntrain convert --symmetrize``).
    self_loops : {"keep", "add", "drop"}
        Diagonal entries, as ``gcntrain convert --self-loops``.

    Returns
    -------
    Graph
        Sorted, duplicate-free CSR with the graph file's dtypes, validated.

    Raises
    ------
    InputError
        An id out of range, arrays of different lengths, a bad mask or label
        (`FormatError` from the store's checks).
    """
    rows = np.asarray(list(src) if not hasattr(src, "__len__") else src).reshape(-1)
    cols = np.asarray(list(dst) if not hasattr(dst, "__len__") else dst).reshape(-1)
    if rows.shape != cols.shape:
        raise InputError(f"src has {rows.shape[0]} entries but dst has {cols.shape[0]}")
    for a, what in ((rows, "src"), (cols, "dst")):
        if a.size and a.dtype.kind not in "iu":
            raise InputError(f"{what} must hold integer node ids, got dtype {a.dtype}")
    if num_nodes is None:
        for a in (features, labels):
            if a is not None:
                num_nodes = int(a.shape[0] if sp.issparse(a) else np.shape(a)[0])
                break
    if num_nodes is None:
        hi = max(int(rows.max(initial=-1)), int(cols.max(initial=-1)))
        num_nodes = hi + 1
    if num_nodes < 1:
        raise InputError(f"a graph needs at least one node, got num_nodes = {num_nodes}")
    return _assemble(
        rows.astype(np.int64),
        cols.astype(np.int64),
        _values(values, rows.shape[0]),
        int(num_nodes),
        features=features,
        labels=labels,
        masks=masks,
        train=train,
        val=val,
        test=test,
        num_classes=num_classes,
        name=name,
        symmetrize=symmetrize,
        self_loops=self_loops,
        source="arrays",
    )


def graph_from_scipy(
    adj,
    features=None,
    labels=None,
    masks=None,
    *,
    train: MaskLike = None,
    val: MaskLike = None,
    test: MaskLike = None,
    num_classes: int | None = None,
    name: str = "graph",
    weighted: bool = False,
    symmetrize: bool = False,
    self_loops: str = "keep",
) -> Graph:
    """A `Graph` from a square scipy sparse (or dense numpy) adjacency matrix.

    Every stored nonzero ``adj[u, v]`` is the entry (row u, column v); explicitly stored
    zeros are not edges.

    Parameters
    ----------
    adj : scipy sparse matrix or array (n, n)
    features, labels, masks, train, val, test, num_classes, name, symmetrize, self_loops
        As in `graph_from_arrays`.
    weighted : bool
        Keep the matrix values as edge values (default: the pattern, every edge 1).

    Returns
    -------
    Graph
    """
    A = sp.coo_matrix(adj)
    if A.shape[0] != A.shape[1]:
        raise InputError(f"the adjacency must be square, got shape {A.shape}")
    keep = A.data != 0
    return _assemble(
        A.row[keep].astype(np.int64),
        A.col[keep].astype(np.int64),
        _values(A.data[keep], int(keep.sum())) if weighted else None,
        int(A.shape[0]),
        features=features,
        labels=labels,
        masks=masks,
        train=train,
        val=val,
        test=test,
        num_classes=num_classes,
        name=name,
        symmetrize=symmetrize,
        self_loops=self_loops,
        source="scipy",
    )


def _node_attr(G, nodes: list, attr: str | None, what: str):
    """The values of node attribute `attr` in node order; None when no node has it."""
    if attr is None:
        return None
    data = G.nodes
    have = [attr in data[v] for v in nodes]
    if not any(have):
        return None
    if not all(have):
        missing = nodes[have.index(False)]
        raise InputError(f"node {missing!r} has no {what} attribute '{attr}' (others do)")
    return [data[v][attr] for v in nodes]


def graph_from_networkx(
    G,
    *,
    feature_attr: str | None = "x",
    label_attr: str | None = "y",
    weight_attr: str | None = None,
    masks=None,
    train: MaskLike = None,
    val: MaskLike = None,
    test: MaskLike = None,
    num_classes: int | None = None,
    name: str | None = None,
    self_loops: str = "keep",
) -> Graph:
    """A `Graph` from a networkx graph; node ``k`` is the k-th node of ``G.nodes``.

    An undirected ``G`` gives a symmetric adjacency (each edge in both directions); a
    directed one keeps its directions.

    Parameters
    ----------
    G : networkx.Graph or networkx.DiGraph (multigraphs: parallel edges merge)
    feature_attr : node attribute holding the feature vector (default ``"x"``, as
        ``torch_geometric.utils.to_networkx`` writes it); absent on every node: no features.
    label_attr : node attribute holding the class (default ``"y"``); absent: no labels.
    weight_attr : edge attribute used as the edge value (missing on an edge: 1); default
        none (the pattern).
    masks, train, val, test : the splits, as in `graph_from_arrays` (indices are positions
        in ``G.nodes``).
    num_classes, self_loops : as in `graph_from_arrays`.
    name : default ``G.name`` or ``"graph"``.

    Returns
    -------
    Graph
    """
    nodes = list(G.nodes)
    index = {v: i for i, v in enumerate(nodes)}
    edges = list(G.edges(data=True))
    rows = np.fromiter((index[u] for u, _, _ in edges), dtype=np.int64, count=len(edges))
    cols = np.fromiter((index[v] for _, v, _ in edges), dtype=np.int64, count=len(edges))
    values = None
    if weight_attr is not None:
        values = [float(d.get(weight_attr, 1.0)) for _, _, d in edges]
    feats = _node_attr(G, nodes, feature_attr, "feature")
    labs = _node_attr(G, nodes, label_attr, "label")
    return _assemble(
        rows,
        cols,
        _values(values, len(edges)),
        len(nodes),
        features=None if feats is None else np.asarray(feats, dtype=np.float64),
        labels=None if labs is None else np.asarray(labs),
        masks=masks,
        train=train,
        val=val,
        test=test,
        num_classes=num_classes,
        name=name or getattr(G, "name", "") or "graph",
        symmetrize=not G.is_directed(),
        self_loops=self_loops,
        source="networkx",
    )
