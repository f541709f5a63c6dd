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
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from anchor_torch_epoch import median_epoch, problem  # noqa: E402


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
    x, y, mask, s, hidden, epochs = problem(argv)
    med = median_epoch(x, y, mask, s, hidden, epochs, Aggregate.apply)
    print(f"torch_strong_epoch_median_s {med:.4f} nodes {x.shape[0]} nnz {s.values().shape[0]}")


if __name__ == "__main__":
    main()
