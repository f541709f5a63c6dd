"""The sequence of Ops calls a model makes per epoch (its communication schedule).

The schedule is taken from the model itself: `record_schedule` runs the real trainer for a
few epochs on a tiny random graph with `RecordingOps`, which logs every call with its phase,
width and item size.  The calls depend only on the model configuration and the layer widths,
never on n or P, so the same schedule drives every scheme's plan and the simulator: the model
code stays the single source of truth for what is communicated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from gcntrain.model.ops import SerialOps


@dataclass(frozen=True)
class Call:
    """One Ops call: `op` in aggregate | aggregate_t | reduce_weight_grad | allreduce_sum |
    agree; `width` = columns (aggregations) or elements (reductions)."""

    op: str
    phase: str
    width: int
    itemsize: int


class RecordingOps(SerialOps):
    """SerialOps that logs every communicating call."""

    def __init__(self, support):
        super().__init__(support)
        self.calls: list[Call] = []

    def aggregate(self, X, phase=""):
        self.calls.append(Call("aggregate", phase, int(X.shape[1]), int(X.itemsize)))
        return super().aggregate(X, phase)

    def aggregate_t(self, X, phase=""):
        self.calls.append(Call("aggregate_t", phase, int(X.shape[1]), int(X.itemsize)))
        return super().aggregate_t(X, phase)

    def reduce_weight_grad(self, dW, phase=""):
        a = np.asarray(dW)
        self.calls.append(Call("reduce_weight_grad", phase, int(a.size), int(a.itemsize)))
        return dW

    def allreduce_sum(self, a, phase="metrics"):
        arr = np.atleast_1d(np.asarray(a))
        self.calls.append(Call("allreduce_sum", phase, int(arr.size), int(arr.itemsize)))
        return a

    def agree(self, flag):
        self.calls.append(Call("agree", "control", 1, 1))
        return bool(flag)


def record_schedule(config, num_features: int, num_classes: int, epochs: int) -> list[Call]:
    """Calls made by `fit` for exactly `epochs` epochs (early stopping off), in order."""
    from dataclasses import replace

    from gcntrain.data.graph import Graph
    from gcntrain.model.normalize import support_kind, support_matrix
    from gcntrain.model.trainer import fit

    rng = np.random.default_rng(0)
    n = max(8, 2 * num_classes)
    A = sp.random(n, n, density=0.3, random_state=1, format="csr")
    A = ((A + A.T) > 0).astype(np.float32).tocsr()
    labels = np.arange(n) % num_classes
    masks = {k: np.zeros(n, dtype=bool) for k in ("train", "val", "test")}
    masks["train"][: n // 2] = True
    masks["val"][n // 2 : 3 * n // 4] = True
    masks["test"][3 * n // 4 :] = True
    g = Graph(
        A.indptr.astype(np.int64),
        A.indices.astype(np.int32),
        None,
        rng.random((n, num_features), dtype=np.float32),
        labels.astype(np.int64),
        masks["train"],
        masks["val"],
        masks["test"],
        num_classes=num_classes,
    )
    S = support_matrix(g, support_kind(config.model, config.aggregator))
    ops = RecordingOps(S)
    cfg = replace(config, epochs=epochs, early_stopping=0, patience=None)
    fit(ops, g.features, g.labels, masks, num_classes, cfg)
    return ops.calls
