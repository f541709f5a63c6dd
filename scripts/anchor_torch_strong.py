"""Median full-batch GCN epoch of plain PyTorch, the strong variant: the backward product of
each aggregation is the support itself times the incoming gradient.

An anchor for `scripts/bench_epoch.py` (row ``torch.strong``), run by an interpreter that has
PyTorch (not a dependency of gcntrain).  Input and model are those of `anchor_torch_epoch.py`
(the .npz of ``../shared/bench/make_bench_graph.py``; Kipf's support ``D^-1/2 (A + I) D^-1/2``
of the symmetrised graph, ``F -> hidden -> C``, ReLU, dropout 0.5 on each layer's input,
cross-entropy on the training rows, Adam at lr 0.01, one evaluation forward per epoch; the
same weight seed and the same order of random draws, so the first epoch's loss is the same).
The difference: ``torch.sparse.mm`` on a CSR operand differentiates by building the
operand's transpose on every backward call.  The support is symmetric, ``S^T = S``, so a
custom autograd function hands the gradient to the same CSR product instead: an epoch's
sparse work is products with one matrix built once, no conversion inside the loop.

    python anchor_torch_strong.py GRAPH.npz [hidden] [threads] [epochs]

Prints ``torch_strong_epoch_median_s S nodes N nnz M``.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import scipy.sparse as sp
import torch


def symmetric_support(edges: np.ndarray, n: int) -> torch.Tensor:
    """``D^-1/2 (A + I) D^-1/2`` for the undirected graph of `edges` (either direction
    stored), as a float32 torch CSR tensor; symmetric by construction."""
    ones = np.ones(len(edges), dtype=np.float32)
    adj = sp.csr_matrix((ones, (edges[:, 0], edges[:, 1])), shape=(n, n))
    adj = ((adj + adj.T) > 0).astype(np.float32).tolil()
    adj.setdiag(1.0)
    adj = adj.tocsr()
    scale = sp.diags(np.asarray(adj.sum(axis=1)).ravel() ** -0.5)
    sup = sp.csr_matrix(scale @ adj @ scale, dtype=np.float32)
    return torch.sparse_csr_tensor(
        torch.from_numpy(sup.indptr.astype(np.int64)),
        torch.from_numpy(sup.indices.astype(np.int64)),
        torch.from_numpy(sup.data),
        size=sup.shape,
    )


class Aggregate(torch.autograd.Function):
    """``S @ H`` for a symmetric CSR `S`; the gradient of `H` is ``S @ grad`` (the product
    with ``S^T``, which equals `S`), so no transpose is ever materialised."""

    @staticmethod
    def forward(ctx, sup: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        ctx.sup = sup
        return torch.sparse.mm(sup, h)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return None, torch.sparse.mm(ctx.sup, grad)


def main() -> None:
    argv = sys.argv[1:]
    if not argv or argv[0] in ("-h", "--help"):
        sys.exit(__doc__)
    hidden = int(argv[1]) if len(argv) > 1 else 16
    torch.set_num_threads(int(argv[2]) if len(argv) > 2 else 2)
    epochs = int(argv[3]) if len(argv) > 3 else 12
    data = np.load(argv[0])
    feats = torch.from_numpy(np.ascontiguousarray(data["node_features"], dtype=np.float32))
    labels = torch.from_numpy(data["node_labels"].astype(np.int64))
    train = torch.from_numpy(np.asarray(data["train_masks"][0], dtype=bool))
    n, f = feats.shape
    classes = int(labels.max()) + 1
    sup = symmetric_support(np.asarray(data["edges"]), n)

    # the weights drawn exactly as anchor_torch_epoch.py draws them
    gen = torch.Generator().manual_seed(0)
    w1 = torch.nn.Parameter(torch.empty(f, hidden).uniform_(-0.1, 0.1, generator=gen))
    w2 = torch.nn.Parameter(torch.empty(hidden, classes).uniform_(-0.1, 0.1, generator=gen))
    adam = torch.optim.Adam([w1, w2], lr=0.01)
    dropout = torch.nn.functional.dropout

    def logits(training: bool) -> torch.Tensor:
        hid = torch.relu(Aggregate.apply(sup, dropout(feats, 0.5, training) @ w1))
        return Aggregate.apply(sup, dropout(hid, 0.5, training) @ w2)

    seconds = []
    for _ in range(epochs):
        start = time.perf_counter()
        adam.zero_grad()
        loss = torch.nn.functional.cross_entropy(logits(True)[train], labels[train])
        loss.backward()
        adam.step()
        with torch.no_grad():
            logits(False)
        seconds.append(time.perf_counter() - start)
    kept = seconds[2:] if len(seconds) > 2 else seconds  # the first two warm up
    nnz = sup.values().shape[0]
    print(f"torch_strong_epoch_median_s {float(np.median(kept)):.4f} nodes {n} nnz {nnz}")


if __name__ == "__main__":
    main()
