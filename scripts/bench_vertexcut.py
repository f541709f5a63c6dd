"""DistGNN's three modes side by side (its Tables 4-5 and Figure 6): cd-0, cd-R and 0c on a
Libra vertex cut, GraphSAGE, test accuracy and per-epoch times in one run per dataset.

For each dataset (Cora, tolokers from ../shared/datasets), each model seed and each mode, one
``mpiexec -n P gcntrain train --scheme vertexcut --delay D --json`` run (one Libra partition,
seed 0); evaluation only at the last epoch (``--eval-every EPOCHS``) so the per-epoch medians
time the training step.  Prints the machine's load and its measured memory bandwidth before
and after, the replication factor, then per mode: test accuracy (mean over the seeds, and
the mean / smallest / largest difference from cd-0 with the same seed; the mean test loss),
median epoch time and
its ratio to cd-0, the local / remote aggregation split (pre-processing, communication,
post-processing; max over ranks) and the bytes sent per epoch (of the first seed's runs,
which run side by side).

    python scripts/bench_vertexcut.py [--ranks 4] [--epochs 200] [--delay 5] [--seeds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_simulate import gcntrain, triad_gbs  # noqa: E402

DATASETS = {
    "cora": "datasets/planetoid/ind.cora",
    "tolokers": "datasets/npz/tolokers.npz",
}


def machine() -> str:
    return (
        f"load {os.getloadavg()[0]:.2f}, memory bandwidth {triad_gbs():.1f} GB/s (numpy triad), "
        f"{os.cpu_count()} cores"
    )


def run_mode(graph: Path, ranks: int, epochs: int, delay: str, model: str, seed: int) -> dict:
    cmd = [
        "mpiexec",
        "-n",
        str(ranks),
        *gcntrain(),
        "train",
        str(graph),
        "--scheme",
        "vertexcut",
        "--delay",
        delay,
        "--model",
        model,
        "--epochs",
        str(epochs),
        "--early-stopping",
        "0",
        "--eval-every",
        str(epochs),
        "--seed",
        str(seed),
        "--json",
    ]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--delay", type=int, default=5)
    ap.add_argument("--model", default="sage")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--shared", default=str(Path(__file__).resolve().parents[1].parent / "shared"))
    ap.add_argument("--datasets", default="cora,tolokers")
    args = ap.parse_args()
    modes = ("0", str(args.delay), "none")
    print(f"before: {machine()}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.datasets.split(","):
            graph = Path(tmp) / f"{name}.h5"
            src = Path(args.shared) / DATASETS[name]
            subprocess.run(
                [*gcntrain(), "convert", str(src), "-o", str(graph)],
                check=True,
                capture_output=True,
            )
            runs = [
                {d: run_mode(graph, args.ranks, args.epochs, d, args.model, k) for d in modes}
                for k in range(args.seeds)
            ]
            res, base = runs[0], runs[0]["0"]
            print(
                f"\n{name}: {base['num_nodes']} nodes, {base['nnz']} entries, "
                f"{args.model}, {args.epochs} epochs, {args.ranks} ranks, {args.seeds} seeds, "
                f"replication factor {base['replication_factor']:.3f}"
            )
            print(
                f"{'mode':6} {'test acc':>8} {'gap mean/min/max (points)':>26} {'test loss':>9} "
                f"{'epoch ms':>9} {'ratio':>6} {'local':>7} {'pre':>7} {'comm':>7} {'post':>7} "
                f"{'MB sent/ep':>10}"
            )
            for d in modes:
                r = res[d]
                acc = np.array([run[d]["test_acc"] for run in runs])
                gap = 100 * (acc - np.array([run["0"]["test_acc"] for run in runs]))
                label = "0c" if d == "none" else f"cd-{d}"
                ratio = r["epoch_seconds"] / base["epoch_seconds"]
                gaps = f"{gap.mean():+.2f} / {gap.min():+.2f} / {gap.max():+.2f}"
                loss = np.mean([run[d]["test_loss"] for run in runs])
                print(
                    f"{label:6} {acc.mean():8.4f} {gaps:>26} {loss:9.4f} "
                    f"{1e3 * r['epoch_seconds']:9.2f}"
                    f" {ratio:6.2f} {1e3 * r['t_local_agg']:7.2f} {1e3 * r['t_remote_pre']:7.2f}"
                    f" {1e3 * r['t_remote_comm']:7.2f} {1e3 * r['t_remote_post']:7.2f}"
                    f" {r['bytes_sent_max'] / 1e6:10.3f}"
                )
    print(f"\nafter: {machine()}")
    print("times: medians over epochs of the max over ranks (ms); ratio: epoch time / cd-0's")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
