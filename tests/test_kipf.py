"""GCN on Cora and Citeseer (public Planetoid split, reference hyperparameters): the mean test
accuracy over 3 seeds lies within 2 points of Kipf & Welling's Table 2 (81.5 and 70.3)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gcntrain.data.convert import load_planetoid
from gcntrain.model.kipf import KIPF_TARGETS, planetoid_prefix, seed_accuracies, summarize_runs


def shared_datasets() -> Path:
    beside = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
    return beside if beside.is_dir() else Path("/work/shared/datasets")


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cora", "citeseer"])
def test_reference_gcn_accuracy(name):
    graph = load_planetoid(planetoid_prefix(shared_datasets(), name))
    assert int(graph.train_mask.sum()) in (120, 140) and int(graph.test_mask.sum()) == 1000
    runs = seed_accuracies(graph, seeds=[0, 1, 2], dtype="float32")
    s = summarize_runs(name, runs, band=2.0)
    accs = [r["test_acc"] for r in runs]
    assert s["mean"] == pytest.approx(100 * np.mean(accs))
    assert abs(s["mean"] - KIPF_TARGETS[name]) <= 2.0, s
    assert s["within"] is True
    assert all(r["epochs"] <= 200 for r in runs)
