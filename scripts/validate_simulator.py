"""Predicted vs measured epoch time of every scheme at np = 1 (serial), 2 and 4, on an R-MAT
graph of about 1M stored edges and on Cora, with a profile calibrated by `gcntrain bench` in
the same run.

Each configuration is trained `--runs` times (`mpiexec -n P gcntrain train --json`, the
median epoch of each run; np 1 without mpiexec) in interleaved rounds (every configuration
once per round, so a slow spell of the machine does not fall on one configuration), and the
prediction (`gcntrain simulate --machine PROFILE --nodes 1 --json`, key ``epoch_seconds``)
is compared to the median over the runs; the spread of the runs ((max - min) / median) says
how noisy the machine was.  ``--save F`` keeps the measured runs; ``--measured F`` prices
them again (for working on the model without re-measuring; say so beside any table it
prints).  Prints the machine's load and memory bandwidth before and after; exits 1 when a
configuration is beyond ``--tolerance``.

    python scripts/validate_simulator.py [--runs 3] [--epochs 12] [--graphs rmat,cora]
        [--ranks 1,2,4] [--profile F] [--shared ../shared]
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


#: the one-rank case
SERIAL = ("serial", "serial", [], [])


def measured(graph: str, np_: int, scheme: str, opts: list[str], epochs: int) -> float:
    launch = [mpiexec(), "-n", str(np_)] if np_ > 1 else []
    cmd = [*launch, *gcntrain(), "train", graph, "--scheme", scheme, *opts]
    out = subprocess.run(
        [*cmd, "--epochs", str(epochs), "--json"], capture_output=True, text=True, check=True
    )
    return float(json.loads(out.stdout)["epoch_seconds"])


def predicted(graph, np_, scheme, opts, epochs, profile) -> dict:
    cmd = [*gcntrain(), "simulate", graph, "-P", str(np_), "--scheme", scheme, *opts]
    cmd += ["--epochs", str(epochs), "--machine", profile, "--nodes", "1", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def make_graphs(names: list[str], tmp: str, args) -> dict[str, str]:
    """{label: graph file} of the graphs asked for (R-MAT generated, Cora converted)."""
    out = {}
    for name in names:
        path = str(Path(tmp) / f"{name}.h5")
        if name == "rmat":
            gen = [*gcntrain(), "generate", "rmat", "-o", path, "--scale", str(args.scale)]
            gen += ["--edge-factor", str(args.edge_factor), "--json"]
            label = f"R-MAT {args.scale}"
        elif name == "cora":
            src = Path(args.shared) / "datasets" / "planetoid" / "ind.cora"
            gen = [*gcntrain(), "convert", str(src), "-o", path, "--json"]
            label = "Cora"
        else:
            raise SystemExit(f"unknown graph {name!r} (rmat, cora)")
        g = json.loads(subprocess.run(gen, capture_output=True, text=True, check=True).stdout)
        print(f"graph: {label}, {g.get('nodes')} nodes, {g.get('nnz')} stored edges", flush=True)
        out[label] = path
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--scale", type=int, default=16)
    ap.add_argument("--edge-factor", type=int, default=8)
    ap.add_argument("--graphs", default="rmat,cora")
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared"))
    ap.add_argument("--profile", default=None, help="a profile file [default: bench one now]")
    ap.add_argument("--only", default=None, help="comma-separated case labels")
    ap.add_argument("--tolerance", type=float, default=0.25)
    ap.add_argument("--save", default=None, help="write the measured runs to this JSON file")
    ap.add_argument(
        "--measured",
        default=None,
        help="price the runs of a --save file instead of measuring (same graph settings)",
    )
    args = ap.parse_args()
    cases = CASES
    if args.only:
        keep = set(args.only.split(","))
        cases = [c for c in CASES if c[0] in keep]
    before = machine_state()
    print(f"before: {before}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        graphs = make_graphs(args.graphs.split(","), tmp, args)
        profile = args.profile
        if profile is None:
            profile = str(Path(tmp) / "local.toml")
            t0 = time.perf_counter()
            subprocess.run([*gcntrain(), "bench", "-o", profile], check=True)
            print(f"calibrated in {time.perf_counter() - t0:.1f} s", flush=True)
        jobs = []
        for glabel in graphs:
            for np_ in [int(x) for x in args.ranks.split(",")]:
                for case in [SERIAL] if np_ == 1 else cases:
                    jobs.append((glabel, np_, case))
        times: dict = {}
        if args.measured:
            saved = json.loads(Path(args.measured).read_text())
            times = {(r.get("graph", ""), r["np"], r["label"]): r["runs"] for r in saved["rows"]}
            print(f"measured times read from {args.measured} ({saved['state']})", flush=True)
        else:
            # interleaved rounds: every configuration once per round, so a slow spell of
            # the machine spreads over all configurations instead of hitting one
            for _ in range(args.runs):
                for glabel, np_, (label, scheme, o2, o4) in jobs:
                    opts = o2 if np_ == 2 else o4
                    t = measured(graphs[glabel], np_, scheme, opts, args.epochs)
                    times.setdefault((glabel, np_, label), []).append(t)
            if args.save:  # kept before pricing, so that a failed prediction loses no run
                state = f"measured {time.strftime('%Y-%m-%d %H:%M')}, before: {before}"
                rows = [
                    {"graph": g, "np": n, "label": lb, "runs": r} for (g, n, lb), r in times.items()
                ]
                Path(args.save).write_text(json.dumps({"state": state, "rows": rows}, indent=1))
        head = f"{'graph':<10}{'scheme':<16}{'np':>3}{'measured ms':>13}{'spread':>8}"
        print(head + f"{'predicted ms':>14}{'error':>8}  breakdown (critical rank)")
        worst, rows = 0.0, []
        for glabel, np_, (label, scheme, o2, o4) in jobs:
            opts = o2 if np_ == 2 else o4
            runs = times[(glabel, np_, label)]
            med = statistics.median(runs)
            spread = (max(runs) - min(runs)) / med if med > 0 else 0.0
            p = predicted(graphs[glabel], np_, scheme, opts, args.epochs, profile)
            err = p["epoch_seconds"] / med - 1.0
            worst = max(worst, abs(err))
            b = p["breakdown"]
            print(
                f"{glabel:<10}{label:<16}{np_:>3}{med * 1e3:>13.2f}{spread:>8.1%}"
                f"{p['epoch_seconds'] * 1e3:>14.2f}{err:>+8.1%}  compute "
                f"{b['compute'] * 1e3:.1f}, comm {b['comm'] * 1e3:.1f}, wait "
                f"{b['wait'] * 1e3:.1f} ms",
                flush=True,
            )
            rows.append(
                {
                    "graph": glabel,
                    "label": label,
                    "np": np_,
                    "runs": runs,
                    "predicted": p["epoch_seconds"],
                }
            )
        if args.save and not args.measured:
            state = f"measured {time.strftime('%Y-%m-%d %H:%M')}, before: {before}"
            Path(args.save).write_text(json.dumps({"state": state, "rows": rows}, indent=1))
    print(f"after: {machine_state()}")
    ok = worst <= args.tolerance
    print(f"worst error {worst:.1%} ({'within' if ok else 'beyond'} {args.tolerance:.0%})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
