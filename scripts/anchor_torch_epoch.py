"""Median full-batch GCN epoch of plain PyTorch with ``torch.sparse.mm`` over a CSR adjacency.

An anchor for `scripts/bench_epoch.py`, run by an interpreter that has PyTorch (not a
dependency of gcntrain).  The graph is the .npz of ``../shared/bench/make_bench_graph.py``
(``edges``, ``node_features``, ``node_labels``, ``train_masks``); the model is the one
gcntrain trains by default: Kipf's support ``D^-1/2 (A + I) D^-1/2`` of the symmetrised
graph, two layers ``F -> hidden -> C``, ReLU between, dropout 0.5 on each layer's input,
softmax cross-entropy on the training rows, Adam (lr 0.01), forward + backward + step per
epoch, then an evaluation forward pass (as gcntrain evaluates every epoch).

    python anchor_torch_epoch.py GRAPH.npz [hidden] [threads] [epochs]

Prints ``torch_sparse_epoch_median_s S nodes N nnz M``.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import torch


def support(edges: np.ndarray, n: int) -> torch.Tensor:
    """Kipf's normalised adjacency with self-loops, symmetrised, as a torch CSR tensor."""
    import scipy.sparse as sp

    a = sp.coo_matrix((np.ones(edges.shape[0]), (edges[:, 0], edges[:, 1])), shape=(n, n))
    a = ((a + a.T) > 0).astype(np.float32)
    a = a.tolil()
    a.setdiag(1.0)
    a = a.tocsr()
    d = np.asarray(a.sum(axis=1)).ravel() ** -0.5
    s = sp.diags(d) @ a @ sp.diags(d)
    s = sp.csr_matrix(s, dtype=np.float32)
    return torch.sparse_csr_tensor(
        torch.from_numpy(s.indptr.astype(np.int64)),
        torch.from_numpy(s.indices.astype(np.int64)),
        torch.from_numpy(s.data),
        size=s.shape,
    )


def problem(argv: list[str]):
    """(features, labels, training mask, support, hidden, epochs) from the anchors' arguments
    ``GRAPH.npz [hidden] [threads] [epochs]``; sets torch's threads."""
    hidden = int(argv[1]) if len(argv) > 1 else 16
    torch.set_num_threads(int(argv[2]) if len(argv) > 2 else 2)
    epochs = int(argv[3]) if len(argv) > 3 else 12
    z = np.load(argv[0])
    x = torch.from_numpy(np.ascontiguousarray(z["node_features"], dtype=np.float32))
    y = torch.from_numpy(z["node_labels"].astype(np.int64))
    mask = torch.from_numpy(np.asarray(z["train_masks"][0], dtype=bool))
    return x, y, mask, support(np.asarray(z["edges"]), x.shape[0]), hidden, epochs


def median_epoch(x, y, mask, s, hidden: int, epochs: int, aggregate) -> float:
    """Median seconds of an epoch (the first two left out as warm-up) of the model above,
    with ``aggregate(s, h)`` for each product of the support: weights seeded 0, dropout drawn
    in the same order whatever `aggregate` is."""
    c = int(y.max()) + 1
    g = torch.Generator().manual_seed(0)
    w1 = torch.nn.Parameter(torch.empty(x.shape[1], hidden).uniform_(-0.1, 0.1, generator=g))
    w2 = torch.nn.Parameter(torch.empty(hidden, c).uniform_(-0.1, 0.1, generator=g))
    opt = torch.optim.Adam([w1, w2], lr=0.01)
    drop = torch.nn.functional.dropout

    def forward(train: bool) -> torch.Tensor:
        h = torch.relu(aggregate(s, drop(x, 0.5, train) @ w1))
        return aggregate(s, drop(h, 0.5, train) @ w2)

    times = []
    for _ in range(epochs):
        t = time.perf_counter()
        opt.zero_grad()
        out = forward(True)
        loss = torch.nn.functional.cross_entropy(out[mask], y[mask])
        loss.backward()
        opt.step()
        with torch.no_grad():
            forward(False)
        times.append(time.perf_counter() - t)
    return float(np.median(times[2:])) if len(times) > 2 else float(np.median(times))


def main() -> None:
    x, y, mask, s, hidden, epochs = problem(sys.argv[1:])
    med = median_epoch(x, y, mask, s, hidden, epochs, torch.sparse.mm)
    print(f"torch_sparse_epoch_median_s {med:.4f} nodes {x.shape[0]} nnz {s.values().shape[0]}")


if __name__ == "__main__":
    main()
