"""Time `gcntrain simulate` at P = 8192 on soc-Slashdot0902 (symmetrized, self-loops added).

Each scheme runs in its own process (its peak RSS, from getrusage, is its own): 1d, p2p on a random
partition, 2d on a 64 x 128 grid, 3d and plexus on 16 x 16 x 32; GCN 128 -> 16 -> 16, 200
epochs.
Prints the machine's load and measured memory bandwidth, then per scheme the wall time, peak
RSS and the planned traffic of a steady-state epoch.

    python scripts/bench_simulate.py [--ranks 8192] [--shared ../shared]

It also holds what the other scripts import (`gcntrain`, `mpiexec`, `machine_state`,
`slashdot`): measure_node, bench_epoch, bench_epoch_breakdown, validate_simulator,
check_auto_speed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from gcntrain.simulate.calibrate import find_mpiexec, gcntrain_cmd
from gcntrain.simulate.measure import triad_gbs

CASES = [
    ("1d", []),
    ("p2p", ["--partition", "random"]),
    ("2d", ["--grid", "64x128"]),
    ("3d", ["--grid", "16x16x32"]),
    ("plexus", ["--grid", "16x16x32"]),
]


#: the scripts' gcntrain command line (the console script beside this Python)
gcntrain = gcntrain_cmd


def mpiexec() -> str:
    """The MPI launcher the scripts start ranks with (`find_mpiexec`, else ``mpiexec``)."""
    return find_mpiexec() or "mpiexec"


def machine_state() -> str:
    """The load and memory bandwidth now, printed beside every performance figure."""
    return f"load {os.getloadavg()[0]:.2f}, memory bandwidth {triad_gbs():.1f} GB/s (triad)"


def slashdot(shared: str, folder: str) -> str:
    """SNAP soc-Slashdot0902 converted into `folder` as the README's quick start converts it
    (symmetrised, no self loops, 32 random features, 4 classes); the file's path."""
    graph = str(Path(folder) / "slashdot.h5")
    src = Path(shared) / "datasets" / "snap" / "soc-Slashdot0902.txt.gz"
    conv = [*gcntrain(), "convert", str(src), "-o", graph, "--symmetrize"]
    conv += ["--self-loops", "drop", "--features", "32", "--classes", "4"]
    subprocess.run(conv, check=True, capture_output=True)
    return graph


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=8192)
    ap.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared"))
    args = ap.parse_args()
    src = Path(args.shared) / "datasets" / "snap" / "soc-Slashdot0902.txt.gz"
    with tempfile.TemporaryDirectory() as tmp:
        graph = Path(tmp) / "slashdot.h5"
        subprocess.run(
            [
                *gcntrain(),
                "convert",
                str(src),
                "-o",
                str(graph),
                "--symmetrize",
                "--self-loops",
                "add",
            ],
            check=True,
            capture_output=True,
        )
        print(
            f"P = {args.ranks}, soc-Slashdot0902 symmetrized + self-loops, cores "
            f"{os.cpu_count()}, load {os.getloadavg()[0]:.2f}, memory bandwidth "
            f"{triad_gbs():.1f} GB/s (numpy triad)"
        )
        print(
            f"{'scheme':24s} {'wall s':>7s} {'peak RSS MiB':>13s} {'sent max MB':>12s} "
            f"{'sent mean MB':>13s} {'messages max':>13s}"
        )
        for scheme, extra in CASES:
            t0 = time.perf_counter()
            out = subprocess.run(
                [
                    *gcntrain(),
                    "simulate",
                    str(graph),
                    "--ranks",
                    str(args.ranks),
                    "--scheme",
                    scheme,
                    *extra,
                    "--features",
                    "128",
                    "--classes",
                    "16",
                    "--epochs",
                    "200",
                    "--json",
                ],
                check=True,
                capture_output=True,
                text=True,
            )
            wall = time.perf_counter() - t0
            d = json.loads(out.stdout)
            label = scheme + (f" {' '.join(extra)}" if extra else "")
            print(
                f"{label:24s} {wall:7.2f} {d['peak_rss_bytes'] / 2**20:13.0f} "
                f"{d['bytes_sent_max'] / 1e6:12.3f} {d['bytes_sent_mean'] / 1e6:13.3f} "
                f"{d['messages_max']:13d}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
