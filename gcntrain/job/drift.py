"""The drift of an approximate scheme configuration (DistGNN's delayed cd-R and local-only 0c
vertex cut): how far the aggregation its training passes use is from exact aggregation, as
loss and accuracy of the final weights.

Evaluation passes of every mode aggregate exactly, so a run's reported ``val_loss``,
``val_acc`` and ``test_acc`` are the final weights on the whole graph: what a serial
evaluation of the same weights computes.  The measure adds one forward pass of the same
weights (no dropout) with the aggregation of the training passes (0c: the local partial
aggregates only; cd-R: the bucket of the next epoch, with the delayed aggregates still in
flight), evaluated on the same masks; ``drift`` reports both and their difference
(approximate minus exact).  Its traffic comes after the run's counters stop, so it is in no
reported figure.  Exact configurations report no drift.
"""

from __future__ import annotations

import numpy as np

from gcntrain.model.loss import effective_mask, masked_counts, weight_decay_value
from gcntrain.model.phase import Phase
from gcntrain.model.trainer import make_network, prepare_features

#: the masks and figures reported, in this order
MASKS = ("val", "test")
FIGURES = ("loss", "acc")


def evaluate_weights(ops, local, config, weights, epoch: int = -1, training: bool = False):
    """Loss and accuracy per mask ({"train_loss", "train_acc", "val_loss", ...}; None for a
    mask without labelled rows) of the whole parameters `weights` (`TrainResult.weights`)
    on the local block of `ops` (collective over its ranks), in one forward pass without
    dropout: aggregating exactly (``training=False``) or as the training passes of epoch
    `epoch` do (``training=True``)."""
    f0 = int(local.num_features)
    classes = int(local.num_classes)
    X = ops.compute.features(prepare_features(ops, local.features, config, f0))  # device: resident
    net = make_network(config, f0, classes, ops)
    for layer, full in zip(net.layers, weights):
        for k, w in layer.params.items():
            shard = ops.shard_param(full[k], layer.spec(k), phase=Phase("param", layer.index))
            w[...] = ops.compute.xp.asarray(shard, dtype=w.dtype).reshape(w.shape)
    labels = np.asarray(local.labels, dtype=np.int64)
    masks = {k: effective_mask(labels, local.masks.get(k)) for k in ("train", "val", "test")}
    lp_train = masks["train"].copy()
    if ops.counted is not None:  # replicas of rows another rank counts
        for v in masks.values():
            v[ops.counted :] = False
    counts = masked_counts(ops, labels, masks, Phase("metrics"))
    wd = weight_decay_value(
        net.weights(),
        config.weight_decay,
        config.weight_decay_all,
        lambda i, k, W: ops.param_sum_sq(W, net.specs()[i][k], phase=Phase("metrics")),
    )
    embed = (labels, lp_train) if config.label_prop > 0 else None
    ctx = Phase("epoch", training=training, epoch=epoch)
    logits = net.forward(ops, X, seed=None, ctx=ctx, embed=embed)
    names = list(masks)
    tot, _ = ops.xent(
        logits, labels, [masks[k] for k in names], width=classes, phase=ctx.at("loss")
    )
    out: dict = {}
    for i, k in enumerate(names):
        d = counts[k]
        out[f"{k}_loss"] = float(tot[2 * i]) / d + wd if d else None
        out[f"{k}_acc"] = float(tot[2 * i + 1]) / d if d else None
    return out


def measure_drift(scheme, scheme_config: dict, ops, local, config, result) -> dict | None:
    """``drift`` of a run (collective; after training), or None for an exact configuration
    or a scheme without a training view (`scheme.training_view(ops)`, a context in which
    passes with ``training=True`` aggregate as training did)."""
    view = getattr(scheme, "training_view", None)
    if view is None or scheme.is_exact(scheme_config):
        return None
    exact = result.final
    with view(ops):
        approx = evaluate_weights(
            ops, local, config, result.weights, epoch=len(result.history), training=True
        )
    out: dict = {}
    for m in MASKS:
        for f in FIGURES:
            key = f"{m}_{f}"
            a, e = approx.get(key), exact.get(key)
            out[f"exact_{key}"] = e
            out[f"approx_{key}"] = a
            out[key] = None if a is None or e is None else a - e
    return out


def drift_text(drift: dict) -> str:
    """The human summary's drift row."""
    parts = []
    for m in MASKS:
        for f in FIGURES:
            key = f"{m}_{f}"
            if drift.get(key) is None:
                continue
            name = f"{m} {f}"
            parts.append(f"{name} {drift[f'approx_{key}']:.4f} vs {drift[f'exact_{key}']:.4f}")
    body = ", ".join(parts) if parts else "no validation or test mask"
    return f"{body} (final weights: training aggregation vs exact; docs/schemes.md)"
