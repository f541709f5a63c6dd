"""SuperGCN's accuracy table (its Table 3): the four settings fp32 / Int2 messages x without /
with masked label propagation, `--scheme hier` (hybrid aggregation) on METIS partitions.

For each dataset (Cora, tolokers from ../shared/datasets) and seed, one ``mpiexec -n P
gcntrain train --scheme hier --json`` run per setting, no early stopping.  Prints per setting
the test accuracy (mean over seeds; difference from fp32 without LP: mean / smallest /
largest, in points), the test loss, and of the first seed the bytes the training passes'
aggregation exchanges sent (all ranks and epochs; quantization parameters included) with
their ratio to fp32 without LP, plus the machine's load.  ``--quant-group N`` sets the rows
per zero point and scale of the Int2 settings; ``--norm layer`` adds LayerNorm to all four.

    python scripts/bench_hier_accuracy.py [--ranks 4] [--epochs 200] [--seeds 3] [--lp 0.5]
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
from bench_simulate import gcntrain, training_agg_bytes  # noqa: E402

DATASETS = {
    "cora": "datasets/planetoid/ind.cora",
    "tolokers": "datasets/npz/tolokers.npz",
}


def run(graph: Path, part: Path, ranks: int, epochs: int, seed: int, extra: list[str]) -> dict:
    """One run's --json summary plus ``agg_bytes``: the bytes sent in the training passes'
    aggregation exchanges (phases ``L<i>.<dir>.agg``) over all ranks and epochs, from its
    --per-rank table."""
    table = graph.with_suffix(f".{seed}.csv")
    cmd = ["mpiexec", "-n", str(ranks), *gcntrain(), "train", str(graph), "--scheme", "hier"]
    cmd += ["--partition", str(part), "--epochs", str(epochs), "--early-stopping", "0"]
    cmd += ["--eval-every", str(epochs), "--seed", str(seed), "--json", *extra]
    cmd += ["--per-rank", str(table)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    d = json.loads(out.stdout)
    d["agg_bytes"] = training_agg_bytes(table)
    return d


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--lp", type=float, default=0.5)
    ap.add_argument("--norm", default="none")
    ap.add_argument("--quant-group", type=int, default=1)
    ap.add_argument("--shared", default=str(Path(__file__).resolve().parents[1].parent / "shared"))
    ap.add_argument("--datasets", default="cora,tolokers")
    args = ap.parse_args()
    settings = {
        "fp32 w/o LP": [],
        "fp32 w/ LP": ["--label-prop", str(args.lp)],
        "Int2 w/o LP": ["--quant-bits", "2", "--quant-group", str(args.quant_group)],
        "Int2 w/ LP": [
            "--quant-bits",
            "2",
            "--quant-group",
            str(args.quant_group),
            "--label-prop",
            str(args.lp),
        ],
    }
    print(f"before: load {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.datasets.split(","):
            graph, part = Path(tmp) / f"{name}.h5", Path(tmp) / f"{name}-metis.h5"
            src = Path(args.shared) / DATASETS[name]
            for cmd in (
                ["convert", str(src), "-o", str(graph)],
                [
                    "partition",
                    str(graph),
                    "-m",
                    "metis",
                    "--parts",
                    str(args.ranks),
                    "-o",
                    str(part),
                ],
            ):
                subprocess.run([*gcntrain(), *cmd], check=True, capture_output=True)
            extra = ["--norm", args.norm]
            runs = [
                {
                    k: run(graph, part, args.ranks, args.epochs, s, v + extra)
                    for k, v in settings.items()
                }
                for s in range(args.seeds)
            ]
            print(
                f"\n{name}: GCN, {args.epochs} epochs, {args.ranks} ranks, METIS, {args.seeds} "
                f"seeds, label propagation rate {args.lp}, norm {args.norm}, Int2 rows per "
                f"parameter pair {args.quant_group or 'message'}"
            )
            print(
                f"{'setting':12} {'test acc':>8} {'vs fp32 w/o LP mean/min/max':>28} "
                f"{'test loss':>9} {'agg MB sent':>11} {'ratio':>8}"
            )
            base = np.array([r["fp32 w/o LP"]["test_acc"] for r in runs])
            b0 = runs[0]["fp32 w/o LP"]["agg_bytes"]
            for k in settings:
                acc = np.array([r[k]["test_acc"] for r in runs])
                gap = 100 * (acc - base)
                loss = np.mean([r[k]["test_loss"] for r in runs])
                sent = runs[0][k]["agg_bytes"]
                print(
                    f"{k:12} {acc.mean():8.4f} "
                    f"{f'{gap.mean():+.2f} / {gap.min():+.2f} / {gap.max():+.2f}':>28} "
                    f"{loss:9.4f} {sent / 1e6:11.3f} 1/{b0 / max(sent, 1):6.2f}"
                )
    print(f"\nafter: load {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
