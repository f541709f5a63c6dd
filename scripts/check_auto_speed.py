"""How long does ``--scheme auto`` take to choose, cold and cached?

Converts SNAP soc-Slashdot0902 (as the README's quick start does) and trains it for one
epoch on `--ranks` ranks with the default ``--scheme auto``, `--runs` times with an empty
choice cache (cold: the ranks plan every exact configuration together) and `--runs` times
with the cache the cold run before it left (warm), interleaved.  Each run uses its own
cache directory holding this host's `local` profile (copied from the user's cache, so that
no run calibrates the machine; run `gcntrain bench --quick` once first if there is none).
Prints, with the machine's load and memory bandwidth before and after: the choice, the
seconds the choice took (``recommendation.sweep_seconds``) and the wall time of the whole
command, per run and as medians.  Exits 1 when the median cold choice takes longer than
`--limit` seconds.

    python scripts/check_auto_speed.py [--ranks 4] [--runs 3] [--limit 2] [--shared ../shared]
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


def run(graph: str, ranks: int, cache: Path) -> tuple[dict, float]:
    """(``train --json``, wall seconds) of one epoch with ``--scheme auto``."""
    env = {**os.environ, "GCNTRAIN_CACHE_DIR": str(cache)}
    cmd = [mpiexec(), "-n", str(ranks), *gcntrain(), "train", graph, "--epochs", "1"]
    t0 = time.perf_counter()
    out = subprocess.run([*cmd, "--json", "--quiet"], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if out.returncode:
        raise SystemExit(out.stderr.strip().splitlines()[-1] if out.stderr else "train failed")
    return json.loads(out.stdout), wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--limit", type=float, default=2.0)
    ap.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared"))
    args = ap.parse_args()
    profile = cache_path()
    if not profile.exists():
        raise SystemExit(f"no local profile in {cache_dir()}: run `gcntrain bench --quick` first")
    print(f"before: {machine_state()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        graph = slashdot(args.shared, tmp)
        got: dict[str, list[tuple[float, float]]] = {"cold": [], "warm": []}
        label = None
        for i in range(args.runs):
            cold = Path(tmp) / f"cold-{i}"
            cold.mkdir()
            shutil.copy(profile, cold / profile.name)
            warm = Path(tmp) / f"warm-{i}"
            for kind, cache in (("cold", cold), ("warm", warm)):
                if kind == "warm":  # the cache the cold run just left
                    shutil.copytree(cold, warm)
                d, wall = run(graph, args.ranks, cache)
                rec = d["recommendation"]
                if rec["cached"] is not (kind == "warm"):
                    raise SystemExit(f"{kind} run: cached is {rec['cached']}")
                label = rec["label"]
                got[kind].append((rec["sweep_seconds"], wall))
    print(f"auto chose {label} on {args.ranks} ranks (soc-Slashdot0902, one epoch)")
    for kind, rows in got.items():
        runs = ", ".join(f"{c:.2f} s ({w:.1f} s wall)" for c, w in rows)
        med = statistics.median(c for c, _ in rows)
        print(f"{kind:<5} choice median {med:.2f} s; runs: {runs}")
    cold = statistics.median(c for c, _ in got["cold"])
    ok = cold <= args.limit
    print(f"cold choice {cold:.2f} s ({'within' if ok else 'beyond'} {args.limit:g} s)")
    print(f"after: {machine_state()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
