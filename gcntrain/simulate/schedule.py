"""The sequence of Ops calls a model makes (its schedule), taken from the model itself.

`record_schedule` runs the real trainer for E epochs on a tiny random graph through
`RecordingOps` (generated from the Ops protocol, so no call escapes it), which logs every call
with its `Phase` (operation, layer, direction, training flag, epoch) and the shapes of its
arguments.  The calls depend only on the model configuration, the widths and which masks the
graph has, never on n or P (shapes are recorded with the tiny graph's n; plans use widths and
flags only), so the same schedule drives every scheme's plan: the model code is the single
source of truth for what is computed and communicated.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from gcntrain.model.ops import SerialOps
from gcntrain.model.wrappers import Call, RecordingOps


class _DecidedDensity(SerialOps):
    """SerialOps whose feature-density sum yields the real graph's dense/CSR decision."""

    def __init__(self, support, sparse: bool | None):
        super().__init__(support)
        self._sparse = sparse

    def element_sum(self, a, *, phase):
        if self._sparse is None:
            return super().element_sum(a, phase=phase)
        return np.array([0.0 if self._sparse else 1.0, 1.0])


def record_schedule(
    config,
    num_features: int,
    num_classes: int,
    epochs: int,
    masks_present: tuple[str, ...] = ("train", "val", "test"),
    sparse_features: bool | None = None,
) -> list[Call]:
    """Calls made by `fit` for exactly `epochs` epochs (early stopping off), in order.

    Parameters
    ----------
    config : TrainConfig of the run.
    num_features, num_classes : widths of the real graph.
    epochs : epochs to record.
    masks_present : the masks the real graph has (evaluation calls depend on them).
    sparse_features : whether the real run stores the first layer's input as CSR (decided
        from the real features' density; the tiny graph's density must not decide it).
    """
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
    ops = RecordingOps(_DecidedDensity(S, sparse_features))
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
