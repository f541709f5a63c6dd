"""The papers' measured communication times against the simulator's network model.

``--table supergcn5``: SuperGCN Table 5 (../shared/papers/supergcn-cpu-supercomputers.txt):
one GCN layer of ogb-lsc-mag240M on 2048 Fugaku ranks, the volume and time of its
Alltoallv under each communication method.  Each row is priced with the shipped `fugaku`
profile as one Alltoallv over all 2048 ranks, 4 ranks per node (512 nodes), the paper's
volume spread evenly over every ordered pair of ranks (GB = 1e9 bytes); Int2's row is its
quantized data and its dequantization parameters, two Alltoallv one after the other.
Prints per row the paper's GB and ms, the predicted ms (and the part of it the topology's
bisection sets), and their ratio; exits 1 when a row is beyond `--factor` (2) either way.

    python scripts/check_papers.py --table supergcn5 [--factor 2]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from gcntrain.comm.exchange import Groups, Uniform
from gcntrain.simulate.local import load_machine
from gcntrain.simulate.timing import placement, step_timing

#: SuperGCN Table 5: (method, [(part, GB), ...], paper ms)
SUPERGCN5 = [
    ("pre_aggr", [("data", 1934.8559)], 1094.35),
    ("post_aggr", [("data", 1934.8559)], 1131.62),
    ("pre_post_aggr", [("data", 1269.5784)], 730.792),
    ("pre_post_aggr+Int2", [("data", 80.4770), ("params", 1.6530)], 47.0393 + 4.82566),
]
RANKS, PER_NODE = 2048, 4


def price_alltoall(gb: float, machine) -> tuple[float, float]:
    """(seconds, the same where the topology's bisection sets them, else 0) of one Alltoallv
    of `gb` GB in all over `RANKS` ranks on `machine`."""
    place = placement(machine, RANKS, None, PER_NODE)
    per_pair = int(round(gb * 1e9 / (RANKS * (RANKS - 1))))
    step = Uniform(Groups.world(RANKS), per_pair)
    start, cost, _ = step_timing(step, place, np.zeros(RANKS))
    flat = placement(_without_topology(machine), RANKS, None, PER_NODE)
    _, cost_flat, _ = step_timing(step, flat, np.zeros(RANKS))
    total = float((start + cost).max())
    return total, total if total > float(cost_flat.max()) else 0.0


def _without_topology(machine):
    from dataclasses import replace

    from gcntrain.simulate.topology import Topology

    return replace(machine, topology=Topology())


def supergcn5(factor: float) -> int:
    m = load_machine("fugaku")
    place = placement(m, RANKS, None, PER_NODE)
    print(
        f"SuperGCN Table 5 on the shipped fugaku profile: {RANKS} ranks, {PER_NODE} per node, "
        f"{place.nodes} nodes ({m.topology.describe(place.nodes)}, "
        f"{m.topology.link / 1e9:g} GB/s links)"
    )
    print(
        f"{'method':<20}{'paper GB':>15}{'paper ms':>10}{'predicted ms':>14}"
        f"{'of it bisection':>17}{'ratio':>7}"
    )
    bad = 0
    for method, parts, ms in SUPERGCN5:
        got = [price_alltoall(gb, m) for _, gb in parts]
        pred = sum(t for t, _ in got) * 1e3
        bis = sum(b for _, b in got) * 1e3
        ratio = pred / ms
        ok = 1.0 / factor <= ratio <= factor
        bad += not ok
        gb = " + ".join(f"{g:.2f}" for _, g in parts)
        print(
            f"{method:<20}{gb:>15}{ms:>10.1f}{pred:>14.1f}{bis:>17.1f}{ratio:>7.2f}"
            f"{'' if ok else f'  BEYOND {factor:g}x'}"
        )
    print(f"{'all within' if not bad else f'{bad} beyond'} {factor:g}x")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", choices=["supergcn5"], required=True)
    ap.add_argument("--factor", type=float, default=2.0)
    args = ap.parse_args()
    return supergcn5(args.factor)


if __name__ == "__main__":
    sys.exit(main())
