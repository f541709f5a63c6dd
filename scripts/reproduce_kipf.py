#!/usr/bin/env python
"""Reproduce GCN test accuracy on Cora/Citeseer (Kipf & Welling 2017, Table 2).

Trains the reference 2-layer GCN (16 hidden, dropout 0.5, Adam 0.01, weight decay 5e-4 on the
first layer, <= 200 epochs, early-stopping window 10) once per seed on the public Planetoid
split and prints the mean and standard deviation of the test accuracy, the paper's figure and
whether the mean is within the band (default 1 point).

Usage: python scripts/reproduce_kipf.py [--datasets cora citeseer] [--seeds 10]
                                        [--data-dir DIR] [--dtype float32] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from gcntrain.data.convert import load_planetoid
from gcntrain.errors import InputError
from gcntrain.model.kipf import KIPF_TARGETS, planetoid_prefix, seed_accuracies, summarize_runs


def default_data_dir() -> Path:
    """shared/datasets beside the repository, else /work/shared/datasets."""
    beside = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"
    return beside if beside.is_dir() else Path("/work/shared/datasets")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--datasets", nargs="+", default=["cora", "citeseer"], choices=sorted(KIPF_TARGETS)
    )
    ap.add_argument("--seeds", type=int, default=10, help="number of seeds (0..N-1)")
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="directory holding planetoid/ind.<name>.* (default: shared/datasets)",
    )
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    ap.add_argument("--band", type=float, default=1.0, help="accepted distance in points")
    ap.add_argument("--json", action="store_true", help="one JSON object per dataset")
    args = ap.parse_args(argv)
    data_dir = args.data_dir or default_data_dir()
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    ok = True
    for name in args.datasets:
        try:
            graph = load_planetoid(planetoid_prefix(data_dir, name))
        except InputError as e:
            print(f"reproduce_kipf: error: {e}", file=sys.stderr)
            return 2
        t0 = time.perf_counter()
        runs = seed_accuracies(graph, seeds, dtype=args.dtype)
        s = summarize_runs(name, runs, band=args.band)
        s["seconds"] = time.perf_counter() - t0
        ok = ok and s["within"] is not False
        if args.json:
            print(json.dumps({**s, "accuracies": [r["test_acc"] for r in runs]}))
        else:
            verdict = "within" if s["within"] else "NOT within"
            print(
                f"{name:9s} test accuracy {s['mean']:.2f} +- {s['std']:.2f} % over "
                f"{s['seeds']} seeds (min {s['min']:.1f}, max {s['max']:.1f}; "
                f"{s['mean_epochs']:.0f} epochs on average); paper {s['target']:.1f}: "
                f"{verdict} {args.band:g} point ({s['seconds']:.1f} s)"
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
