"""How long does ``--scheme auto`` take to choose, cold and cached?

Converts SNAP soc-Slashdot0902 (as the README's quick start does; or takes `--graph`) and
trains it for one epoch on `--ranks` ranks with the default ``--scheme auto``, `--runs`
times with an empty choice cache (cold: the ranks plan every exact configuration together)
and `--runs` times with the cache the cold run before it left (warm), interleaved.  Each run
uses its own cache directory holding this host's `local` profile (copied from the user's
cache, so that no run calibrates the machine; run `gcntrain bench --quick` once first if
there is none).  Prints, with the machine's load and memory bandwidth before and after: the
choice, the seconds the choice took (``recommendation.sweep_seconds``) and the wall time of
the whole command, per run and as medians.  Exits 1 when the median cold choice takes
longer than `--limit` seconds.

With `--compare DIR`, a second source tree (say the code before a change: ``git archive
REV | tar -x -C DIR``) runs the same cold runs in the same rounds, the two trees
alternating which goes first, with the load printed before each round; the script then
prints both medians, their ratio, and exits 1 if the two trees choose differently.  `--this
DIR` runs a tree other than the installed one.  Each tree first trains once, uncounted (its
kernels compiled, its files in the page cache).

    python scripts/check_auto_speed.py [--ranks 4] [--runs 3] [--limit 2] [--shared ../shared]
        [--graph G.h5] [--compare DIR] [--this DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_simulate import gcntrain, machine_state, mpiexec, slashdot  # noqa: E402

from gcntrain.simulate.local import cache_dir, cache_path  # noqa: E402


def run(graph: str, ranks: int, cache: Path, tree: str | None = None) -> tuple[dict, float]:
    """(``train --json``, wall seconds) of one epoch with ``--scheme auto`` (the package of
    source tree `tree`, else the installed one)."""
    env = {**os.environ, "GCNTRAIN_CACHE_DIR": str(cache)}
    if tree:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [tree, env.get("PYTHONPATH")]))
    cmd = [mpiexec(), "-n", str(ranks), *gcntrain(), "train", graph, "--epochs", "1"]
    t0 = time.perf_counter()
    out = subprocess.run([*cmd, "--json", "--quiet"], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode:
        raise SystemExit(out.stderr.strip().splitlines()[-1] if out.stderr else "train failed")
    return json.loads(out.stdout), wall


def fresh_cache(tmp: str, name: str, profile: Path) -> Path:
    """An empty cache directory holding this host's profile."""
    cache = Path(tmp) / name
    cache.mkdir()
    shutil.copy(profile, cache / profile.name)
    return cache


def one_tree(args, graph: str, tmp: str, profile: Path) -> int:
    """Cold and warm runs of one tree (the module docstring's first paragraph)."""
    got: dict[str, list[tuple[float, float]]] = {"cold": [], "warm": []}
    label = None
    for i in range(args.runs):
        cold = fresh_cache(tmp, f"cold-{i}", profile)
        warm = Path(tmp) / f"warm-{i}"
        for kind, cache in (("cold", cold), ("warm", warm)):
            if kind == "warm":  # the cache the cold run just left
                shutil.copytree(cold, warm)
            d, wall = run(graph, args.ranks, cache, args.this)
            rec = d["recommendation"]
            if rec["cached"] is not (kind == "warm"):
                raise SystemExit(f"{kind} run: cached is {rec['cached']}")
            label = rec["label"]
            got[kind].append((rec["sweep_seconds"], wall))
    print(f"auto chose {label} on {args.ranks} ranks ({Path(graph).name}, one epoch)")
    for kind, rows in got.items():
        runs = ", ".join(f"{c:.2f} s ({w:.1f} s wall)" for c, w in rows)
        med = statistics.median(c for c, _ in rows)
        print(f"{kind:<5} choice median {med:.2f} s; runs: {runs}")
    cold = statistics.median(c for c, _ in got["cold"])
    ok = cold <= args.limit
    print(f"cold choice {cold:.2f} s ({'within' if ok else 'beyond'} {args.limit:g} s)")
    return 0 if ok else 1


def two_trees(args, graph: str, tmp: str, profile: Path) -> int:
    """Cold runs of this tree and of `--compare`, interleaved (module docstring)."""
    trees = {"this": args.this, "other": args.compare}
    for name, tree in trees.items():  # uncounted: compiled kernels, the file cached
        run(graph, args.ranks, fresh_cache(tmp, f"warmup-{name}", profile), tree)
    got: dict[str, list[float]] = {name: [] for name in trees}
    labels: dict[str, set] = {name: set() for name in trees}
    for i in range(args.runs):
        order = list(trees) if i % 2 == 0 else list(trees)[::-1]
        line = [f"round {i + 1}: load {os.getloadavg()[0]:.2f}"]
        for name in order:
            d, wall = run(graph, args.ranks, fresh_cache(tmp, f"{name}-{i}", profile), trees[name])
            rec = d["recommendation"]
            got[name].append(rec["sweep_seconds"])
            labels[name].add(rec["label"])
            line.append(f"{name} {rec['sweep_seconds']:.2f} s ({wall:.1f} s wall)")
        print("; ".join(line), flush=True)
    med = {name: statistics.median(v) for name, v in got.items()}
    print(f"this tree ({args.this or 'installed'}) chose {sorted(labels['this'])}")
    print(f"other tree ({args.compare}) chose {sorted(labels['other'])}")
    print(
        f"cold choice median on {args.ranks} ranks: this {med['this']:.2f} s, other "
        f"{med['other']:.2f} s, ratio {med['this'] / med['other']:.2f}"
    )
    return 0 if labels["this"] == labels["other"] and len(labels["this"]) == 1 else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--limit", type=float, default=2.0)
    ap.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared"))
    ap.add_argument("--graph", help="a graph file to choose for (default: Slashdot, converted)")
    ap.add_argument("--compare", help="a second source tree, timed in the same rounds")
    ap.add_argument("--this", help="the source tree to time (default: the installed package)")
    args = ap.parse_args()
    profile = cache_path()
    if not profile.exists():
        raise SystemExit(f"no local profile in {cache_dir()}: run `gcntrain bench --quick` first")
    print(f"before: {machine_state()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        graph = args.graph or slashdot(args.shared, tmp)
        status = (two_trees if args.compare else one_tree)(args, graph, tmp, profile)
    print(f"after: {machine_state()}")
    return status


if __name__ == "__main__":
    sys.exit(main())
