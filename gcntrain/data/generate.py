"""Synthetic graphs, deterministic by seed: R-MAT, planted partition (SBM), road-like grid.

All randomness comes from ``numpy.random.default_rng(seed)``; equal arguments give equal
graphs on every platform numpy supports.  `default_dataset` is the embedded data set that
``gcntrain train`` uses when no graph is given.
"""

from __future__ import annotations

import numpy as np

from gcntrain.data.graph import Graph
from gcntrain.data.preprocess import coo_to_csr
from gcntrain.data.preprocess import symmetrize as _symmetrize
from gcntrain.errors import InputError

#: edges generated per R-MAT batch (bounds temporary memory at large scales)
_RMAT_BATCH = 1 << 22

#: parameters of the embedded default data set (see `default_dataset`)
DEFAULT_SBM = {
    "n": 4000,
    "num_classes": 8,
    "avg_degree": 16.0,
    "homophily": 0.5,
    "num_features": 100,
    "words_per_node": 18.0,
    "feature_signal": 0.2,
    "seed": 20240601,
}


# ---------------------------------------------------------------------------------------
# shared pieces


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise InputError(msg)


def _graph_from_edges(
    src: np.ndarray, dst: np.ndarray, n: int, symmetric: bool
) -> tuple[np.ndarray, np.ndarray]:
    """CSR (indptr, indices) of the edge set, self-loops and duplicates removed."""
    keep = src != dst
    indptr, indices, _ = coo_to_csr(src[keep], dst[keep], None, n, n)
    if symmetric:
        indptr, indices, _ = _symmetrize(indptr, indices, None)
    return indptr, indices


def random_split(
    n: int, rng: np.random.Generator, fractions: tuple[float, float, float] = (0.6, 0.2, 0.2)
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Disjoint random train/val/test masks with the given fractions of the n nodes."""
    perm = rng.permutation(n)
    n_train = int(round(fractions[0] * n))
    n_val = int(round(fractions[1] * n))
    n_test = min(int(round(fractions[2] * n)), n - n_train - n_val)
    masks = []
    for lo, hi in (
        (0, n_train),
        (n_train, n_train + n_val),
        (n_train + n_val, n_train + n_val + n_test),
    ):
        m = np.zeros(n, dtype=bool)
        m[perm[lo:hi]] = True
        masks.append(m)
    return masks[0], masks[1], masks[2]


# ---------------------------------------------------------------------------------------
# R-MAT


def rmat_edges(
    scale: int, num_edges: int, a: float, b: float, c: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Draw `num_edges` R-MAT edges over ``2**scale`` vertices (int64 src, dst).

    Each of the `scale` bit levels picks a quadrant with probabilities a, b, c, d = 1-a-b-c
    (a: top-left, b: top-right, c: bottom-left), vectorised over all edges of a batch.
    """
    src = np.zeros(num_edges, dtype=np.int64)
    dst = np.zeros(num_edges, dtype=np.int64)
    ab = a + b
    a_norm = a / ab if ab > 0 else 0.0
    c_norm = c / (1.0 - ab) if ab < 1 else 0.0
    for lo in range(0, num_edges, _RMAT_BATCH):
        hi = min(num_edges, lo + _RMAT_BATCH)
        m = hi - lo
        s = np.zeros(m, dtype=np.int64)
        d = np.zeros(m, dtype=np.int64)
        for level in range(scale):
            row_bit = rng.random(m) > ab
            col_bit = rng.random(m) > np.where(row_bit, c_norm, a_norm)
            s |= row_bit.astype(np.int64) << level
            d |= col_bit.astype(np.int64) << level
        src[lo:hi] = s
        dst[lo:hi] = d
    return src, dst


def rmat(
    scale: int,
    edge_factor: int = 16,
    a: float = 0.57,
    b: float = 0.19,
    c: float = 0.19,
    seed: int = 0,
    *,
    symmetrize: bool = True,
    num_features: int = 32,
    num_classes: int = 4,
) -> Graph:
    """R-MAT (Kronecker) graph with Graph500 defaults.

    Parameters
    ----------
    scale : log2 of the number of vertices
    edge_factor : generated edges per vertex (before removing duplicates and self-loops)
    a, b, c : quadrant probabilities (d = 1 - a - b - c)
    seed : random seed
    symmetrize : make the graph undirected (A + A^T pattern)
    num_features, num_classes : sizes of the random float32 features and random labels

    Returns
    -------
    Graph
        Vertices randomly permuted (as Graph500 does), self-loops and duplicates removed,
        standard-normal features, uniform random labels, random 60/20/20 split.
    """
    _check(1 <= scale <= 40, f"scale must be in 1..40, got {scale}")
    _check(edge_factor >= 1, f"edge factor must be >= 1, got {edge_factor}")
    _check(
        min(a, b, c) >= 0 and a + b + c <= 1.0 + 1e-12,
        f"need a, b, c >= 0 and a + b + c <= 1, got {a}, {b}, {c}",
    )
    _check(num_features >= 0 and num_classes >= 1, "need features >= 0 and classes >= 1")
    rng = np.random.default_rng(seed)
    n = 1 << scale
    src, dst = rmat_edges(scale, edge_factor * n, a, b, c, rng)
    perm = rng.permutation(n)
    indptr, indices = _graph_from_edges(perm[src], perm[dst], n, symmetrize)
    features = rng.standard_normal((n, num_features), dtype=np.float32)
    labels = rng.integers(0, num_classes, n).astype(np.int64)
    train, val, test = random_split(n, rng)
    return Graph(
        indptr=indptr,
        indices=indices,
        features=features,
        labels=labels,
        train_mask=train,
        val_mask=val,
        test_mask=test,
        name=f"rmat-s{scale}-e{edge_factor}",
        directed=not symmetrize,
        num_classes=num_classes,
        extra={"generator": "rmat", "seed": seed, "a": a, "b": b, "c": c},
    )


def random_node_data(g: Graph, num_features: int, num_classes: int, seed: int = 0) -> Graph:
    """`g` with synthetic node data, for graphs that have none (SNAP edge lists): as for
    R-MAT, standard-normal float32 features, uniform random labels and a random 60/20/20
    split, all drawn from `seed`.  Such data make timing and communication studies possible;
    the accuracy they reach means nothing.

    Raises
    ------
    InputError
        If `g` already has features or labels, or the sizes are too small.
    """
    _check(
        g.features is None and g.labels is None,
        f"{g.name} already has node features or labels; synthetic node data is for graphs "
        "without them",
    )
    _check(num_features >= 1 and num_classes >= 2, "need features >= 1 and classes >= 2")
    rng = np.random.default_rng(seed)
    n = g.n
    g.features = rng.standard_normal((n, num_features), dtype=np.float32)
    g.labels = rng.integers(0, num_classes, n).astype(np.int64)
    g.train_mask, g.val_mask, g.test_mask = random_split(n, rng)
    g.num_classes = num_classes
    g.extra = {**g.extra, "node_data": "synthetic", "node_data_seed": seed}
    return g


# ---------------------------------------------------------------------------------------
# planted partition (stochastic block model)


def sbm_probabilities(
    n: int, num_classes: int, avg_degree: float, homophily: float
) -> tuple[float, float]:
    """(p_in, p_out) for equal blocks giving the expected degree and intra-class edge share.

    With block size s = n / k: ``p_in (s - 1) = h d`` and ``p_out (n - s) = (1 - h) d``.
    """
    s = n / num_classes
    p_in = homophily * avg_degree / max(s - 1, 1)
    p_out = (1 - homophily) * avg_degree / max(n - s, 1)
    return float(p_in), float(p_out)


def expected_homophily(sizes: np.ndarray, p_in: float, p_out: float) -> float:
    """Expected fraction of intra-block edges of a planted-partition graph."""
    sizes = np.asarray(sizes, dtype=np.float64)
    intra = p_in * float(np.sum(sizes * (sizes - 1) / 2))
    total_pairs = sizes.sum() * (sizes.sum() - 1) / 2
    inter = p_out * float(total_pairs - np.sum(sizes * (sizes - 1) / 2))
    return intra / (intra + inter) if intra + inter > 0 else 0.0


def _sample_pairs(
    rng: np.random.Generator, count: int, s_i: int, s_j: int, same: bool
) -> tuple[np.ndarray, np.ndarray]:
    """`count` distinct pairs (local ids) from block i x block j, uniformly, no replacement.

    For ``same`` blocks the pairs are unordered with u < v.
    """
    if count == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    key_space = s_i * (s_i - 1) // 2 if same else s_i * s_j
    keys = np.empty(0, dtype=np.int64)
    while keys.size < count:
        want = int((count - keys.size) * 1.1) + 16
        u = rng.integers(0, s_i, want)
        v = rng.integers(0, s_j, want)
        if same:
            ok = u != v
            u, v = np.minimum(u[ok], v[ok]), np.maximum(u[ok], v[ok])
        new = u * s_j + v
        keys = np.unique(np.concatenate([keys, new]))
        if keys.size >= key_space:
            break
    keys = rng.permutation(keys)[: min(count, keys.size)]
    return keys // s_j, keys % s_j


def planted_partition_edges(
    labels: np.ndarray, p_in: float, p_out: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Undirected SBM edges (each once, src < dst not guaranteed) without O(n^2) work.

    For every block pair the edge count is drawn as Binomial(pairs, p) and that many distinct
    pairs are sampled uniformly.
    """
    k = int(labels.max()) + 1 if labels.size else 0
    members = [np.flatnonzero(labels == i) for i in range(k)]
    srcs, dsts = [], []
    for i in range(k):
        for j in range(i, k):
            si, sj = members[i].size, members[j].size
            same = i == j
            pairs = si * (si - 1) // 2 if same else si * sj
            p = p_in if same else p_out
            count = int(rng.binomial(pairs, p)) if pairs > 0 and p > 0 else 0
            u, v = _sample_pairs(rng, count, si, sj if not same else si, same)
            srcs.append(members[i][u])
            dsts.append(members[j][v])
    if not srcs:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(srcs), np.concatenate(dsts)


def bag_of_words_features(
    labels: np.ndarray,
    num_classes: int,
    num_features: int,
    words_per_node: float,
    signal: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """Binary bag-of-words features whose word distribution depends weakly on the class.

    Every class has a topic: a random subset of ``num_features // num_classes`` words (subsets
    may overlap).  A node draws ``1 + Poisson(words_per_node - 1)`` words, each one from its
    class topic with probability `signal` and uniformly from all words otherwise; the feature
    row marks which words occur.
    """
    n = labels.shape[0]
    topic_size = max(1, num_features // max(num_classes, 1))
    topics = (
        np.stack([rng.choice(num_features, topic_size, replace=False) for _ in range(num_classes)])
        if num_classes
        else np.empty((0, 1), int)
    )
    counts = 1 + rng.poisson(max(words_per_node - 1.0, 0.0), n)
    node_of = np.repeat(np.arange(n), counts)
    total = node_of.size
    from_topic = rng.random(total) < signal
    words = rng.integers(0, num_features, total)
    pick = rng.integers(0, topic_size, total)
    words[from_topic] = topics[labels[node_of[from_topic]], pick[from_topic]]
    X = np.zeros((n, num_features), dtype=np.float32)
    X[node_of, words] = 1.0
    return X


def planetoid_style_split(
    labels: np.ndarray,
    num_classes: int,
    rng: np.random.Generator,
    per_class: int = 20,
    num_val: int = 500,
    num_test: int = 1000,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Train = `per_class` nodes of each class; then `num_val` and `num_test` random others.

    Sizes shrink for small graphs: per class at most a fifth of the class, validation and
    test each at most a third of the remaining nodes.
    """
    n = labels.shape[0]
    train = np.zeros(n, dtype=bool)
    for c in range(num_classes):
        idx = np.flatnonzero(labels == c)
        take = min(per_class, max(1, idx.size // 5)) if idx.size else 0
        train[rng.choice(idx, take, replace=False)] = True
    rest = rng.permutation(np.flatnonzero(~train))
    n_val = min(num_val, rest.size // 3)
    n_test = min(num_test, rest.size // 3)
    val = np.zeros(n, dtype=bool)
    val[rest[:n_val]] = True
    test = np.zeros(n, dtype=bool)
    test[rest[n_val : n_val + n_test]] = True
    return train, val, test


def sbm(
    n: int = 4000,
    num_classes: int = 8,
    p_in: float | None = None,
    p_out: float | None = None,
    num_features: int = 100,
    seed: int = 0,
    *,
    avg_degree: float = 16.0,
    homophily: float = 0.5,
    words_per_node: float = 18.0,
    feature_signal: float = 0.2,
    name: str | None = None,
) -> Graph:
    """Planted-partition graph with a learnable node-classification task.

    Parameters
    ----------
    n, num_classes : nodes and classes (equal-size blocks, randomly assigned; label = block)
    p_in, p_out : edge probability inside a block / between blocks; when None they follow
        from `avg_degree` and `homophily` (see `sbm_probabilities`)
    num_features : bag-of-words vocabulary size (binary features, see
        `bag_of_words_features`)
    seed : random seed
    words_per_node, feature_signal : feature density and how class-specific the words are;
        lower signal makes the features alone less informative
    name : graph name (default ``sbm-n<n>-k<classes>``)

    Returns
    -------
    Graph
        Undirected, no self-loops; train 20 nodes per class, 500 validation, 1000 test (scaled
        down for small n).
    """
    _check(n >= 2, f"n must be >= 2, got {n}")
    _check(1 <= num_classes <= n, f"classes must be in 1..n, got {num_classes}")
    _check(num_features >= 1, f"features must be >= 1, got {num_features}")
    d_in, d_out = sbm_probabilities(n, num_classes, avg_degree, homophily)
    p_in = d_in if p_in is None else p_in
    p_out = d_out if p_out is None else p_out
    _check(
        0 <= p_in <= 1 and 0 <= p_out <= 1,
        f"probabilities must be in [0, 1], got p_in={p_in}, p_out={p_out}",
    )
    _check(0 <= feature_signal <= 1, f"feature signal must be in [0, 1], got {feature_signal}")
    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n, dtype=np.int64) % num_classes)
    src, dst = planted_partition_edges(labels, p_in, p_out, rng)
    indptr, indices = _graph_from_edges(src, dst, n, symmetric=True)
    X = bag_of_words_features(
        labels, num_classes, num_features, words_per_node, feature_signal, rng
    )
    train, val, test = planetoid_style_split(labels, num_classes, rng)
    sizes = np.bincount(labels, minlength=num_classes)
    return Graph(
        indptr=indptr,
        indices=indices,
        features=X,
        labels=labels,
        train_mask=train,
        val_mask=val,
        test_mask=test,
        name=name or f"sbm-n{n}-k{num_classes}",
        directed=False,
        num_classes=num_classes,
        extra={
            "generator": "sbm",
            "seed": seed,
            "p_in": p_in,
            "p_out": p_out,
            "expected_homophily": expected_homophily(sizes, p_in, p_out),
        },
    )


def default_dataset() -> Graph:
    """The embedded default data set "sbm-default" (no download; a few thousand nodes).

    4000 nodes, 8 classes, average degree about 16, 100 binary features; see `DEFAULT_SBM`.
    """
    p = dict(DEFAULT_SBM)
    return sbm(
        n=p["n"],
        num_classes=p["num_classes"],
        num_features=p["num_features"],
        seed=p["seed"],
        avg_degree=p["avg_degree"],
        homophily=p["homophily"],
        words_per_node=p["words_per_node"],
        feature_signal=p["feature_signal"],
        name="sbm-default",
    )


# ---------------------------------------------------------------------------------------
# road-like grid


def road_grid(
    rows: int,
    cols: int,
    seed: int = 0,
    *,
    p_delete: float = 0.05,
    p_diagonal: float = 0.02,
    num_features: int = 8,
    num_classes: int = 4,
) -> Graph:
    """A 2-D road-like grid: 4-neighbour lattice, a few edges deleted, a few diagonals added.

    Node ``r * cols + c`` sits at (r, c).  Labels are vertical bands of the grid (class =
    ``c * num_classes // cols``); features are the normalised coordinates followed by
    standard-normal noise columns; random 60/20/20 split.  ``extra`` records rows and cols
    (so node i sits at ``divmod(i, cols)``).
    """
    _check(rows >= 1 and cols >= 1, f"rows and cols must be >= 1, got {rows} x {cols}")
    _check(0 <= p_delete <= 1 and 0 <= p_diagonal <= 1, "probabilities must be in [0, 1]")
    _check(num_features >= 2 and num_classes >= 1, "need features >= 2 and classes >= 1")
    rng = np.random.default_rng(seed)
    n = rows * cols
    ids = np.arange(n, dtype=np.int64).reshape(rows, cols)
    right = (ids[:, :-1].ravel(), ids[:, 1:].ravel())
    down = (ids[:-1, :].ravel(), ids[1:, :].ravel())
    src = np.concatenate([right[0], down[0]])
    dst = np.concatenate([right[1], down[1]])
    keep = rng.random(src.size) >= p_delete
    src, dst = src[keep], dst[keep]
    diag_a = (ids[:-1, :-1].ravel(), ids[1:, 1:].ravel())
    diag_b = (ids[:-1, 1:].ravel(), ids[1:, :-1].ravel())
    dsrc = np.concatenate([diag_a[0], diag_b[0]])
    ddst = np.concatenate([diag_a[1], diag_b[1]])
    add = rng.random(dsrc.size) < p_diagonal
    src = np.concatenate([src, dsrc[add]])
    dst = np.concatenate([dst, ddst[add]])
    indptr, indices = _graph_from_edges(src, dst, n, symmetric=True)
    r, c = np.divmod(np.arange(n, dtype=np.int64), cols)
    labels = (c * num_classes // cols).astype(np.int64)
    X = np.empty((n, num_features), dtype=np.float32)
    X[:, 0] = r / max(rows - 1, 1)
    X[:, 1] = c / max(cols - 1, 1)
    X[:, 2:] = rng.standard_normal((n, num_features - 2), dtype=np.float32)
    train, val, test = random_split(n, rng)
    return Graph(
        indptr=indptr,
        indices=indices,
        features=X,
        labels=labels,
        train_mask=train,
        val_mask=val,
        test_mask=test,
        name=f"grid-{rows}x{cols}",
        directed=False,
        num_classes=num_classes,
        extra={"generator": "grid", "seed": seed, "rows": rows, "cols": cols},
    )


__all__ = [
    "DEFAULT_SBM",
    "default_dataset",
    "expected_homophily",
    "planted_partition_edges",
    "rmat",
    "rmat_edges",
    "road_grid",
    "sbm",
    "sbm_probabilities",
]
