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

from gcntrain.comm import volume as V
from gcntrain.comm.counters import Tally
from gcntrain.model.ops import SerialOps

#: the calls that move node-wise rows (the scheme-specific part of a plan)
AGGREGATIONS = ("aggregate", "aggregate_t")


@dataclass(frozen=True)
class Call:
    """One Ops call: `op` in aggregate | aggregate_t | reduce_weight_grad | allreduce_sum |
    agree; `width` = columns (aggregations) or elements (reductions)."""

    op: str
    phase: str
    width: int
    itemsize: int


def reduction_volume(
    call: Call, reduce_rank: int, reduce_size: int, rank: int, size: int
) -> np.ndarray:
    """Tally of a non-aggregation call: sums over the reduce communicator, decisions over all.

    `reduce_rank`/`reduce_size` locate the rank in the communicator holding one copy of each
    row block; `rank`/`size` in the world (stop decisions are broadcast from world rank 0).
    """
    if call.op in ("reduce_weight_grad", "allreduce_sum"):
        return V.allreduce(call.width, call.itemsize, reduce_rank, reduce_size)
    if call.op == "agree":
        return V.bcast(1, rank, size, 0)
    raise ValueError(f"unknown call {call.op}")


def plan_calls(calls: list[Call], volume_of) -> Tally:
    """Tally of `calls`, each costed by `volume_of(call) -> int64[4]`, under its phase."""
    t = Tally()
    for c in calls:
        t.add(c.phase, volume_of(c))
    return t


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


def record_schedule(
    config,
    num_features: int,
    num_classes: int,
    epochs: int,
    masks_present: tuple[str, ...] = ("train", "val", "test"),
) -> list[Call]:
    """Calls made by `fit` for exactly `epochs` epochs (early stopping off), in order.

    `masks_present` names the masks the real graph has (evaluation calls depend on them).
    """
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
    for k in ("val", "test"):
        if k not in masks_present:
            masks[k] = None
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
    fit(
        ops,
        g.features,
        g.labels,
        {k: m for k, m in masks.items() if m is not None},
        num_classes,
        cfg,
    )
    return ops.calls
