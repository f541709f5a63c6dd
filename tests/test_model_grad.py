"""Model building blocks: support matrices, dropout masks, and finite-difference gradient
checks (float64, central differences) of every layer type, the loss, weight decay and a
3-layer network end to end."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from gcntrain.data.graph import Graph
from gcntrain.kernels.dropout import (
    dropout_apply_csr_rows,
    dropout_apply_rows,
    dropout_hash_rows,
    dropout_mask_rows,
)
from gcntrain.model.layers import GCNLayer, SAGEMeanLayer, choose_order
from gcntrain.model.loss import (
    add_weight_decay_grads,
    mean_xent,
    softmax_xent_sums,
    weight_decay_value,
)
from gcntrain.model.network import build_network
from gcntrain.model.normalize import degrees, support_matrix, support_rows
from gcntrain.model.ops import SerialOps
from gcntrain.model.phase import Phase

EPS = 1e-6
TOL = 1e-5


# --------------------------------------------------------------------------------- helpers
def random_graph(
    n: int = 14,
    p: float = 0.3,
    seed: int = 0,
    loops: int = 2,
    weighted: bool = False,
    directed: bool = False,
) -> Graph:
    """Small random graph with a few self-loops and one isolated node (the last)."""
    rng = np.random.default_rng(seed)
    A = (rng.random((n, n)) < p).astype(np.float64)
    np.fill_diagonal(A, 0)
    if not directed:
        A = np.triu(A, 1)
        A = A + A.T
    A[n - 1, :] = 0
    A[:, n - 1] = 0
    for i in range(loops):
        A[i, i] = 1.0
    if weighted:
        W = rng.uniform(0.5, 2.0, (n, n))
        A = A * (W + W.T if not directed else W)
    M = sp.csr_matrix(A)
    return Graph(
        indptr=M.indptr.astype(np.int64),
        indices=M.indices.astype(np.int32),
        data=M.data.astype(np.float32) if weighted else None,
        directed=directed,
    )


def dense_adj(g: Graph) -> np.ndarray:
    return g.adjacency().toarray().astype(np.float64)


def rel_err(a: np.ndarray, b: np.ndarray) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    den = max(np.linalg.norm(a), np.linalg.norm(b), 1e-300)
    return float(np.linalg.norm(a - b) / den)


def fd_grad(f, x: np.ndarray, eps: float = EPS) -> np.ndarray:
    """Central-difference gradient of the scalar f() with respect to the array x (in place)."""
    g = np.zeros_like(x)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        i = it.multi_index
        old = x[i]
        x[i] = old + eps
        fp = f()
        x[i] = old - eps
        fm = f()
        x[i] = old
        g[i] = (fp - fm) / (2 * eps)
    return g


def network_grad_errors(
    net, ops, n: int, perturb: tuple[str, ...], embed: bool, loss_phase: Phase | None = None
) -> list[tuple[int, str, float]]:
    """``(layer, parameter, relative error)`` of each parameter's gradient of `net` (6 input
    features, 3 classes, n rows; built, not initialised) against central finite differences
    of the mean cross-entropy: inputs, labels, label-embedding rows (`embed`) and mask drawn
    with seed 8, parameters initialised with seed 11 in float64, then those named in
    `perturb` moved away from their initial values; dropout seed 2 in epoch 4; `loss_phase`
    the loss's phase (None: the epoch's)."""
    rng = np.random.default_rng(8)
    X = rng.standard_normal((n, 6))
    labels = rng.integers(0, 3, n)
    chosen = rng.random(n) < 0.4
    mask = (rng.random(n) < 0.8) & ~chosen
    net.init_params(ops, 11, np.float64)
    for lw in net.weights():  # away from the initial ones / zeros
        for k in perturb:
            if k in lw:
                lw[k] += rng.uniform(-0.3, 0.3, lw[k].shape)
    ctx = Phase("epoch", epoch=4)
    emb = (labels, chosen) if embed else None

    def total_loss() -> float:
        logits = net.forward(ops, X, seed=2, ctx=ctx, embed=emb)
        s, _, _ = softmax_xent_sums(logits, labels, mask, need_grad=False)
        return s / mask.sum()

    logits = net.forward(ops, X, seed=2, ctx=ctx, embed=emb)
    phase = ctx if loss_phase is None else loss_phase
    _, _, dlogits = mean_xent(ops, logits, labels, mask, int(mask.sum()), width=3, phase=phase)
    grads = net.backward(ops, dlogits, ctx)
    return [
        (i, k, rel_err(grads[i][k], fd_grad(total_loss, w)))
        for i, lw in enumerate(net.weights())
        for k, w in lw.items()
    ]


@pytest.fixture(scope="module")
def graph() -> Graph:
    # directed, so that every support matrix is unsymmetric and S^T bugs cannot hide
    g = random_graph(n=14, seed=1, directed=True, weighted=True)
    S = support_matrix(g, "gcn")
    assert abs(S - S.T).max() > 1e-3
    return g


# ------------------------------------------------------------------------ support matrices
def test_gcn_support_matches_dense_formula():
    g = random_graph(n=12, seed=2, loops=3, weighted=True)
    A = dense_adj(g)
    Ahat = A + np.eye(12)
    d = Ahat.sum(axis=1)
    expect = Ahat / np.sqrt(d)[:, None] / np.sqrt(d)[None, :]
    S = support_matrix(g, "gcn").toarray()
    np.testing.assert_allclose(S, expect, rtol=1e-12, atol=1e-15)
    # the reference adds I on top of an existing self-loop: diagonal entry a_ii + 1
    assert A[0, 0] > 0
    np.testing.assert_allclose(S[0, 0], (A[0, 0] + 1.0) / d[0], rtol=1e-12)


def test_sage_supports_match_dense_formulas():
    g = random_graph(n=12, seed=3, loops=2, weighted=True)
    A = dense_adj(g)
    np.fill_diagonal(A, 0)
    d = A.sum(axis=1)
    inv = np.where(d > 0, 1.0 / np.where(d > 0, d, 1), 0.0)
    np.testing.assert_allclose(
        support_matrix(g, "sage-mean").toarray(), A * inv[:, None], rtol=1e-12, atol=1e-15
    )
    # rows of nodes without neighbours (at least the last) are zero; the others sum to one
    sm = support_matrix(g, "sage-mean").toarray().sum(axis=1)
    assert d[-1] == 0
    np.testing.assert_allclose(sm[d > 0], 1.0, rtol=1e-12)
    assert np.all(sm[d == 0] == 0)
    expect = (A + np.eye(12)) / (d + 1.0)[:, None]
    np.testing.assert_allclose(
        support_matrix(g, "sage-gcn").toarray(), expect, rtol=1e-12, atol=1e-15
    )


@pytest.mark.parametrize("kind", ["gcn", "sage-mean", "sage-gcn"])
def test_support_rows_of_a_block_equal_rows_of_whole(kind):
    g = random_graph(n=15, seed=4, loops=3, weighted=True, directed=True)
    whole = support_matrix(g, kind).toarray()
    rows = np.array([13, 0, 7, 2, 1], dtype=np.int64)  # any subset, any order
    A = g.adjacency()[rows]
    deg_global = np.empty(g.n)
    # degrees computed block by block (as ranks would) and gathered
    for block in (np.arange(0, 6), np.arange(6, 15)):
        B = g.adjacency()[block]
        deg_global[block] = degrees(B.indptr, B.indices, B.data, kind, rows=block)
    ip, ix, dv = support_rows(A.indptr, A.indices, A.data, rows, deg_global, kind)
    got = sp.csr_matrix((dv, ix, ip), shape=(rows.size, g.n)).toarray()
    np.testing.assert_allclose(got, whole[rows], rtol=1e-13, atol=1e-15)


# ------------------------------------------------------------------------------- dropout
def _py_mix(x: int) -> int:
    m = (1 << 64) - 1
    z = (x + 0x9E3779B97F4A7C15) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    return z ^ (z >> 31)


def test_dropout_hash_matches_pure_python_splitmix():
    rows = np.array([0, 5, 123456789], dtype=np.int64)
    h = np.empty((3, 4), dtype=np.uint64)
    dropout_hash_rows(rows, 4, np.uint64(42), np.uint64(1025), h)
    for a, r in enumerate(rows):
        key = _py_mix(_py_mix(_py_mix(42) ^ 1025) ^ int(r))
        for j in range(4):
            assert int(h[a, j]) == _py_mix((key + j * 0x9E3779B97F4A7C15) & ((1 << 64) - 1))


def test_dropout_mask_of_row_subset_equals_rows_of_full_mask():
    n, f = 300, 37
    full = np.empty((n, f), dtype=bool)
    dropout_mask_rows(np.arange(n, dtype=np.int64), f, 7, 3, 0.5, full)
    sub_rows = np.random.default_rng(0).permutation(n)[:50].astype(np.int64)
    sub = np.empty((50, f), dtype=bool)
    dropout_mask_rows(sub_rows, f, 7, 3, 0.5, sub)
    np.testing.assert_array_equal(sub, full[sub_rows])
    other = np.empty((n, f), dtype=bool)
    dropout_mask_rows(np.arange(n, dtype=np.int64), f, 7, 4, 0.5, other)
    assert (other != full).mean() > 0.4  # another stream: an unrelated mask


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_dropout_keep_rate_within_tolerance(p):
    n, f = 400, 250
    mask = np.empty((n, f), dtype=bool)
    dropout_mask_rows(np.arange(n, dtype=np.int64), f, 123, 0, p, mask)
    m = n * f
    sd = np.sqrt(p * (1 - p) / m)
    assert abs(mask.mean() - (1 - p)) < 5 * sd
    # no column or row structure: per-column keep rates spread like binomials
    col = mask.mean(axis=0)
    assert abs(col.std() - np.sqrt(p * (1 - p) / n)) < 0.3 * np.sqrt(p * (1 - p) / n)


def test_dropout_apply_dense_and_csr_use_the_mask():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 9))
    X[rng.random(X.shape) < 0.6] = 0.0
    rows = np.arange(100, 140, dtype=np.int64)
    mask = np.empty(X.shape, dtype=bool)
    dropout_mask_rows(rows, 9, 5, 6, 0.3, mask)
    out = dropout_apply_rows(X, rows, 5, 6, 0.3, np.empty_like(X))
    np.testing.assert_allclose(out, X * mask / 0.7, rtol=1e-15)
    C = sp.csr_matrix(X)
    od = dropout_apply_csr_rows(C.indptr, C.indices, C.data, rows, 5, 6, 0.3, np.empty_like(C.data))
    np.testing.assert_allclose(
        sp.csr_matrix((od, C.indices, C.indptr), shape=X.shape).toarray(),
        X * mask / 0.7,
        rtol=1e-15,
    )


# -------------------------------------------------------------------------- layer grads
def check_layer(
    layer, ops: SerialOps, n: int, f_in: int, key=None, sparse_input=False, seed: int = 0
) -> None:
    rng = np.random.default_rng(seed)
    layer.init_params(ops, rng, np.float64)
    if layer.bias:
        layer.params["b"][:] = rng.standard_normal(layer.f_out)
    H = rng.standard_normal((n, f_in))
    if sparse_input:
        H[rng.random(H.shape) < 0.5] = 0.0
    R = rng.standard_normal((n, layer.f_out))

    def inp():
        return sp.csr_matrix(H) if sparse_input else H

    def objective() -> float:
        return float(np.sum(layer.forward(ops, inp(), key) * R))

    layer.forward(ops, inp(), key)
    dH, grads = layer.backward(ops, R, need_input_grad=not sparse_input)
    for name, w in layer.params.items():
        err = rel_err(grads[name], fd_grad(objective, w))
        assert err < TOL, f"{layer.kind} {layer.order} d{name}: rel err {err:.2e}"
    if not sparse_input:
        err = rel_err(dH, fd_grad(objective, H))
        assert err < TOL, f"{layer.kind} {layer.order} dH: rel err {err:.2e}"


@pytest.mark.parametrize("order", ["mm_first", "agg_first"])
@pytest.mark.parametrize("key", [None, (9, 1025)])
def test_gcn_layer_gradients(graph, order, key):
    ops = SerialOps(support_matrix(graph, "gcn"))
    layer = GCNLayer(1, 5, 3, dropout=0.4, order=order)
    check_layer(layer, ops, graph.n, 5, key=key)


def test_auto_order_aggregates_at_the_smaller_width():
    assert choose_order(100, 16) == "mm_first"
    assert choose_order(16, 100) == "agg_first"
    assert GCNLayer(0, 8, 3).order == "mm_first"
    assert SAGEMeanLayer(0, 3, 8).order == "agg_first"


@pytest.mark.parametrize("order", ["mm_first", "agg_first"])
@pytest.mark.parametrize("bias", [False, True])
def test_sage_mean_layer_gradients(graph, order, bias):
    ops = SerialOps(support_matrix(graph, "sage-mean"))
    layer = SAGEMeanLayer(1, 4, 3, dropout=0.3, bias=bias, order=order)
    check_layer(layer, ops, graph.n, 4, key=(3, 7), seed=1)


@pytest.mark.parametrize("order", ["mm_first", "agg_first"])
def test_sage_gcn_aggregator_gradients(graph, order):
    ops = SerialOps(support_matrix(graph, "sage-gcn"))
    layer = GCNLayer(1, 4, 6, dropout=0.2, bias=True, order=order)
    check_layer(layer, ops, graph.n, 4, key=(3, 8), seed=2)


@pytest.mark.parametrize("cls,kind", [(GCNLayer, "gcn"), (SAGEMeanLayer, "sage-mean")])
@pytest.mark.parametrize("order", ["mm_first", "agg_first"])
def test_sparse_input_first_layer(graph, cls, kind, order):
    """A CSR first-layer input gives the dense input's output and weight gradients."""
    ops = SerialOps(support_matrix(graph, kind))
    layer = cls(0, 6, 3, dropout=0.5, order=order)
    check_layer(layer, ops, graph.n, 6, key=(1, 0), sparse_input=True, seed=3)
    rng = np.random.default_rng(4)
    H = rng.standard_normal((graph.n, 6))
    H[rng.random(H.shape) < 0.5] = 0.0
    R = rng.standard_normal((graph.n, 3))
    Zd = layer.forward(ops, H, (1, 0))
    _, gd = layer.backward(ops, R, need_input_grad=False)
    Zs = layer.forward(ops, sp.csr_matrix(H), (1, 0))
    _, gs = layer.backward(ops, R, need_input_grad=False)
    np.testing.assert_allclose(Zs, Zd, rtol=1e-12, atol=1e-14)
    for k in gd:
        np.testing.assert_allclose(gs[k], gd[k], rtol=1e-12, atol=1e-14)


# --------------------------------------------------------------------- loss, weight decay
def test_softmax_xent_value_and_gradient():
    rng = np.random.default_rng(5)
    logits = rng.standard_normal((20, 4)) * 3
    logits[0] += 1000.0  # numerically stable for huge logits
    labels = rng.integers(0, 4, 20)
    labels[3] = -1  # unlabeled rows never count
    mask = rng.random(20) < 0.6
    mask[[0, 3]] = True
    eff = mask & (labels >= 0)
    ops = SerialOps(sp.identity(20, format="csr"))
    loss, acc, grad = mean_xent(
        ops, logits, labels, eff, int(eff.sum()), width=4, phase=Phase("loss")
    )
    # independent value: log-sum-exp via numpy's logaddexp.reduce
    lse = np.logaddexp.reduce(logits, axis=1)
    expect = np.mean((lse - logits[np.arange(20), labels.clip(0)])[eff])
    assert abs(loss - expect) < 1e-12 * max(1.0, abs(expect))
    assert acc == pytest.approx(np.mean(np.argmax(logits, 1)[eff] == labels[eff]))

    def f() -> float:
        return softmax_xent_sums(logits, labels, eff, need_grad=False)[0] / eff.sum()

    fd = fd_grad(f, logits)
    assert rel_err(grad, fd) < TOL
    assert np.all(grad[~eff] == 0)


def test_weight_decay_value_and_gradient():
    rng = np.random.default_rng(6)
    weights = [
        {"W": rng.standard_normal((4, 3))},
        {
            "W_self": rng.standard_normal((3, 2)),
            "W_neigh": rng.standard_normal((3, 2)),
            "b": rng.standard_normal(2),
        },
    ]
    decay = 5e-4
    assert weight_decay_value(weights, decay) == pytest.approx(
        decay * 0.5 * np.sum(weights[0]["W"] ** 2), rel=1e-14
    )
    for all_layers in (False, True):
        grads = [{k: np.zeros_like(v) for k, v in lw.items()} for lw in weights]
        add_weight_decay_grads(grads, weights, decay, all_layers)
        for lw, lg in zip(weights, grads):
            for k, w in lw.items():
                fd = fd_grad(lambda a=all_layers: weight_decay_value(weights, decay, a), w)
                if np.any(fd):
                    assert rel_err(lg[k], fd) < TOL
                else:
                    assert not np.any(lg[k])
    # bias is never decayed; the second layer only with all_layers
    grads = [{k: np.zeros_like(v) for k, v in lw.items()} for lw in weights]
    add_weight_decay_grads(grads, weights, decay, all_layers=True)
    assert not np.any(grads[1]["b"]) and np.any(grads[1]["W_neigh"])


# ------------------------------------------------------------------ 3-layer, end to end
@pytest.mark.parametrize(
    "model,agg,kind",
    [("gcn", "mean", "gcn"), ("sage", "mean", "sage-mean"), ("sage", "gcn", "sage-gcn")],
)
def test_three_layer_network_gradients(graph, model, agg, kind):
    n = graph.n
    rng = np.random.default_rng(7)
    X = rng.standard_normal((n, 6))
    labels = rng.integers(0, 3, n)
    mask = rng.random(n) < 0.7
    ops = SerialOps(support_matrix(graph, kind))
    net = build_network(model, 6, [5, 4], 3, aggregator=agg, dropout=0.3)
    net.init_params(ops, 11, np.float64)
    decay = 5e-3

    def total_loss() -> float:
        logits = net.forward(ops, X, seed=2, ctx=Phase("epoch", epoch=4))
        s, _, _ = softmax_xent_sums(logits, labels, mask, need_grad=False)
        return s / mask.sum() + weight_decay_value(net.weights(), decay)

    logits = net.forward(ops, X, seed=2, ctx=Phase("epoch", epoch=4))
    _, _, dlogits = mean_xent(
        ops, logits, labels, mask, int(mask.sum()), width=3, phase=Phase("loss")
    )
    grads = net.backward(ops, dlogits, Phase("epoch", epoch=4))
    add_weight_decay_grads(grads, net.weights(), decay)
    assert [layer.order for layer in net.layers] == ["mm_first", "mm_first", "mm_first"]
    for i, lw in enumerate(net.weights()):
        for k, w in lw.items():
            err = rel_err(grads[i][k], fd_grad(total_loss, w))
            assert err < TOL, f"{model}/{agg} layer {i} d{k}: rel err {err:.2e}"


@pytest.mark.parametrize("model,agg,kind", [("gcn", "mean", "gcn"), ("sage", "mean", "sage-mean")])
@pytest.mark.parametrize("norm,embed", [("layer", False), ("none", True), ("layer", True)])
def test_layer_norm_and_label_embedding_gradients(graph, model, agg, kind, norm, embed):
    """LayerNorm before every layer (ln_g, ln_b) and the label embedding of masked label
    propagation (E): every parameter's gradient equals central finite differences."""
    ops = SerialOps(support_matrix(graph, kind))
    net = build_network(
        model,
        6,
        [5, 4],
        3,
        aggregator=agg,
        dropout=0.3,
        norm=norm,
        label_embedding=embed,
        label_scale=0.7,
    )
    errors = network_grad_errors(net, ops, graph.n, ("ln_g", "ln_b"), embed, Phase("loss"))
    names = {k for lw in net.weights() for k in lw}
    assert ({"ln_g", "ln_b"} <= names) == (norm == "layer") and ("E" in names) == embed
    for i, k, err in errors:
        assert err < TOL, f"{model} {norm} embed={embed} layer {i} d{k}: rel err {err:.2e}"
