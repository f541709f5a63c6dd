"""Synthetic graphs, deterministic by seed: R-MAT, planted partition (SBM), road-like grid.

All randomness comes from ``numpy.random.default_rng(seed)``; equal arguments give equal
graphs on every platform numpy supports.  `default_dataset` is the embedded data set that
``gcntrain train`` uses when no graph is given.

Each generator has two faces: ``rmat``/``sbm``/``road_grid`` return a `Graph` in memory;
``rmat_generated``/``sbm_generated``/``road_grid_generated`` return the same graph as a
`GeneratedGraph` (structure built, node data drawn on demand in blocks of rows), which
`gcntrain.data.generators.write.write_generated` streams into a file in bounded memory.
The structure is built by `gcntrain.data.generators.build.csr_from_edges` (R-MAT in
`gcntrain.data.generators.rmat`).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from gcntrain.data.generators.build import GeneratedGraph, csr_from_edges, random_split
from gcntrain.data.generators.rmat import RMAT_BATCH, rmat_edges, rmat_generated
from gcntrain.data.graph import Graph
from gcntrain.errors import InputError
from gcntrain.partition.unique import unique_ints

#: edges generated per R-MAT batch (part of the draw's definition; see generators.rmat)
_RMAT_BATCH = RMAT_BATCH

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


# ---------------------------------------------------------------------------------------
# R-MAT


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
    return rmat_generated(
        scale,
        edge_factor,
        a,
        b,
        c,
        seed,
        symmetrize=symmetrize,
        num_features=num_features,
        num_classes=num_classes,
    ).to_graph()


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
        keys = unique_ints(np.concatenate([keys, new]), overwrite=True)
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


def bag_of_words_draws(
    labels: np.ndarray,
    num_classes: int,
    num_features: int,
    words_per_node: float,
    signal: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray]:
    """The draws of `bag_of_words_features`: ``(counts, words)``, node i's words being the
    ``counts[i]`` entries of `words` after those of nodes 0..i-1 (int32 word ids)."""
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
    return counts, words.astype(np.int32)


def bag_of_words_blocks(
    counts: np.ndarray, words: np.ndarray, num_features: int, block_rows: int
) -> Iterator[np.ndarray]:
    """The binary feature rows of `bag_of_words_draws`, `block_rows` nodes at a time."""
    n = counts.shape[0]
    starts = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    for lo in range(0, n, block_rows):
        hi = min(n, lo + block_rows)
        X = np.zeros((hi - lo, num_features), dtype=np.float32)
        node = np.repeat(np.arange(hi - lo), counts[lo:hi])
        X[node, words[starts[lo] : starts[hi]]] = 1.0
        yield X


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
    counts, words = bag_of_words_draws(
        labels, num_classes, num_features, words_per_node, signal, rng
    )
    n = labels.shape[0]
    return next(bag_of_words_blocks(counts, words, num_features, max(n, 1)))


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
    return sbm_generated(
        n,
        num_classes,
        p_in,
        p_out,
        num_features,
        seed,
        avg_degree=avg_degree,
        homophily=homophily,
        words_per_node=words_per_node,
        feature_signal=feature_signal,
        name=name,
    ).to_graph()


def sbm_generated(
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
) -> GeneratedGraph:
    """`sbm`'s graph (same arguments, same graph) with its node data drawn on demand."""
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
    indptr, indices = csr_from_edges(src, dst, n, symmetric=True)
    del src, dst
    sizes = np.bincount(labels, minlength=num_classes)

    def draw_features(block_rows: int) -> Iterator[np.ndarray]:
        counts, words = bag_of_words_draws(
            labels, num_classes, num_features, words_per_node, feature_signal, rng
        )
        yield from bag_of_words_blocks(counts, words, num_features, block_rows)

    def draw_rest():
        return (labels, *planetoid_style_split(labels, num_classes, rng))

    return GeneratedGraph(
        indptr=indptr,
        indices=indices,
        num_features=num_features,
        draw_features=draw_features,
        draw_rest=draw_rest,
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


def _default_arguments() -> dict:
    p = dict(DEFAULT_SBM)
    return {
        "n": p["n"],
        "num_classes": p["num_classes"],
        "num_features": p["num_features"],
        "seed": p["seed"],
        "avg_degree": p["avg_degree"],
        "homophily": p["homophily"],
        "words_per_node": p["words_per_node"],
        "feature_signal": p["feature_signal"],
        "name": "sbm-default",
    }


def default_dataset() -> Graph:
    """The embedded default data set "sbm-default" (no download; a few thousand nodes).

    4000 nodes, 8 classes, average degree about 16, 100 binary features; see `DEFAULT_SBM`.
    """
    return sbm(**_default_arguments())


def default_generated() -> GeneratedGraph:
    """`default_dataset` as a `GeneratedGraph`."""
    return sbm_generated(**_default_arguments())


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
    return road_grid_generated(
        rows,
        cols,
        seed,
        p_delete=p_delete,
        p_diagonal=p_diagonal,
        num_features=num_features,
        num_classes=num_classes,
    ).to_graph()


def road_grid_generated(
    rows: int,
    cols: int,
    seed: int = 0,
    *,
    p_delete: float = 0.05,
    p_diagonal: float = 0.02,
    num_features: int = 8,
    num_classes: int = 4,
) -> GeneratedGraph:
    """`road_grid`'s graph (same arguments, same graph) with its node data drawn on demand."""
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
    del ids, right, down, keep, diag_a, diag_b, dsrc, ddst, add
    indptr, indices = csr_from_edges(src, dst, n, symmetric=True)
    del src, dst
    labels = (np.arange(n, dtype=np.int64) % cols * num_classes // cols).astype(np.int64)

    def draw_features(block_rows: int) -> Iterator[np.ndarray]:
        for lo in range(0, n, block_rows):
            hi = min(n, lo + block_rows)
            r, c = np.divmod(np.arange(lo, hi, dtype=np.int64), cols)
            X = np.empty((hi - lo, num_features), dtype=np.float32)
            X[:, 0] = r / max(rows - 1, 1)
            X[:, 1] = c / max(cols - 1, 1)
            X[:, 2:] = rng.standard_normal((hi - lo, num_features - 2), dtype=np.float32)
            yield X

    def draw_rest():
        return (labels, *random_split(n, rng))

    return GeneratedGraph(
        indptr=indptr,
        indices=indices,
        num_features=num_features,
        draw_features=draw_features,
        draw_rest=draw_rest,
        name=f"grid-{rows}x{cols}",
        directed=False,
        num_classes=num_classes,
        extra={"generator": "grid", "seed": seed, "rows": rows, "cols": cols},
    )


__all__ = [
    "DEFAULT_SBM",
    "GeneratedGraph",
    "default_dataset",
    "default_generated",
    "expected_homophily",
    "planted_partition_edges",
    "random_split",
    "rmat",
    "rmat_edges",
    "rmat_generated",
    "road_grid",
    "road_grid_generated",
    "sbm",
    "sbm_generated",
    "sbm_probabilities",
]
