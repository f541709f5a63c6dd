#!/usr/bin/env python
"""Run README set-up command (a) as written, `mpiexec -n 4 gcntrain train`, and check it.

The embedded default dataset (`sbm-default`) trains on 4 ranks with `--scheme auto` (the
recommender's best exact configuration) and the reference hyperparameters (up to 200 epochs):
the run ends with status 0, names 4 ranks, the default dataset and the recommendation it
trained, and its test accuracy is above 0.75 (chance is 1/8).  The suite checks the same
command for 5 epochs against serial training (tests/test_mpi_cli.py) and the serial accuracy
on this dataset (tests/test_train.py); this is the whole run (about a minute on an idle
2-core machine, ranks oversubscribed).

Usage: python scripts/check_readme_default.py [--ranks 4]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.mpi.launch import gcntrain_exe, run_mpi  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=4)
    args = ap.parse_args(argv)
    res = run_mpi(args.ranks, [*gcntrain_exe(), "train", "--json", "--quiet"], timeout=900)
    if res.returncode != 0:
        print(f"FAILED: exit status {res.returncode}\n{res.stderr[-3000:]}")
        return 1
    d = res.json()
    rec = d.get("recommendation", {})
    checks = {
        "ranks": d["ranks"] == args.ranks,
        "default dataset": d["graph"] == "sbm-default",
        "trained the recommendation": d["scheme"] == rec.get("scheme"),
        "several configurations planned": rec.get("configurations", 0) > 1,
        "test accuracy > 0.75": d["test_acc"] > 0.75,
    }
    summary = {k: d[k] for k in ("scheme", "scheme_options", "epochs", "test_acc", "ranks")}
    print(json.dumps({**summary, "seconds": round(res.seconds, 1)}))
    for name, ok in checks.items():
        print(f"{'ok' if ok else 'FAILED':<7s} {name}")
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
