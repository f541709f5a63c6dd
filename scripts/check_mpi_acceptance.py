#!/usr/bin/env python
"""Run the full MPI acceptance matrix of `tests/mpi/worker.py`, one mpiexec launch per case.

The test suite runs a reduced matrix (tests/test_mpi_schemes.py through
`tests/mpi/worker_fast.py`: Cora in float64 only in the 1D / 1.5D / p2p / 2D case, Cora on
some split-3D and Plexus grids, no Cora at np = 8, 20 Cora epochs for the scheme-versus-serial
accuracy).  This script runs every case as `worker.py` defines it, at the rank counts the suite
ran before it was cut down:

- `equiv`, `equivvertexcut`, `equivhier`, `ops`, `directed`, `volume` at np = 1, 2, 3, 4;
- `equiv3d`, `equivplexus` at np = 1, 2, 3, 4 and 8 (Cora on every grid, both models on the
  n = 8 graph);
- `delayed` at np = 2, 4; `nomask` at np = 1, 3; `resume` at np = 2, 3;
- `accuracy` at np = 4: full Cora training (reference hyperparameters, up to 200 epochs with
  early stopping) under 1D, 1.5D, p2p (METIS), 2D, split-3D, Plexus (plain and double
  permutation) and the vertex cut gives serial's test accuracy, above 0.7 for every scheme.

Each line printed is one launch: case, ranks, verdict, seconds.  Exit status 0 when every
case passed, 1 otherwise.  About 10 minutes on an idle 2-core machine (ranks oversubscribed).

Usage: python scripts/check_mpi_acceptance.py [--case NAME ...] [--ranks P ...] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.mpi.launch import run_worker  # noqa: E402

#: case -> rank counts (the suite's matrix before it was reduced)
MATRIX: dict[str, list[int]] = {
    "equiv": [1, 2, 3, 4],
    "equiv3d": [1, 2, 3, 4, 8],
    "equivplexus": [1, 2, 3, 4, 8],
    "equivvertexcut": [1, 2, 3, 4],
    "equivhier": [1, 2, 3, 4],
    "delayed": [2, 4],
    "ops": [1, 2, 3, 4],
    "directed": [1, 2, 3, 4],
    "nomask": [1, 3],
    "volume": [1, 2, 3, 4],
    "resume": [2, 3],
    "accuracy": [4],
}


def check(case: str, nprocs: int, timeout: float) -> dict:
    """One launch of `worker.py case` on `nprocs` ranks: its verdict and wall seconds."""
    try:
        res = run_worker(nprocs, case, timeout=timeout)
        verdict = res.json()
        ok = bool(verdict["ok"]) and res.returncode == 0
        if case == "accuracy":
            ok &= all(d["test_acc"] > 0.7 for d in verdict["details"])
        out = {"case": case, "ranks": nprocs, "ok": ok, "seconds": round(res.seconds, 1)}
        if not ok:
            out["details"] = verdict["details"]
    except AssertionError as e:  # no verdict line, or killed at the time limit
        out = {"case": case, "ranks": nprocs, "ok": False, "error": str(e)[-3000:]}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--case", nargs="+", choices=sorted(MATRIX), help="default: every case")
    ap.add_argument("--ranks", nargs="+", type=int, help="only these rank counts")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per launch")
    ap.add_argument("--json", action="store_true", help="one JSON object per launch")
    args = ap.parse_args(argv)
    results = []
    for case in args.case or list(MATRIX):
        for nprocs in MATRIX[case]:
            if args.ranks and nprocs not in args.ranks:
                continue
            r = check(case, nprocs, args.timeout)
            results.append(r)
            if args.json:
                print(json.dumps(r), flush=True)
            else:
                status = "ok" if r["ok"] else "FAILED"
                print(
                    f"{case:<16s} np={nprocs}  {status:<6s} {r.get('seconds', '-')} s", flush=True
                )
                if not r["ok"]:
                    print(f"  {json.dumps(r.get('details') or r.get('error'))[:3000]}", flush=True)
    return 0 if results and all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
