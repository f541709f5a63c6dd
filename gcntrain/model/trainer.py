"""Full-batch training loop (the reference GCN procedure), written against `Ops` only.

Per epoch, as the reference code does: a training forward pass with dropout, the loss and
training accuracy, the backward pass, one Adam step; then an evaluation forward pass without
dropout for the validation loss/accuracy and the test accuracy (after the update).  Early
stopping follows the reference code: stop when more than `window` epochs have run and the
validation loss exceeds the mean of the previous `window` ones (or, alternatively, after
`patience` epochs without improvement).  The final metrics come from the final weights.

Every reported loss is the mean cross-entropy over the mask plus the weight-decay term, as the
reference's ``model.loss`` (also for the validation loss that drives early stopping).  A mask
that selects no labelled node (e.g. no validation mask) reports None and, for validation,
disables the stopping rules.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from time import perf_counter

import numpy as np
import scipy.sparse as sp

from gcntrain.errors import InputError
from gcntrain.kernels.dropout import dropout_mask_rows
from gcntrain.model.config import ConfigValueError, TrainConfig  # noqa: F401 (re-exported)
from gcntrain.model.evalcache import CacheChoice, aggregated_input, decide
from gcntrain.model.loss import (
    add_weight_decay_grads,
    effective_mask,
    masked_counts,
    mean_xent,
    weight_decay_value,
)
from gcntrain.model.network import LP_STREAM, STREAMS_PER_EPOCH, Network, build_network
from gcntrain.model.ops import Ops
from gcntrain.model.optim import Adam
from gcntrain.model.phase import Phase
from gcntrain.model.state import (
    EpochRecord,
    TrainState,
    best_record,
    host_copy,
    restore_into,
)
from gcntrain.model.workspace import Workspace
from gcntrain.model.wrappers import TimedOps

#: CSR features are used for the first layer when the global density is below this (auto)
SPARSE_DENSITY = 0.2


@dataclass
class TrainResult:
    """Outcome of `fit`.

    Attributes
    ----------
    history : one `EpochRecord` per epoch run
    weights : final parameters, one {name: array} per layer (copies)
    final : metrics of the final weights without dropout (train/val/test loss and accuracy),
        plus ``loss`` and ``train_acc`` of the last training step
    predictions : int64 argmax of the final logits of the local rows
    rows : global ids of those rows
    stopped_early : whether a stopping rule ended training before `epochs`
    layers : per-layer description (kind, sizes, order, bias, dropout)
    weights_epoch : the epoch after which `weights` were taken (the last one, or the best
        one with ``keep_best``)
    eval_cache : the evaluation cache's `CacheChoice` (None: not asked for)
    """

    history: list[EpochRecord]
    weights: list[dict[str, np.ndarray]]
    final: dict[str, float]
    predictions: np.ndarray
    rows: np.ndarray
    stopped_early: bool
    layers: list[dict]
    weights_epoch: int = 0
    eval_cache: CacheChoice | None = None

    @property
    def epochs(self) -> int:
        return len(self.history)


def prepare_features(ops: Ops, X, config: TrainConfig, num_features: int):
    """Cast, optionally row-normalise (``ops.row_normalize``), and choose dense or CSR storage
    for the first layer (auto: CSR when the global density, one ``ops.element_sum``, is below
    `SPARSE_DENSITY`).  `X` is the local block of an (n x `num_features`) matrix."""
    dtype = np.dtype(config.dtype)
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=dtype)
    else:
        X = np.ascontiguousarray(X, dtype=dtype)
    phase = Phase("prepare")
    if config.normalize_features:
        X = ops.row_normalize(X, width=num_features, phase=phase)
    use_sparse = config.sparse_features
    if use_sparse is None:
        Xc = X if ops.counted is None else X[: ops.counted]
        nnz = Xc.nnz if sp.issparse(Xc) else np.count_nonzero(Xc)
        tot = ops.element_sum(
            np.array([nnz, Xc.shape[0] * Xc.shape[1]], dtype=np.float64), phase=phase
        )
        use_sparse = bool(tot[1] > 0 and tot[0] / tot[1] < SPARSE_DENSITY)
    if use_sparse and not sp.issparse(X):
        X = sp.csr_matrix(X)
    elif not use_sparse and sp.issparse(X):
        X = np.ascontiguousarray(X.toarray())
    if sp.issparse(X):
        X.sort_indices()
    return X


def config_network(config: TrainConfig, num_features: int, num_classes: int) -> Network:
    """The (uninitialised) network `config` builds for these widths."""
    return build_network(
        config.model,
        num_features,
        list(config.hidden),
        num_classes,
        aggregator=config.aggregator,
        dropout=config.dropout,
        bias=config.bias,
        order=config.order,
        norm=config.norm,
        label_embedding=config.label_prop > 0,
        label_scale=config.label_scale,
    )


def make_network(config: TrainConfig, num_features: int, num_classes: int, ops: Ops) -> Network:
    """Build and initialise the network of `config` (shards of the serial weights)."""
    net = config_network(config, num_features, num_classes)
    net.init_params(ops, config.seed, np.dtype(config.dtype))
    return net


def model_layers(config: TrainConfig, num_features: int, num_classes: int | None):
    """The layers `config` builds for these widths (`Network.describe`), as a tuple; None
    when the number of classes is unknown."""
    if num_classes is None:
        return None
    return tuple(config_network(config, num_features, num_classes).describe())


def evaluate(
    ops: Ops,
    net: Network,
    X,
    labels: np.ndarray,
    masks: dict[str, np.ndarray],
    counts: dict[str, int],
    wd: float,
    epoch: int = -1,
    embed: tuple[np.ndarray, np.ndarray] | None = None,
    aggregated=None,
) -> tuple[dict[str, float | None], np.ndarray]:
    """Forward without dropout; mean loss (+ `wd`) and accuracy per mask (one ``ops.xent``).
    `aggregated`: the run's ``S @ X`` for the first layer (`gcntrain.model.evalcache`).

    Returns
    -------
    ({"<mask>_loss": ..., "<mask>_acc": ...}, logits of the local block)
        Both None for a mask that selects no labelled node.
    """
    ctx = Phase("epoch", training=False, epoch=epoch)
    logits = net.forward(ops, X, ctx=ctx, embed=embed, aggregated=aggregated)
    names = list(masks)
    tot, _ = ops.xent(
        logits, labels, [masks[k] for k in names], width=net.layers[-1].f_out, phase=ctx.at("loss")
    )
    out: dict[str, float | None] = {}
    for i, k in enumerate(names):
        d = counts[k]
        out[f"{k}_loss"] = float(tot[2 * i]) / d + wd if d else None
        out[f"{k}_acc"] = float(tot[2 * i + 1]) / d if d else None
    return out, logits


def label_draw(rows: np.ndarray, train: np.ndarray, rate: float, seed: int, epoch: int):
    """Masked label propagation of one epoch: the training rows whose labels are embedded
    (a counter-based draw per global row id, so every layout draws the same nodes)."""
    keep = np.empty((rows.shape[0], 1), dtype=np.bool_)
    dropout_mask_rows(rows, 1, seed, epoch * STREAMS_PER_EPOCH + LP_STREAM, rate, keep)
    return train & ~keep[:, 0]


def should_stop(val_losses: list[float], window: int, patience: int | None) -> bool:
    """The stopping rule on the validation losses so far (this epoch's last).

    With `patience`: the best loss is at least `patience` evaluations old.  Otherwise the
    reference rule: more than ``window + 1`` losses and the last one above the mean of the
    `window` before it (``window == 0``: never).
    """
    if patience is not None:
        best = int(np.argmin(val_losses))
        return len(val_losses) - 1 - best >= patience
    if window <= 0 or len(val_losses) <= window + 1:
        return False
    return val_losses[-1] > float(np.mean(val_losses[-(window + 1) : -1]))


def fit(
    ops: Ops,
    X_local,
    labels_local: np.ndarray,
    masks_local: dict[str, np.ndarray],
    num_classes: int,
    config: TrainConfig,
    callback: Callable[[EpochRecord], None] | None = None,
    num_features: int | None = None,
    checkpoint=None,
    resume: TrainState | None = None,
    max_memory: float | None = None,
) -> TrainResult:
    """Train a GCN/GraphSAGE model full-batch on the local block of `ops`.

    Parameters
    ----------
    ops : the distribution scheme's operations (`SerialOps` for one process).
    X_local : (m, f_local) local block of the features, dense or scipy sparse.
    labels_local : int64 (m,), -1 = unlabeled.
    masks_local : {"train": bool (m,), "val": ..., "test": ...}; "val"/"test" may be missing.
    num_classes : number of output classes.
    config : hyperparameters.
    callback : called with each `EpochRecord` after the epoch (progress, fault injection).
    num_features : global feature width (default: the local block's width, a row layout).
    checkpoint : an object with ``due(epochs_done, last) -> bool`` and ``save(TrainState)``,
        asked after every epoch (`gcntrain.job.checkpoint.Checkpointer`).  On a device
        the state it saves is copied to the host once per checkpoint (each parameter shard,
        Adam moment and scheme array once, ``ops.compute.to_host``): the only transfers a
        checkpoint adds to the loop's.
    resume : the `TrainState` to continue from (same rank of the same layout): training
        goes on at its epoch and ends, bit for bit, where the uninterrupted run ends; its
        parameters must fit the model's (``resume.check_model``, `InputError`).  On a
        device its arrays are copied once into the device parameters and moments
        (``ops.compute.load_into``).
    max_memory : the run's ``--max-memory`` in bytes (None: the available memory), which
        ``config.eval_cache`` must fit in (`gcntrain.model.evalcache.decide`).

    Returns
    -------
    TrainResult
    """
    config.validate()
    if "train" not in masks_local or masks_local["train"] is None:
        raise InputError("training needs a train mask")
    labels = np.asarray(labels_local, dtype=np.int64)
    m = int(np.asarray(ops.rows).shape[0])
    m_in = m if ops.input_rows is None else int(np.asarray(ops.input_rows).shape[0])
    if labels.shape[0] != m or X_local.shape[0] != m_in:
        raise ValueError(
            f"features ({X_local.shape[0]}) and labels ({labels.shape[0]}) must have one "
            f"row per local input row ({m_in}) and per local row ({m})"
        )
    f0 = int(X_local.shape[1] if num_features is None else num_features)
    masks = {k: effective_mask(labels, masks_local.get(k)) for k in ("train", "val", "test")}
    lp_train = masks["train"].copy()  # replicas included: every clone embeds alike
    if ops.counted is not None:  # replicas of rows another rank counts
        for v in masks.values():
            v[ops.counted :] = False
    counts = masked_counts(ops, labels, masks, Phase("metrics"))
    if counts["train"] == 0:
        raise InputError("the train mask selects no labelled node")
    if labels.size and int(labels.max(initial=-1)) >= num_classes:
        raise InputError(
            f"a label ({int(labels.max())}) is >= the number of classes ({num_classes})"
        )
    tops = TimedOps(ops)
    X = prepare_features(ops, X_local, config, f0)
    del X_local  # the raw features: freed here when the caller holds them no more
    if ops.compute.device:  # one copy to the device; the loop then stays there
        X = ops.compute.features(X)
    net = make_network(config, f0, num_classes, ops)
    weights = net.weights()
    specs = net.specs()
    decay = config.adamw_decay if config.optimizer == "adamw" else 0.0
    opt = Adam(weights, lr=config.lr, decoupled_decay=decay, update=ops.compute.adam_update)
    eval_masks = {k: masks[k] for k in ("val", "test")}
    # the evaluation's first layer from S @ X, computed once (off unless asked for)
    cache = decide(ops, net, X, config, max_memory) if config.eval_cache else None
    agg = aggregated_input(ops, X) if cache is not None and cache.on else None
    # evaluation passes embed every training label (the known labels)
    lp_embed = (labels, ops.compute.resident(lp_train)) if config.label_prop > 0 else None

    def wd_value(ctx: Phase) -> float:
        phase = ctx.at("metrics")
        return weight_decay_value(
            weights,
            config.weight_decay,
            config.weight_decay_all,
            lambda i, k, W: ops.param_sum_sq(W, specs[i][k], phase=phase),
        )

    history: list[EpochRecord] = []
    val_losses: list[float] = []
    stopped = False
    first = 0
    best = None  # --keep-best: host copies of the best epoch's parameters so far
    best_loss, best_epoch = math.inf, 0  # that epoch (`best_record`, kept as it goes)
    if resume is not None:
        resume.check_model(weights)  # another model's parameters: refused before training
        for dst, src in ((weights, resume.weights), (opt.m, resume.m), (opt.v, resume.v)):
            restore_into(dst, src, ops.compute.load_into)
        opt.t = resume.t
        history, val_losses = list(resume.history), list(resume.val_losses)
        first = resume.epoch
        best = resume.best if config.keep_best else None
        so_far = best_record(history)
        if so_far is not None:
            best_loss, best_epoch = so_far.val_loss, so_far.epoch
        # a stopping rule that fired before the checkpoint ends the run there
        stopped = resume.stopped and first < config.epochs
        ops.load_state(resume.scheme, phase=Phase("control"))
    held = getattr(ops, "workspace", None)
    ops.workspace = Workspace()  # the run's buffers, reused by every epoch
    try:
        for epoch in range(first, first if stopped else config.epochs):
            tops.synchronize()  # the epoch clock waits for the device (nothing on the host)
            t0 = perf_counter()
            tops.reset()
            ctx = Phase("epoch", epoch=epoch)
            ops.begin_epoch(phase=ctx)
            loss_mask, loss_count, embed = masks["train"], counts["train"], None
            if config.label_prop > 0:
                chosen = label_draw(ops.rows, lp_train, config.label_prop, config.seed, epoch)
                embed = (labels, chosen)
                loss_mask = masks["train"] & ~chosen
                loss_count = masked_counts(ops, labels, {"train": loss_mask}, ctx.at("metrics"))
                loss_count = loss_count["train"]
                if ops.compute.device:  # the same draw made there: no mask crosses per epoch
                    stream = epoch * STREAMS_PER_EPOCH + LP_STREAM
                    chosen = ops.compute.label_draw(
                        ops.rows, lp_train, config.label_prop, config.seed, stream
                    )
                    embed = (labels, chosen)
                    loss_mask = ops.compute.resident(masks["train"]) & ~chosen
            logits = net.forward(tops, X, seed=config.seed, ctx=ctx, embed=embed)
            xent, train_acc, dlogits = mean_xent(
                tops,
                logits,
                labels,
                loss_mask,
                max(loss_count, 1),
                width=num_classes,
                phase=ctx.at("loss"),
            )
            del logits  # not held through the backward pass (the serial peak is in it)
            loss = xent + wd_value(ctx)
            grads = net.backward(tops, dlogits, ctx)
            del dlogits  # nor through the evaluation pass
            add_weight_decay_grads(grads, weights, config.weight_decay, config.weight_decay_all)
            opt.step(grads)
            do_eval = (epoch + 1) % config.eval_every == 0 or epoch == config.epochs - 1
            val_loss = val_acc = test_acc = None
            if do_eval:
                wd = wd_value(ctx)
                ev, _ = evaluate(tops, net, X, labels, eval_masks, counts, wd, epoch, lp_embed, agg)
                val_loss, val_acc, test_acc = ev["val_loss"], ev["val_acc"], ev["test_acc"]
            tops.synchronize()
            secs = perf_counter() - t0
            rec = EpochRecord(
                epoch=epoch + 1,
                loss=loss,
                train_acc=train_acc,
                val_loss=val_loss,
                val_acc=val_acc,
                test_acc=test_acc,
                seconds=secs,
                t_aggregation=tops.t_aggregation,
                t_dense=tops.t_dense,
                t_other=max(secs - tops.t_aggregation - tops.t_dense, 0.0),
            )
            history.append(rec)
            if callback is not None:
                callback(rec)
            if not math.isfinite(loss):
                raise FloatingPointError(f"training loss is {loss} at epoch {epoch + 1}")
            # a new best (`best_record`'s rule: the earliest lowest finite loss): keep it
            if config.keep_best and val_loss is not None and math.isfinite(val_loss):
                if val_loss < best_loss:
                    best_loss, best_epoch = val_loss, rec.epoch
                    host = ops.compute.to_host
                    best = [{k: host_copy(a, host) for k, a in lp.items()} for lp in weights]
            stop = False
            if do_eval and val_loss is not None:
                val_losses.append(val_loss)
                decision = should_stop(val_losses, config.early_stopping, config.patience)
                stop = ops.agree(decision, phase=ctx.at("control"))
            ops.end_epoch(phase=ctx)
            if stop:
                stopped = epoch < config.epochs - 1
            last = stop or epoch == config.epochs - 1
            if checkpoint is not None and checkpoint.due(epoch + 1, last):
                host = ops.compute.to_host  # on a device: one copy of each array (docstring)
                sw, sm, sv = (
                    [{k: host(a) for k, a in lp.items()} for lp in g]
                    for g in (weights, opt.m, opt.v)
                )
                scheme = ops.state_dict(phase=ctx.at("control"))
                checkpoint.save(
                    TrainState(
                        epoch + 1,
                        sw,
                        sm,
                        sv,
                        opt.t,
                        history,
                        val_losses,
                        bool(stop),
                        {k: host(a) for k, a in scheme.items()},
                        best,
                    )
                )
            if stop:
                break
    finally:
        ops.workspace = held

    if best is not None:  # --keep-best: the model ends as it was after its best epoch
        restore_into(weights, best, ops.compute.load_into)
    final_ctx = Phase("epoch", training=False)
    wd = wd_value(final_ctx)
    ev, logits = evaluate(ops, net, X, labels, masks, counts, wd, -1, lp_embed, agg)
    final = {
        "loss": history[-1].loss,
        "train_acc": history[-1].train_acc,
        **{k if not k.startswith("train_") else "eval_" + k: v for k, v in ev.items()},
    }
    preds = ops.compute.to_host(
        ops.predict(logits, width=num_classes, phase=final_ctx.at("predict"))
    )
    return TrainResult(
        history=history,
        weights=net.full_weights(ops),
        final=final,
        predictions=preds,
        rows=np.asarray(ops.rows, dtype=np.int64).copy(),
        stopped_early=stopped,
        layers=net.describe(),
        weights_epoch=best_epoch if best is not None else len(history),
        eval_cache=cache,
    )
