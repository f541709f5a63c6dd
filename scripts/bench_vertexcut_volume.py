"""The vertex-cut trade-off on soc-Slashdot0902 (DistGNN section 5.1): planned bytes per epoch
of `--scheme vertexcut` (Libra, cd-0) against `--scheme p2p` on METIS and hypergraph
partitions, from `gcntrain simulate` (no MPI).

Symmetrized graph, no node data: the plans assume dense features of width 64 and 4 classes
(`--features 64 --classes 4`), GCN 64 -> 16 -> 4, float32.  Prints per scheme and partition
the bytes sent per epoch (max and mean over ranks), the messages of the busiest rank, and
the Libra replication factor.

    python scripts/bench_vertexcut_volume.py [--parts 16] [--shared ../shared]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_simulate import gcntrain, run_json  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", type=int, default=16)
    ap.add_argument("--shared", default=str(Path(__file__).resolve().parents[1].parent / "shared"))
    args = ap.parse_args()
    snap = Path(args.shared) / "datasets" / "snap" / "soc-Slashdot0902.txt.gz"
    P = str(args.parts)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        g = str(Path(tmp) / "slashdot.h5")
        subprocess.run(
            [*gcntrain(), "convert", str(snap), "-o", g, "--symmetrize"],
            check=True,
            capture_output=True,
        )
        sim = ["simulate", g, "--ranks", P, "--features", "64", "--classes", "4"]
        sim += ["--hidden", "16", "--epochs", "3"]
        for method in ("metis", "hypergraph"):
            part = str(Path(tmp) / f"{method}.h5")
            run_json(["partition", g, "-m", method, "--parts", P, "-o", part])
            rows.append((f"p2p {method}", run_json([*sim, "--scheme", "p2p", "--partition", part])))
        rows.append(("vertexcut libra cd-0", run_json([*sim, "--scheme", "vertexcut"])))
    print(f"soc-Slashdot0902, {P} parts, GCN 64 -> 16 -> 4, float32, per epoch:")
    print(f"{'scheme / partition':24} {'MB sent max':>12} {'MB sent mean':>13} {'msgs max':>9}")
    for label, d in rows:
        print(
            f"{label:24} {d['bytes_sent_max'] / 1e6:12.3f} {d['bytes_sent_mean'] / 1e6:13.3f}"
            f" {d['messages_max']:9d}"
        )
    print(f"Libra replication factor {rows[-1][1]['replication_factor']:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
