"""Training outputs: metrics.jsonl, config.json, weights.h5, predictions.h5, and
config.toml (the command's resolved ``[train]`` table, when the caller gives it).

Each file is written to a temporary name in the output directory and renamed when complete,
so a reader never sees a partial file.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from gcntrain.jsonutil import json_default

FILES = ("metrics.jsonl", "config.json", "weights.h5", "predictions.h5", "config.toml")


def check_out_dir(out_dir) -> None:
    """Fail early (before training) when `out_dir` cannot become an output directory."""
    from gcntrain.data.atomic import probe_dir
    from gcntrain.errors import InputError

    p = Path(out_dir)
    if p.exists() and not p.is_dir():
        raise InputError("--out exists and is not a directory", str(p))
    parent = p if p.exists() else next((a for a in p.absolute().parents if a.exists()), None)
    if parent is None or not os.access(parent, os.W_OK | os.X_OK):
        raise InputError("--out is not writable", str(p))
    try:
        probe_dir(p, keep=False)
    except OSError as e:
        raise InputError(f"--out is not writable ({e.strerror or e})", str(p)) from None


def metrics_text(history: Iterable) -> str:
    """One JSON object per epoch (records with ``to_dict`` or plain dicts), one per line;
    the best epoch's (`gcntrain.model.state.best_record`, for `EpochRecord`s) has
    ``"best": true``."""
    from gcntrain.model.state import EpochRecord, best_record

    history = list(history)
    best = best_record([r for r in history if isinstance(r, EpochRecord)])
    lines = []
    for r in history:
        d = r.to_dict() if hasattr(r, "to_dict") else r
        if r is best:
            d = {**d, "best": True}
        lines.append(json.dumps(d, default=json_default))
    return "".join(line + "\n" for line in lines)


def weights_bytes(weights: list[dict[str, np.ndarray]], layers: list[dict] | None = None):
    """HDF5 with one group per layer (``layer0``, ``layer1``, ...), one dataset per parameter;
    layer descriptions (kind, sizes, ...) as group attributes (the file's bytes)."""
    from gcntrain.data.atomic import h5_bytes

    def build(f) -> None:
        f.attrs["num_layers"] = len(weights)
        for i, lw in enumerate(weights):
            g = f.create_group(f"layer{i}")
            for k, a in lw.items():
                g.create_dataset(k, data=np.asarray(a))
            for k, v in (layers[i] if layers else {}).items():
                g.attrs[k] = v

    return h5_bytes(build)


def predictions_bytes(
    node_ids: np.ndarray, predictions: np.ndarray, labels: np.ndarray | None = None
):
    """HDF5 with datasets ``node_ids`` (int64), ``predicted`` (int64) and ``label`` (int64,
    -1 = unlabeled; all -1 when labels are not given) (the file's bytes)."""
    from gcntrain.data.atomic import h5_bytes

    node_ids = np.asarray(node_ids, dtype=np.int64)
    predictions = np.asarray(predictions, dtype=np.int64)
    if node_ids.shape != predictions.shape:
        raise ValueError("node_ids and predictions must have the same length")
    lab = (
        np.full(node_ids.shape, -1, dtype=np.int64)
        if labels is None
        else np.asarray(labels, dtype=np.int64)
    )

    def build(f) -> None:
        f.create_dataset("node_ids", data=node_ids)
        f.create_dataset("predicted", data=predictions)
        f.create_dataset("label", data=lab)

    return h5_bytes(build)


def write_outputs(
    out_dir: str | os.PathLike,
    config_dict: dict,
    history: Iterable,
    weights: list[dict[str, np.ndarray]],
    predictions: np.ndarray,
    node_ids: np.ndarray,
    labels: np.ndarray | None = None,
    layers: list[dict] | None = None,
    config_toml: str | None = None,
) -> dict[str, str]:
    """Write the output files into `out_dir` (created if missing).

    Parameters
    ----------
    out_dir : output directory.
    config_dict : resolved configuration (JSON-serialisable).
    history : per-epoch records (``EpochRecord`` or dicts).
    weights : final parameters, one {name: array} per layer.
    predictions, node_ids : predicted class per node and the node's global id.
    labels : true labels of those nodes (-1 unlabeled), optional.
    layers : per-layer descriptions stored as attributes in weights.h5, optional.
    config_toml : the command's resolved configuration as TOML (`gcntrain.cli.config_file`),
        written as config.toml; without it (an API call) config.toml is not written.

    Returns
    -------
    {file name: path}
    """
    from gcntrain.data.atomic import exclusive_lock, staged
    from gcntrain.errors import OutputError

    out = Path(out_dir)
    created = not out.exists()
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"cannot create the output directory: {e.strerror}", str(out)) from None
    paths = {n: out / n for n in FILES if n != "config.toml" or config_toml is not None}
    config_text = json.dumps(config_dict, default=json_default, indent=2, sort_keys=True) + "\n"
    # the files are one output: all written, then all renamed (none on a failure), under an
    # exclusive lock of the directory, so that runs writing the same -o at once replace the
    # set one after the other and the folder never mixes their files
    try:
        waiting = f"waiting for another run to finish writing {out}"
        with exclusive_lock(out, waiting), staged(list(paths.values())) as put:
            put(paths["metrics.jsonl"], metrics_text(history).encode())
            put(paths["config.json"], config_text.encode())
            put(paths["weights.h5"], weights_bytes(weights, layers))
            put(paths["predictions.h5"], predictions_bytes(node_ids, predictions, labels))
            if config_toml is not None:
                put(paths["config.toml"], config_toml.encode())
    except BaseException:
        if created:  # leave no trace of a failed output
            shutil.rmtree(out, ignore_errors=True)
        raise
    return {k: str(v) for k, v in paths.items()}
