"""Serial training driver: graph -> support matrix -> `SerialOps` -> `fit` -> outputs.

The `train` command is a thin wrapper around `run_training`; distributed drivers replace the
`SerialOps` construction and keep the rest.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import numpy as np

from gcntrain.data.graph import Graph
from gcntrain.errors import InputError
from gcntrain.model.normalize import support_kind, support_matrix
from gcntrain.model.ops import Ops, SerialOps
from gcntrain.model.trainer import EpochRecord, TrainConfig, TrainResult, fit

DEFAULT_SOURCE = "<embedded default dataset>"


def load_training_graph(graph_or_path: Graph | str | os.PathLike | None) -> tuple[Graph, str]:
    """The graph to train on and a name for messages.

    None -> the embedded default dataset; a `Graph` -> itself; a path -> ``read_graph``.
    """
    if graph_or_path is None:
        from gcntrain.data.generate import default_dataset

        return default_dataset(), DEFAULT_SOURCE
    if isinstance(graph_or_path, Graph):
        return graph_or_path, graph_or_path.name
    from gcntrain.data.store import read_graph

    path = os.fspath(graph_or_path)
    if not os.path.exists(path):
        raise InputError("no such graph file", path)
    return read_graph(path), path


def check_trainable(graph: Graph, source: str) -> int:
    """Raise `InputError` naming `source` unless the graph has what training needs.

    Returns
    -------
    int
        The number of classes.
    """
    missing = [
        name
        for name, a in (
            ("node features", graph.features),
            ("labels", graph.labels),
            ("a train mask", graph.train_mask),
        )
        if a is None
    ]
    if missing:
        raise InputError(
            f"graph has no {' and no '.join(missing)}; training needs features, "
            "labels and train/val/test masks",
            source,
        )
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


def serial_ops(graph: Graph, config: TrainConfig) -> Ops:
    """`SerialOps` over the support matrix of the configured model, in the run's dtype."""
    S = support_matrix(graph, support_kind(config.model, config.aggregator))
    return SerialOps(S.astype(np.dtype(config.dtype)))


def _median(values: list[float]) -> float:
    return float(np.median(values)) if values else 0.0


def result_summary(result: TrainResult) -> dict:
    """Final metrics and median per-epoch times of a run (serial or distributed)."""
    h = result.history
    return {
        "final_loss": result.final["loss"],
        "train_acc": result.final["train_acc"],
        "val_loss": result.final["val_loss"],
        "val_acc": result.final["val_acc"],
        "test_loss": result.final["test_loss"],
        "test_acc": result.final["test_acc"],
        "epochs": result.epochs,
        "stopped_early": result.stopped_early,
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


def summarize(
    result: TrainResult, config: TrainConfig, graph: Graph, source: str, total_seconds: float
) -> dict:
    """The flat summary the CLI prints (``--json``): final metrics, medians of the time split."""
    return {
        **result_summary(result),
        "total_seconds": total_seconds,
        **model_summary(config),
        "graph": graph.name,
        "source": source,
        "num_nodes": graph.n,
        "num_edges": graph.nnz,
        "num_features": graph.num_features,
        "num_classes": graph.num_classes,
    }


def run_training(
    graph_or_path: Graph | str | os.PathLike | None,
    config: TrainConfig,
    out_dir: str | os.PathLike | None = None,
    callback: Callable[[EpochRecord], None] | None = None,
) -> tuple[TrainResult, dict]:
    """Train serially and optionally write the outputs.

    Parameters
    ----------
    graph_or_path : a `Graph`, an HDF5 graph path, or None for the embedded default dataset.
    config : hyperparameters (validated here).
    out_dir : directory for metrics.jsonl, config.json, weights.h5, predictions.h5, or None.
    callback : per-epoch hook, see `fit`.

    Returns
    -------
    (TrainResult, summary dict)
    """
    config.validate()
    if out_dir is not None:
        from gcntrain.model.output import check_out_dir

        check_out_dir(out_dir)
    t0 = time.perf_counter()
    graph, source = load_training_graph(graph_or_path)
    num_classes = check_trainable(graph, source)
    ops = serial_ops(graph, config)
    masks = {"train": graph.train_mask, "val": graph.val_mask, "test": graph.test_mask}
    result = fit(ops, graph.features, graph.labels, masks, num_classes, config, callback)
    summary = summarize(result, config, graph, source, time.perf_counter() - t0)
    if out_dir is not None:
        from gcntrain.model.output import write_outputs

        resolved = {
            **config.to_dict(),
            "graph": graph.name,
            "source": source,
            "num_nodes": graph.n,
            "num_classes": num_classes,
            "support": support_kind(config.model, config.aggregator),
            "layers": result.layers,
            "bias": result.layers[0]["bias"],
            "ranks": 1,
        }
        write_outputs(
            out_dir,
            resolved,
            result.history,
            result.weights,
            result.predictions,
            result.rows,
            labels=graph.labels[result.rows],
            layers=result.layers,
        )
        summary["out"] = os.fspath(out_dir)
    return result, summary
