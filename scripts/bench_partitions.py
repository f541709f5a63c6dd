#!/usr/bin/env python
"""Compare partitioners on soc-Slashdot0902 (symmetrised, self-loops added) and gemat11.

Sections (``--only``, comma-separated; default all):

* ``volume``: block, random, and at each ``--eps`` METIS (unit and degree weights) and the
  hypergraph configurations of ``--configs``, at each ``--parts``: 1D SpMM volume (rows of H
  per SpMM), messages, edge cut, nnz and row imbalance, seconds; hypergraph/METIS ratios at
  the same eps.
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
from gcntrain.partition.hypergraph import column_nets, km1, run_hypergraph  # noqa: E402
from gcntrain.partition.libra import libra_partition, random_edge_partition  # noqa: E402
from gcntrain.partition.methods import hypergraph_options  # noqa: E402
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


#: hypergraph configurations the volume section can run (``--configs``): "default" takes
#: the ``--hg-*`` options (unset: the defaults of `run_hypergraph`), "plain" is Mt-KaHyPar
#: alone (its default preset, no start, no V-cycle), "uncapped" the METIS start refined by a
#: Jet V-cycle on all nets
CONFIGS = {
    "plain": {"init": "none", "vcycles": 0, "net_cap": 0},
    "uncapped": {"init": "metis", "vcycles": 1, "refine": "deterministic", "net_cap": 0},
}


def hg_config(name: str, args) -> dict:
    """Unresolved hypergraph options of configuration `name`."""
    if name == "default":
        raw = {
            "init": args.hg_init,
            "vcycles": args.hg_vcycles,
            "refine": args.hg_refine,
            "net_cap": args.hg_net_cap,
            "seeds": args.hg_seeds,
        }
    elif name in CONFIGS:
        raw = dict(CONFIGS[name])
    else:
        raise SystemExit(
            f"unknown hypergraph configuration {name!r} (default, {', '.join(CONFIGS)})"
        )
    raw["preset"] = args.preset
    return {k: v for k, v in raw.items() if v is not None}


def describe(opts: dict) -> str:
    keys = ("init", "vcycles", "refine", "net_cap", "seeds", "preset")
    return ", ".join(f"{k}={opts[k]}" for k in keys if k in opts)


def _hyper(g, P, eps, opts, args):
    return run_hypergraph(
        g.indptr, g.indices, P, eps=eps, seed=args.seed, threads=args.threads, **opts
    ).part


def section_volume(g, parts, args, metis_cache) -> None:
    print("== 1D row-parallel SpMM volume (rows of H per SpMM) ==")
    print("metis eps=E: unit vertex weights (balances rows), ufactor 1000 E; metis-deg: row")
    print("nonzeros as weights (balances nonzeros); hypergraph[C] eps=E: column-net KM1, rows")
    print("weighted by nonzeros, every part <= (1 + E) * ceil(nnz / P); Mt-KaHyPar threads =")
    print(f"{args.threads}, seed = {args.seed}.")
    raw = {c: hg_config(c, args) for c in args.configs.split(",") if c}
    eps_list = [float(e) for e in args.eps.split(",")]
    print()
    for P in parts:
        configs = {c: hypergraph_options(g.indptr, g.indices, P, o) for c, o in raw.items()}
        print(f"P = {P}, hypergraph configurations:")
        for c, cfg in configs.items():
            print(f"  {c}: {describe(cfg)}")
        methods = {
            "block": lambda P=P: block_partition(g.n, P),
            "random": lambda P=P: random_partition(g.n, P, args.seed),
        }
        for e in eps_list:
            methods[f"metis eps={e:g}"] = lambda P=P, e=e: metis_partition(
                g.indptr, g.indices, P, imbalance=e, seed=args.seed
            )
            methods[f"metis-deg eps={e:g}"] = lambda P=P, e=e: metis_partition(
                g.indptr, g.indices, P, vweights="degree", imbalance=e, seed=args.seed
            )
            for c, cfg in configs.items():
                methods[f"hypergraph[{c}] eps={e:g}"] = lambda P=P, e=e, cfg=cfg: _hyper(
                    g, P, e, cfg, args
                )
        rows, vols, secs = [], {}, {}
        for name, f in methods.items():
            part, sec, cpu = timed(f)
            v = comm_volume(g.indptr, g.indices, part, P)
            vols[name], secs[name] = v, sec
            if name == "metis eps=0.03":
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
        print()
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
        for e in eps_list:
            m = vols[f"metis eps={e:g}"]
            md = vols[f"metis-deg eps={e:g}"]
            for c in configs:
                name = f"hypergraph[{c}] eps={e:g}"
                h = vols[name]
                ratio = h["volume_total"] / m["volume_total"]
                mratio = max(h["volume_max_send"], h["volume_max_recv"]) / max(
                    m["volume_max_send"], m["volume_max_recv"]
                )
                print(
                    f"eps={e:g} {c}: hypergraph / METIS total volume {ratio:.3f} "
                    f"(/ metis-deg {h['volume_total'] / md['volume_total']:.3f}), "
                    f"max volume {mratio:.3f}; imbalance nnz/rows: hypergraph "
                    f"{h['nnz_imbalance']:.3f}/{h['size_imbalance']:.3f}, METIS "
                    f"{m['nnz_imbalance']:.3f}/{m['size_imbalance']:.3f}; {secs[name]:.1f} s"
                )
                print(check(f"eps={e:g} {c}: total-volume ratio <= 0.92", ratio <= 0.92))
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
    cfg = hypergraph_options(A.indptr, A.indices, 3, hg_config("default", args))
    eps = float(args.eps.split(",")[0])
    print(f"ours: eps={eps:g}, {describe(cfg)}")
    ours, sec, _ = timed(
        lambda: (
            run_hypergraph(
                A.indptr, A.indices, 3, eps=eps, seed=args.seed, threads=args.threads, **cfg
            ).part
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
    ap.add_argument(
        "--eps",
        default="0.01,0.03",
        help="imbalances (comma-separated); METIS and hypergraph run at each, the ratio "
        "compares them at the same eps; gemat11 uses the first",
    )
    ap.add_argument("--preset", default="default", help="Mt-KaHyPar preset (first partition)")
    ap.add_argument(
        "--configs",
        default="default,plain",
        help="hypergraph configurations for the volume section (comma-separated): default "
        "(the --hg-* options), " + ", ".join(f"{k} ({describe(v)})" for k, v in CONFIGS.items()),
    )
    ap.add_argument("--hg-init", choices=["auto", "none", "metis"], default=None)
    ap.add_argument("--hg-vcycles", type=int, default=None)
    ap.add_argument("--hg-refine", default=None, help="preset of the V-cycles")
    ap.add_argument("--hg-net-cap", type=int, default=None, help="0: keep all nets")
    ap.add_argument("--hg-seeds", type=int, default=None)
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
