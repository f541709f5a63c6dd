"""Side-by-side epoch times of the thread settings of two source trees (e.g. before and after
a change to `gcntrain.kernels.threads`), alternated in one run on one graph, with the
machine's load and memory bandwidth printed before and after.

    python scripts/bench_threads.py OLD_TREE [--rounds 3] [--scale 16] [--epochs 10]

Each round runs, for both trees, a serial run at 1 and at all threads and `mpiexec -n 2`
runs of 1d and p2p; each figure is the median over rounds of the runs' median epoch, and
the table gives new / old ratios.  Both trees run in this interpreter's environment with
``PYTHONPATH`` pointing at their source.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

#: the environment as the user started this script: importing gcntrain (below) sets defaults
#: such as OMP_WAIT_POLICY in this process, which must not leak into the old tree's runs
ENV = dict(os.environ)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_simulate import machine_state, mpiexec  # noqa: E402

NEW = Path(__file__).resolve().parent.parent
#: the command line of whichever tree PYTHONPATH selects
CLI = [sys.executable, "-c", "from gcntrain.cli.main import entry; entry()"]


def run(tree: Path, np_: int, args: list[str], cwd: str) -> float:
    env = {**ENV, "PYTHONPATH": str(tree)}
    cmd = [*CLI, "train", *args, "--json"]
    if np_ > 1:
        cmd = [mpiexec(), "-n", str(np_), *cmd]
    # cwd outside both trees: ``python -c`` puts the working directory before PYTHONPATH
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env, cwd=cwd)
    return float(json.loads(out.stdout)["epoch_seconds"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--scale", type=int, default=16)
    ap.add_argument("--epochs", type=int, default=10)
    a = ap.parse_args()
    cores = len(os.sched_getaffinity(0))
    print(f"before: {machine_state()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        g = str(Path(tmp) / "rmat.h5")
        subprocess.run(
            [*CLI, "generate", "rmat", "-o", g, "--scale", str(a.scale), "--edge-factor", "8"],
            capture_output=True,
            check=True,
            env={**os.environ, "PYTHONPATH": str(NEW)},
        )
        ep = ["--epochs", str(a.epochs)]
        cases = [
            ("serial, 1 thread", 1, [g, *ep, "--threads", "1"]),
            (f"serial, {cores} threads", 1, [g, *ep, "--threads", str(cores)]),
            ("1d, np 2", 2, [g, *ep, "--scheme", "1d"]),
            ("p2p, np 2", 2, [g, *ep, "--scheme", "p2p"]),
        ]
        got = {(c[0], t): [] for c in cases for t in ("old", "new")}
        for _ in range(a.rounds):
            for label, np_, args in cases:
                for tag, tree in (("old", a.old), ("new", NEW)):
                    got[(label, tag)].append(run(tree, np_, args, tmp))
    print(f"R-MAT scale {a.scale}, {a.epochs} epochs, median of {a.rounds} rounds")
    print(f"{'case':<22}{'old ms':>10}{'new ms':>10}{'new/old':>9}")
    for label, _, _ in cases:
        o, n = statistics.median(got[(label, "old")]), statistics.median(got[(label, "new")])
        print(f"{label:<22}{o * 1e3:>10.1f}{n * 1e3:>10.1f}{n / o:>9.2f}")
    print(f"after: {machine_state()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
