"""The papers' published measurements (docs/validation_rows.csv) against the simulator.

Every row of the chosen half is printed: the paper's value, the predicted one, their ratio
(predicted / paper) with a within-2x / within-4x verdict and what dominates the prediction
(the largest part of the predicted epoch: a compute kind, a named collective, waiting; for
communication its latency share), or, for a qualitative row, the shape the priced sweep
shows next to the paper's statement with pass / fail, or one line saying why the row is not
priced. Each priced row also says what it compares, the configurations planned (stand-in,
scheme and options, P, ranks per node, profile, model) and what was assumed where the paper
is silent (docs/validation.md, "How to run the check"). A summary per half ends the output.

The held-out half is priced only with ``--half held-out`` or ``--half all``: it is checked
once, when the model is finished (issue 49); ``--dry`` prints how each row of any half would
be priced without planning anything. Stand-in graphs and partitions are generated on first
use and cached in ``.cache/papers/`` (``--cache``).

    python scripts/check_papers.py                      # informing + calibration
    python scripts/check_papers.py --rows hypergraph-t2-soc,tofud
    python scripts/check_papers.py --dry --half held-out
    python scripts/check_papers.py --table supergcn5 [--factor 2]

Exit status 0; with ``--strict``, 1 where a printed half misses the acceptance (at least
80 % of its priced numeric rows within 2x, none beyond 4x).

``--table supergcn5``: SuperGCN Table 5 (../shared/papers/supergcn-cpu-supercomputers.txt):
one GCN layer of ogb-lsc-mag240M on 2048 Fugaku ranks, the volume and time of its
Alltoallv under each communication method.  Each row is priced with the shipped `fugaku`
profile as one Alltoallv over all 2048 ranks, 4 ranks per node (512 nodes), the paper's
volume spread evenly over every ordered pair of ranks (GB = 1e9 bytes); Int2's row is its
quantized data and its dequantization parameters, two Alltoallv one after the other.
Prints per row the paper's GB and ms, the predicted ms (and the part of it the topology's
bisection sets), and their ratio; exits 1 when a row is beyond `--factor` (2) either way.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from papercheck import standins  # noqa: E402
from papercheck.rows import HALVES, limited, read_rows, recipe  # noqa: E402

#: SuperGCN Table 5: (method, [(part, GB), ...], paper ms)
SUPERGCN5 = [
    ("pre_aggr", [("data", 1934.8559)], 1094.35),
    ("post_aggr", [("data", 1934.8559)], 1131.62),
    ("pre_post_aggr", [("data", 1269.5784)], 730.792),
    ("pre_post_aggr+Int2", [("data", 80.4770), ("params", 1.6530)], 47.0393 + 4.82566),
]
RANKS, PER_NODE = 2048, 4


def supergcn5(factor: float) -> int:
    from papercheck.price import price_alltoall

    from gcntrain.simulate.local import load_machine
    from gcntrain.simulate.timing import placement

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
        got = [price_alltoall(gb, m, RANKS, PER_NODE) for _, gb in parts]
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


def chosen(args) -> list[str]:
    """The halves to print, in the CSV's terms."""
    if args.half is None:
        return ["informing", "calibration"]
    return list(HALVES) if args.half == "all" else [args.half]


def check(args) -> int:
    from papercheck.report import Tally, block, failed

    t0 = time.perf_counter()
    halves = chosen(args)
    prefixes = [p for p in (args.rows or "").split(",") if p]
    rows = [
        r
        for r in read_rows()
        if r.half in halves and (not prefixes or any(r.id.startswith(p) for p in prefixes))
    ]
    pricer = None
    if not args.dry:
        from papercheck.evaluate import outcome
        from papercheck.price import Pricer

        pricer = Pricer(Path(args.cache))
    tallies = {}
    for half in halves:
        mine = [r for r in rows if r.half == half]
        if not mine:
            continue
        tally = tallies[half] = Tally()
        print(f"== {half}: {len(mine)} rows" + (" (dry: nothing planned)" if args.dry else ""))
        for row in mine:
            rec = limited(recipe(row), args.max_entries)
            out = None
            if pricer is not None and rec.kind != "none":
                try:
                    out = outcome(rec, pricer)
                except (MemoryError, OSError, ValueError) as e:
                    print("\n".join(failed(rec, e, tally)), flush=True)
                    continue
            print("\n".join(block(rec, out, args.dry, tally)), flush=True)
        print()
    print("== summary")
    for half, tally in tallies.items():
        print("\n".join(tally.lines(half)))
    print(f"({time.perf_counter() - t0:.0f} s)")
    bad = [h for h, t in tallies.items() if t.priced and not t.accepted()]
    return 1 if args.strict and bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--table", choices=["supergcn5"], help="print SuperGCN Table 5 only")
    ap.add_argument("--factor", type=float, default=2.0, help="--table's bound (default 2)")
    ap.add_argument(
        "--half",
        choices=[*HALVES, "all"],
        help="the half to print (default: informing and calibration; held-out only once "
        "the model is final)",
    )
    ap.add_argument("--rows", help="comma-separated id prefixes: only those rows")
    ap.add_argument("--dry", action="store_true", help="say how each row would be priced")
    ap.add_argument(
        "--max-entries",
        type=float,
        help="leave out rows whose stand-in has more stored entries (a quicker run)",
    )
    ap.add_argument("--strict", action="store_true", help="exit 1 where the acceptance fails")
    ap.add_argument("--cache", default=str(standins.CACHE), help="stand-in and partition cache")
    ap.add_argument(
        "--standins", action="store_true", help="print the stand-in graphs (Markdown) and stop"
    )
    args = ap.parse_args(argv)
    if args.table:
        return supergcn5(args.factor)
    if args.standins:
        print("\n".join(standins.table(Path(args.cache))))
        return 0
    return check(args)


if __name__ == "__main__":
    sys.exit(main())
