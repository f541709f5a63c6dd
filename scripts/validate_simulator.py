"""Predicted vs measured epoch time of every scheme at np = 2 and 4 on an R-MAT graph of about
1M stored edges, with a `local` profile calibrated by `gcntrain bench` in the same run.

Each configuration is trained `--runs` times (`mpiexec -n P gcntrain train --json`, the
median epoch of each run), and the prediction (`gcntrain simulate --machine PROFILE --nodes 1
--json`, key ``epoch_seconds``) is compared to the median over the runs; the spread of the
runs ((max - min) / median) says how noisy the machine was.  Prints the machine's load and
memory bandwidth before and after.

    python scripts/validate_simulator.py [--runs 3] [--epochs 12] [--scale 16] [--profile F]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_simulate import gcntrain, machine_state, mpiexec  # noqa: E402

#: (label, scheme, options at np 2, options at np 4)
CASES = [
    ("1d", "1d", [], []),
    ("1.5d c=2", "1.5d", ["-c", "2"], ["-c", "2"]),
    ("p2p", "p2p", [], []),
    ("2d", "2d", ["--grid", "1x2"], ["--grid", "2x2"]),
    ("3d", "3d", ["--grid", "1x1x2"], ["--grid", "2x2x1"]),
    ("plexus", "plexus", ["--grid", "1x1x2"], ["--grid", "1x2x2"]),
    ("vertexcut cd-0", "vertexcut", ["--delay", "0"], ["--delay", "0"]),
    ("vertexcut cd-5", "vertexcut", ["--delay", "5"], ["--delay", "5"]),
    ("hier", "hier", [], []),
    ("hier int2", "hier", ["--quant-bits", "2"], ["--quant-bits", "2"]),
]


def measured(graph: str, np_: int, scheme: str, opts: list[str], epochs: int) -> float:
    cmd = [mpiexec(), "-n", str(np_), *gcntrain(), "train", graph, "--scheme", scheme, *opts]
    out = subprocess.run(
        [*cmd, "--epochs", str(epochs), "--json"], capture_output=True, text=True, check=True
    )
    return float(json.loads(out.stdout)["epoch_seconds"])


def predicted(graph, np_, scheme, opts, epochs, profile) -> dict:
    cmd = [*gcntrain(), "simulate", graph, "-P", str(np_), "--scheme", scheme, *opts]
    cmd += ["--epochs", str(epochs), "--machine", profile, "--nodes", "1", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--scale", type=int, default=16)
    ap.add_argument("--edge-factor", type=int, default=8)
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--profile", default=None, help="a profile file [default: bench one now]")
    ap.add_argument("--only", default=None, help="comma-separated case labels")
    ap.add_argument("--tolerance", type=float, default=0.25)
    args = ap.parse_args()
    cases = CASES
    if args.only:
        keep = set(args.only.split(","))
        cases = [c for c in CASES if c[0] in keep]
    print(f"before: {machine_state()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        graph = str(Path(tmp) / "rmat.h5")
        gen = [*gcntrain(), "generate", "rmat", "-o", graph, "--scale", str(args.scale)]
        info = subprocess.run(
            [*gen, "--edge-factor", str(args.edge_factor), "--json"],
            capture_output=True,
            text=True,
            check=True,
        )
        g = json.loads(info.stdout)
        print(
            f"graph: R-MAT scale {args.scale}, {g.get('nodes')} nodes, {g.get('nnz')} stored edges",
            flush=True,
        )
        profile = args.profile
        if profile is None:
            profile = str(Path(tmp) / "local.toml")
            t0 = time.perf_counter()
            subprocess.run([*gcntrain(), "bench", "-o", profile], check=True)
            print(f"calibrated in {time.perf_counter() - t0:.1f} s", flush=True)
        head = f"{'scheme':<16}{'np':>3}{'measured ms':>13}{'spread':>8}{'predicted ms':>14}"
        print(head + f"{'error':>8}  breakdown (critical rank)")
        worst, rows = 0.0, []
        for np_ in [int(x) for x in args.ranks.split(",")]:
            for label, scheme, o2, o4 in cases:
                opts = o2 if np_ == 2 else o4
                runs = [measured(graph, np_, scheme, opts, args.epochs) for _ in range(args.runs)]
                med = statistics.median(runs)
                spread = (max(runs) - min(runs)) / med if med > 0 else 0.0
                p = predicted(graph, np_, scheme, opts, args.epochs, profile)
                err = p["epoch_seconds"] / med - 1.0
                worst = max(worst, abs(err))
                b = p["breakdown"]
                print(
                    f"{label:<16}{np_:>3}{med * 1e3:>13.1f}{spread:>8.1%}"
                    f"{p['epoch_seconds'] * 1e3:>14.1f}{err:>+8.1%}  compute "
                    f"{b['compute'] * 1e3:.1f}, comm {b['comm'] * 1e3:.1f}, wait "
                    f"{b['wait'] * 1e3:.1f} ms",
                    flush=True,
                )
                rows.append((label, np_, med, spread, p["epoch_seconds"], err))
    print(f"after: {machine_state()}")
    ok = worst <= args.tolerance
    print(f"worst error {worst:.1%} ({'within' if ok else 'beyond'} {args.tolerance:.0%})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
