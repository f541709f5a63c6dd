"""Reproduction of Kipf & Welling (ICLR 2017), Table 2, with the reference hyperparameters.

Used by ``scripts/reproduce_kipf.py`` and ``tests/test_kipf.py``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from gcntrain.data.graph import Graph
from gcntrain.model.normalize import support_kind, support_matrix
from gcntrain.model.ops import SerialOps
from gcntrain.model.run import check_trainable
from gcntrain.model.trainer import TrainConfig, fit

#: test accuracy (%) of "GCN (this paper)", Table 2 of arXiv:1609.02907
KIPF_TARGETS = {"cora": 81.5, "citeseer": 70.3, "pubmed": 79.0}


def planetoid_prefix(data_dir: str | os.PathLike, name: str) -> str:
    """``<data_dir>/planetoid/ind.<name>``."""
    return str(Path(data_dir) / "planetoid" / f"ind.{name}")


def seed_accuracies(
    graph: Graph, seeds: Sequence[int], dtype: str = "float32", **overrides
) -> list[dict]:
    """Train the reference GCN once per seed, reusing the support matrix.

    Parameters
    ----------
    graph : a labelled Planetoid graph.
    seeds : the seeds (weights init and dropout masks).
    dtype : "float32" or "float64".
    overrides : other `TrainConfig` fields (default: the reference hyperparameters).

    Returns
    -------
    list of {"seed", "test_acc", "val_acc", "epochs", "stopped_early"}
    """
    num_classes = check_trainable(graph, graph.name)
    base = TrainConfig(dtype=dtype, **overrides)
    ops = SerialOps(support_matrix(graph, support_kind(base.model, base.aggregator)))
    masks = {"train": graph.train_mask, "val": graph.val_mask, "test": graph.test_mask}
    out = []
    for seed in seeds:
        cfg = TrainConfig(**{**base.to_dict(), "seed": int(seed)})
        res = fit(ops, graph.features, graph.labels, masks, num_classes, cfg)
        out.append(
            {
                "seed": int(seed),
                "test_acc": res.final["test_acc"],
                "val_acc": res.final["val_acc"],
                "epochs": res.epochs,
                "stopped_early": res.stopped_early,
            }
        )
    return out


def summarize_runs(name: str, runs: list[dict], band: float = 1.0) -> dict:
    """Mean and std of the test accuracy (in %) against the paper's figure."""
    accs = np.array([r["test_acc"] for r in runs]) * 100.0
    target = KIPF_TARGETS.get(name)
    mean = float(accs.mean())
    return {
        "dataset": name,
        "seeds": len(runs),
        "mean": mean,
        "std": float(accs.std()),
        "min": float(accs.min()),
        "max": float(accs.max()),
        "target": target,
        "within": None if target is None else bool(abs(mean - target) <= band),
        "band": band,
        "mean_epochs": float(np.mean([r["epochs"] for r in runs])),
    }
