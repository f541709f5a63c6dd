"""Helpers of the training runner that belong to the model: loading a whole graph for
training, checking it can be trained on, and the summary of a `TrainResult`.

The runner itself (`gcntrain.job.runner.run_job`) is the same for every scheme.
"""

from __future__ import annotations

import numpy as np

from gcntrain.data.graph import Graph
from gcntrain.data.validate import require_node_data
from gcntrain.errors import InputError
from gcntrain.model.state import best_record
from gcntrain.model.trainer import TrainConfig, TrainResult


def check_trainable(graph: Graph, source: str) -> int:
    """Raise `InputError` naming `source` unless the graph has what training needs.

    Returns
    -------
    int
        The number of classes.
    """
    require_node_data(graph.features, graph.labels, graph.train_mask, source)
    if graph.features.shape[0] != graph.n:
        raise InputError(
            f"features have {graph.features.shape[0]} rows for {graph.n} nodes", source
        )
    if not np.any(graph.train_mask & (graph.labels >= 0)):
        raise InputError("the train mask selects no labelled node", source)
    num_classes = graph.num_classes or int(graph.labels.max()) + 1
    if num_classes < 2:
        raise InputError(f"need at least 2 classes, found {num_classes}", source)
    return int(num_classes)


def check_widths(meta, source) -> None:
    """Raise `InputError` naming `source` unless a graph's declared widths (`meta`: its
    ``num_features`` and ``num_classes``) can make a model (at least one feature column, at
    least two classes where the count is known): checked from the metadata before anything
    is loaded or sized, on every path."""
    num_features, num_classes = meta.num_features, meta.num_classes
    if num_features < 1:
        raise InputError(
            f"the graph has no node features ({num_features} columns); training needs node "
            "features, labels and train/val/test masks (`gcntrain convert --features F "
            "--classes C` adds synthetic ones to an edge list)",
            source,
        )
    if num_classes is not None and num_classes < 2:
        raise InputError(f"need at least 2 classes, found {num_classes}", source)


def _median(values: list[float]) -> float:
    return float(np.median(values)) if values else 0.0


def result_summary(result: TrainResult) -> dict:
    """Final metrics and median per-epoch times of a run (serial or distributed)."""
    h = result.history
    best = best_record(h)
    return {
        "final_loss": result.final["loss"],
        "train_acc": result.final["train_acc"],
        "val_loss": result.final["val_loss"],
        "val_acc": result.final["val_acc"],
        "test_loss": result.final["test_loss"],
        "test_acc": result.final["test_acc"],
        "epochs": result.epochs,
        "stopped_early": result.stopped_early,
        "best_epoch": None if best is None else best.epoch,
        "best_val_loss": None if best is None else best.val_loss,
        "best_val_acc": None if best is None else best.val_acc,
        "test_acc_at_best": None if best is None else best.test_acc,
        "weights_epoch": result.weights_epoch,
        "epoch_seconds": _median([r.seconds for r in h]),
        "t_aggregation": _median([r.t_aggregation for r in h]),
        "t_dense": _median([r.t_dense for r in h]),
        "t_other": _median([r.t_other for r in h]),
    }


def model_summary(config: TrainConfig) -> dict:
    return {
        "model": config.model,
        "aggregator": config.aggregator if config.model == "sage" else None,
        "hidden": list(config.hidden),
        "dtype": config.dtype,
        "seed": config.seed,
    }
