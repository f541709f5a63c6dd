#!/usr/bin/env python
"""Compare partitioners on soc-Slashdot0902 (symmetrised, self-loops added) and gemat11.

Sections (``--only``, comma-separated; default all):

* ``volume``: block, random, METIS, hypergraph at each ``--parts``: 1D SpMM volume (rows of H
  per SpMM), messages, edge cut, nnz imbalance, seconds; hypergraph/METIS ratios.
* ``gemat11``: 3-way column-net partition of gemat11 (unsymmetric, rows partitioned) vs the
  reference ``gemat11.mtx.3.hp``: connectivity-1 and imbalance of both.
* ``double-perm``: nnz max/mean over 8 x 8 blocks, original / single / double permutation
  (Plexus Table 3) and the degree-stratified double permutation, on Slashdot and on a
  generated road-like grid.
* ``libra``: replication factor and edge balance at 2/4/8/16 parts vs random edges.
* ``mvc``: pre / post / hybrid (minimum vertex cover) volumes on the METIS partitions.

Run from the repository root: ``python scripts/bench_partitions.py [--only libra,mvc]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gcntrain.data.convert import convert_source  # noqa: E402
from gcntrain.data.generate import road_grid  # noqa: E402
from gcntrain.partition.basic import block_partition, random_partition  # noqa: E402
from gcntrain.partition.hypergraph import column_nets, hypergraph_partition, km1  # noqa: E402
from gcntrain.partition.libra import libra_partition, random_edge_partition  # noqa: E402
from gcntrain.partition.metis import metis_partition  # noqa: E402
from gcntrain.partition.metrics import comm_volume, imbalance  # noqa: E402
from gcntrain.partition.mvc import mvc_split  # noqa: E402
from gcntrain.partition.permute import permutation_balance  # noqa: E402

SECTIONS = ("volume", "gemat11", "double-perm", "libra", "mvc")


def shared_dir() -> Path:
    p = ROOT.parent / "shared"
    return p if p.is_dir() else Path("/work/shared")


def table(header: list[str], rows: list[list]) -> str:
    cells = [
        [
            f"{c:,}" if isinstance(c, int) else f"{c:.3f}" if isinstance(c, float) else str(c)
            for c in r
        ]
        for r in rows
    ]
    widths = [max(len(h), *(len(r[k]) for r in cells)) for k, h in enumerate(header)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(header, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
    return "\n".join(lines)


def check(label: str, ok: bool) -> str:
    return f"  [{'ok' if ok else 'FAIL'}] {label}"


def load_slashdot():
    path = shared_dir() / "datasets" / "snap" / "soc-Slashdot0902.txt.gz"
    t = time.perf_counter()
    g = convert_source(str(path), symmetrize=True, self_loops="add")
    print(
        f"soc-Slashdot0902: n = {g.n:,}, nnz = {g.nnz:,} (symmetrised, self-loops added), "
        f"loaded in {time.perf_counter() - t:.1f} s\n"
    )
    return g


def timed(f):
    """(result, wall seconds, CPU seconds of this process, all threads)."""
    t, c = time.perf_counter(), time.process_time()
    out = f()
    return out, time.perf_counter() - t, time.process_time() - c


def _hyper(g, P, eps, args):
    return hypergraph_partition(
        g.indptr,
        g.indices,
        P,
        eps=eps,
        seed=args.seed,
        threads=args.threads,
        preset=args.preset,
    )


def section_volume(g, parts, args, metis_cache) -> None:
    print("== 1D row-parallel SpMM volume (rows of H per SpMM) ==")
    print("metis: unit vertex weights, ufactor 30 (eps 0.03, balances rows); metis-deg: row")
    print("nonzeros as weights; hypergraph eps=E: column-net KM1, rows weighted by nonzeros,")
    print("every part <= (1 + E) * ceil(nnz / P)\n")
    eps_list = [args.eps] + [e for e in (0.03,) if e != args.eps]
    for P in parts:
        methods = {
            "block": lambda P=P: block_partition(g.n, P),
            "random": lambda P=P: random_partition(g.n, P, args.seed),
            "metis": lambda P=P: metis_partition(g.indptr, g.indices, P, seed=args.seed),
            "metis-deg": lambda P=P: metis_partition(
                g.indptr, g.indices, P, vweights="degree", seed=args.seed
            ),
        }
        for e in eps_list:
            methods[f"hypergraph eps={e:g}"] = lambda P=P, e=e: _hyper(g, P, e, args)
        rows, vols = [], {}
        for name, f in methods.items():
            part, sec, cpu = timed(f)
            v = comm_volume(g.indptr, g.indices, part, P)
            vols[name] = v
            if name == "metis":
                metis_cache[P] = part
            rows.append(
                [
                    name,
                    v["volume_total"],
                    v["volume_max_send"],
                    v["volume_max_recv"],
                    v["messages_total"],
                    v["messages_max"],
                    v["edge_cut"],
                    v["nnz_imbalance"],
                    v["size_imbalance"],
                    sec,
                    cpu,
                ]
            )
        print(f"P = {P}")
        print(
            table(
                [
                    "method",
                    "vol total",
                    "max send",
                    "max recv",
                    "msgs",
                    "msgs max",
                    "edge cut",
                    "nnz imb",
                    "size imb",
                    "seconds",
                    "cpu s",
                ],
                rows,
            )
        )
        m = vols["metis"]
        for e in eps_list:
            h = vols[f"hypergraph eps={e:g}"]
            ratio = h["volume_total"] / m["volume_total"]
            mratio = max(h["volume_max_send"], h["volume_max_recv"]) / max(
                m["volume_max_send"], m["volume_max_recv"]
            )
            print(
                f"hypergraph eps={e:g} / METIS: total volume {ratio:.3f}, max volume {mratio:.3f}"
            )
            print(check(f"eps={e:g}: total-volume ratio <= 0.92", ratio <= 0.92))
        print(check("every method <= 60 s (wall)", all(r[-2] <= 60 for r in rows)))
        print()


def section_gemat11(args) -> None:
    print("== gemat11 (4,929 x 4,929, unsymmetric), 3-way row partition ==")
    d = shared_dir() / "datasets" / "suitesparse"
    A = sp.csr_matrix(scipy.io.mmread(str(d / "gemat11.mtx")))
    A.sort_indices()
    ref = np.array((d / "gemat11.mtx.3.hp").read_text().split(), dtype=np.int64)
    rp = np.array((d / "gemat11.mtx.3.rp").read_text().split(), dtype=np.int64)
    net_ptr, pins = column_nets(A.indptr, A.indices)
    ours, sec, _ = timed(
        lambda: hypergraph_partition(
            A.indptr,
            A.indices,
            3,
            eps=args.eps,
            seed=args.seed,
            threads=args.threads,
            preset=args.preset,
        )
    )
    w = np.diff(A.indptr)
    rows = []
    for name, part, t in (
        ("ours (Mt-KaHyPar)", ours, sec),
        ("gemat11.mtx.3.hp", ref, None),
        ("gemat11.mtx.3.rp", rp, None),
    ):
        nnz = np.bincount(part, weights=w, minlength=3)
        sizes = np.bincount(part, minlength=3)
        rows.append(
            [
                name,
                km1(net_ptr, pins, part),
                imbalance(nnz),
                imbalance(sizes),
                "-" if t is None else t,
            ]
        )
    print(table(["partition", "conn-1", "nnz imb", "rows imb", "seconds"], rows))
    print(check("ours conn-1 <= reference .hp", rows[0][1] <= rows[1][1]))
    print()


def section_double_perm(g, args) -> None:
    print("== Double permutation: nnz max/mean over 8 x 8 blocks (Plexus Table 3) ==")
    grid = road_grid(300, 300, seed=args.seed)
    rows = []
    for name, h in (("soc-Slashdot0902", g), ("road grid 300x300", grid)):
        b, sec, _ = timed(lambda h=h: permutation_balance(h.indptr, h.indices, 8, 8, args.seed))
        rows.append(
            [
                name,
                b["nnz_max_mean_original"],
                b["nnz_max_mean_single"],
                b["nnz_max_mean_double"],
                b["nnz_max_mean_double_stratified"],
                sec,
            ]
        )
    print(table(["graph", "original", "single", "double", "double strat.", "seconds"], rows))
    print(
        "(double: uniform random row and column permutations as in Plexus; double strat.:"
        " degree-stratified, what `gcntrain partition -m double-perm` writes)"
    )
    print(check("double strat. <= 1.05 on both", all(r[4] <= 1.05 for r in rows)))
    print()


def section_libra(g, args) -> None:
    print("== Libra vertex cut vs random edge assignment ==")
    rows = []
    for P in (2, 4, 8, 16):
        vc, sec, cpu = timed(lambda P=P: libra_partition(g.indptr, g.indices, P, seed=args.seed))
        rnd = random_edge_partition(g.indptr, g.indices, P, seed=args.seed)
        rows.append(
            [
                P,
                vc.replication_factor,
                vc.edge_balance,
                vc.split_vertices,
                rnd.replication_factor,
                rnd.edge_balance,
                sec,
                cpu,
            ]
        )
    print(
        table(
            ["parts", "libra RF", "edge bal", "split", "random RF", "rnd bal", "seconds", "cpu s"],
            rows,
        )
    )
    rf = [r[1] for r in rows]
    print(check("RF grows with parts", all(a < b for a, b in zip(rf, rf[1:]))))
    print(check("RF below random edges", all(r[1] < r[4] for r in rows)))
    print(check("Libra <= 10 s (wall)", all(r[-2] <= 10 for r in rows)))
    print()


def section_mvc(g, parts, args, metis_cache) -> None:
    print("== SuperGCN pre / post / hybrid (minimum vertex cover) on METIS partitions ==")
    rows = []
    for P in parts:
        part = metis_cache.get(P)
        if part is None:
            part = metis_partition(g.indptr, g.indices, P, seed=args.seed)
        s, sec, cpu = timed(lambda part=part, P=P: mvc_split(g.indptr, g.indices, part, P))
        m = s.summary()
        ok = bool(np.all(s.hybrid_volume <= np.minimum(s.pre_volume, s.post_volume)))
        rows.append(
            [
                P,
                m["pre_total"],
                m["post_total"],
                m["hybrid_total"],
                m["pre_max_send"],
                m["post_max_send"],
                m["hybrid_max_send"],
                "yes" if ok else "NO",
                sec,
                cpu,
            ]
        )
    print(
        table(
            [
                "parts",
                "pre",
                "post",
                "hybrid",
                "pre max",
                "post max",
                "hyb max",
                "hyb<=min",
                "seconds",
                "cpu s",
            ],
            rows,
        )
    )
    print(check("MVC <= 10 s (wall)", all(r[-2] <= 10 for r in rows)))
    print()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--only", default=",".join(SECTIONS), help=f"comma-separated sections of {SECTIONS}"
    )
    ap.add_argument("--parts", default="16,64", help="part counts for volume and mvc")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=2, help="Mt-KaHyPar threads")
    ap.add_argument("--eps", type=float, default=0.01, help="hypergraph imbalance")
    ap.add_argument("--preset", default="default", help="Mt-KaHyPar preset")
    args = ap.parse_args(argv)
    only = [s.strip() for s in args.only.split(",") if s.strip()]
    unknown = set(only) - set(SECTIONS)
    if unknown:
        ap.error(f"unknown sections {sorted(unknown)} (choose from {SECTIONS})")
    parts = [int(p) for p in args.parts.split(",")]
    g = load_slashdot() if set(only) - {"gemat11"} else None
    metis_cache: dict[int, np.ndarray] = {}
    t0 = time.perf_counter()
    if "volume" in only:
        section_volume(g, parts, args, metis_cache)
    if "gemat11" in only:
        section_gemat11(args)
    if "double-perm" in only:
        section_double_perm(g, args)
    if "libra" in only:
        section_libra(g, args)
    if "mvc" in only:
        section_mvc(g, parts, args, metis_cache)
    print(f"total {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
