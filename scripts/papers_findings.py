"""The papers' qualitative findings, reproduced from gcntrain's plans and time model on
generated graphs of the papers' sizes (no MPI).  The tables of record, at full size and
1/100, are in docs/measurements/papers-findings-2026-11-26.md (docs/simulator.md, "The
papers' findings, reproduced", says how to run it and links the record).

Graphs: R-MAT structure (Graph500 a, b, c) folded onto exactly n vertices and drawn until the
symmetrised pattern has about the paper's stored entries; features and classes as the
papers' data sets (planned with --features / --classes: no node data is generated).

    reddit    232,965 nodes, 114.6M stored entries, 602 features, 41 classes (CAGNET, DistGNN)
    products  2,449,029 nodes, 123.7M stored entries, 100 features, 47 classes (Plexus, SuperGCN)

Tables (each printed as Markdown):
    cagnet    per-rank bytes of 1D, 1.5D (c = 2, 4), 2D and 3D per epoch as P grows
    plexus    Plexus's best grids (least predicted epoch time on fugaku) at each P
    supergcn  hier aggregation traffic and predicted time, Int2 vs unquantized
    distgnn   vertex-cut cd-0 vs cd-5 traffic and predicted time

    python scripts/papers_findings.py cagnet [--graph reddit] [--ranks 16,64,256]
    python scripts/papers_findings.py --scale 0.05 all        # a quick shrunken check
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np
import scipy.sparse as sp

from gcntrain.data.graph import Graph
from gcntrain.model.trainer import TrainConfig
from gcntrain.simulate.local import load_machine
from gcntrain.simulate.run import plan_training
from gcntrain.simulate.summary import epoch_median
from gcntrain.simulate.target import PlanTarget
from gcntrain.simulate.timing import placement, time_summary

#: name -> (nodes, stored entries, features, classes)
GRAPHS = {
    "reddit": (232_965, 114_615_892, 602, 41),
    "products": (2_449_029, 123_718_280, 100, 47),
}
HIDDEN = 256  # CAGNET / Plexus / SuperGCN hidden width
EPOCHS = 8  # DistGNN's cd-5 reaches its steady state within them


def paper_graph(name: str, scale: float = 1.0, seed: int = 0) -> tuple[Graph, int, int]:
    """(structure-only graph, features, classes) of `name`, sizes times `scale`."""
    n0, nnz0, f, c = GRAPHS[name]
    return rmat_graph(name, n0, nnz0, scale, seed), f, c


def attach_isolated(key: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """Pair keys (``lo * n + hi``, sorted, distinct) of as many pairs, every vertex in one.

    Each vertex in no pair gets one pair with a vertex drawn uniformly among those in a
    pair; as many pairs, drawn at random among those whose two ends are in another pair
    too, make room (their ends keep at least one).  Raises ValueError where too few pairs
    can go.
    """
    lo, hi = key // n, key % n
    deg = np.bincount(lo, minlength=n) + np.bincount(hi, minlength=n)
    iso = np.flatnonzero(deg == 0)
    if iso.size == 0:
        return key
    live = np.flatnonzero(deg > 0)
    drop = np.zeros(key.size, dtype=bool)
    left = iso.size
    for i in rng.permutation(key.size):
        a, b = lo[i], hi[i]
        if deg[a] > 1 and deg[b] > 1:
            deg[a] -= 1
            deg[b] -= 1
            drop[i] = True
            left -= 1
            if left == 0:
                break
    if left:
        raise ValueError(f"{iso.size} isolated vertices, only {iso.size - left} pairs can go")
    u = live[rng.integers(0, live.size, iso.size)]
    return np.sort(np.concatenate([key[~drop], np.minimum(iso, u) * n + np.maximum(iso, u)]))


def rmat_graph(
    name: str, n0: int, nnz0: int, scale: float = 1.0, seed: int = 0, min_degree: int = 0
) -> Graph:
    """The R-MAT stand-in of a graph of `n0` nodes and `nnz0` stored entries (sizes times
    `scale`): Graph500 a, b, c folded onto exactly n vertices with a random vertex
    permutation, drawn until the symmetrised pattern (no self-loops) has about ``nnz`` stored
    entries; structure only, named ``{name}-like`` (``-x{scale}`` when shrunk).  With
    ``min_degree=1`` no vertex is isolated (`attach_isolated`; R-MAT at these densities
    leaves half the vertices or more without an edge, which a graph given as an edge list
    never has); the stored entries are the same in number."""
    if min_degree not in (0, 1):
        raise ValueError(f"min_degree must be 0 or 1, not {min_degree}")
    n, nnz = max(int(n0 * scale), 64), max(int(nnz0 * scale), 256)
    rng = np.random.default_rng(seed)
    bits = int(np.ceil(np.log2(n)))
    perm = rng.permutation(n)
    a, b, cc = 0.57, 0.19, 0.19
    want = nnz // 2  # distinct unordered pairs
    key = np.empty(0, np.int64)
    draw = int(want * 1.3) + 1024  # R-MAT repeats pairs: draw more than needed at once
    while key.size < want:
        parts = []
        for lo_i in range(0, draw, 1 << 24):  # in batches: bounded temporary memory
            m = min(1 << 24, draw - lo_i)
            s = np.zeros(m, np.int64)
            d = np.zeros(m, np.int64)
            for level in range(bits):
                rb = rng.random(m) > a + b
                cb = rng.random(m) > np.where(rb, cc / (1 - a - b), a / (a + b))
                s |= rb.astype(np.int64) << level
                d |= cb.astype(np.int64) << level
            keep = (s < n) & (d < n) & (s != d)
            u, v = perm[s[keep]], perm[d[keep]]
            parts.append(np.minimum(u, v) * n + np.maximum(u, v))
        # one sort of the new pairs with the kept ones (not of every draw so far each round)
        before = key.size
        key = np.unique(np.concatenate([key, *parts]))
        # the next draw from this round's yield of new pairs (R-MAT repeats its hot pairs)
        yield_ = max((key.size - before) / draw, 1e-3)
        draw = int((want - key.size) / yield_ * 1.2) + 1024
    # keep a uniformly random subset of the distinct pairs (not the smallest ids)
    key = np.sort(rng.choice(key, want, replace=False)) if key.size > want else key
    if min_degree:
        key = attach_isolated(key, n, rng)
    lo, hi = key // n, key % n
    A = sp.coo_matrix((np.ones(2 * key.size, np.float32), (np.r_[lo, hi], np.r_[hi, lo])), (n, n))
    A = A.tocsr()
    A.sort_indices()
    return Graph(
        indptr=A.indptr.astype(np.int64),
        indices=A.indices.astype(np.int64),
        name=f"{name}-like" + ("" if scale == 1 else f"-x{scale:g}"),
    )


def plan(g, f, c, scheme, P, options=None, partition=None, epochs=EPOCHS):
    cfg = TrainConfig(epochs=epochs, hidden=(HIDDEN,))
    t0 = time.perf_counter()
    sim = plan_training(PlanTarget(g, cfg, scheme, P, options, partition, 0, f, c))
    return sim, cfg, time.perf_counter() - t0


def volume_mb(sim) -> float:
    """Max over ranks of bytes sent + received per steady-state epoch, MB."""
    med = epoch_median(sim.table.epoch_totals())
    return float((med[:, 0] + med[:, 1]).max()) / 1e6


def cagnet(g, f, c, ranks, log):
    cases = [
        ("1D", "1d", {}),
        ("1.5D c=2", "1.5d", {"replication": 2}),
        ("1.5D c=4", "1.5d", {"replication": 4}),
        ("2D", "2d", {}),
        ("3D", "3d", {}),
    ]
    print(
        f"\n### CAGNET: MB sent + received per rank per epoch ({g.name}, f = {f}, "
        f"hidden {HIDDEN})\n"
    )
    print("| P | " + " | ".join(k for k, _, _ in cases) + " |")
    print("|---" * (len(cases) + 1) + "|")
    for P in ranks:
        cells = []
        for label, scheme, opts in cases:
            sim, _, s = plan(g, f, c, scheme, P, opts)
            cells.append(f"{volume_mb(sim):.1f}")
            log(f"  cagnet P={P} {label} grid {sim.config.to_dict().get('grid', '-')}: {s:.1f} s")
        print(f"| {P} | " + " | ".join(cells) + " |")


def plexus(g, f, c, ranks, log):
    from gcntrain.simulate.sweep import sweep

    prof = load_machine("fugaku")
    print(f"\n### Plexus: best grids by predicted epoch time on fugaku ({g.name})\n")
    print("| P | best grid | epoch ms | runner-up | epoch ms | worst grid | epoch ms | grids |")
    print("|---|---|---|---|---|---|---|---|")
    cfg = TrainConfig(epochs=2, hidden=(HIDDEN,))
    for P in ranks:
        t0 = time.perf_counter()
        res = sweep(
            g,
            cfg,
            P,
            placement(prof, P, None, None),
            schemes=["plexus"],
            options={"permute": "double"},
            num_features=f,
            num_classes=c,
        )
        r = res.ranking
        log(f"  plexus P={P}: {len(r)} grids in {time.perf_counter() - t0:.0f} s")
        print(
            f"| {P} | {r[0]['options']['grid']} | {r[0]['epoch_seconds'] * 1e3:.2f} | "
            f"{r[1]['options']['grid']} | {r[1]['epoch_seconds'] * 1e3:.2f} | "
            f"{r[-1]['options']['grid']} | {r[-1]['epoch_seconds'] * 1e3:.2f} | {len(r)} |"
        )


def _agg(sim, cfg, prof, P):
    t = time_summary(sim, cfg, placement(prof, P, None, None))
    return t["breakdown"]["comm_parts"].get("alltoall", 0.0), t["epoch_seconds"]


def train_agg_mb(sim) -> float:
    """Max over ranks of the bytes the training aggregations send per epoch (the messages
    SuperGCN quantizes; evaluation passes stay exact), MB."""
    t = sim.table
    ph = t.epoch_phases(len(t.epochs) // 2)
    sent = sum(v[:, 0] for k, v in ph.items() if k.endswith(".agg") and not k.startswith("eval"))
    return float(np.max(sent)) / 1e6


def supergcn(g, f, c, ranks, log):
    print(f"\n### SuperGCN: Int2 messages vs unquantized (hier, hybrid, metis; {g.name})\n")
    print(
        "| P | machine | training agg. MB/rank fp32 | Int2 | volume ratio | alltoall ms "
        "fp32 | Int2 | comm speedup | epoch ms fp32 | Int2 |"
    )
    print("|---" * 10 + "|")
    for P in ranks:
        sims = {}
        for bits in (32, 2):
            sims[bits] = plan(g, f, c, "hier", P, {"quant_bits": bits}, "metis")
            log(f"  supergcn P={P} bits {bits}: {sims[bits][2]:.1f} s")
        for name in ("fugaku", "abci"):
            prof = load_machine(name)
            (a32, e32), (a2, e2) = (_agg(s[0], s[1], prof, P) for s in (sims[32], sims[2]))
            v32, v2 = (train_agg_mb(sims[b][0]) for b in (32, 2))
            print(
                f"| {P} | {name} | {v32:.2f} | {v2:.2f} | {v32 / v2:.1f} | {a32 * 1e3:.2f} | "
                f"{a2 * 1e3:.2f} | {a32 / a2:.1f} | {e32 * 1e3:.1f} | {e2 * 1e3:.1f} |"
            )


def distgnn(g, f, c, ranks, log):
    prof = load_machine("abci")
    print(f"\n### DistGNN: cd-0 vs cd-5 (vertex cut, Libra; {g.name}, abci)\n")
    print("| P | MB sent/rank cd-0 | cd-5 | volume ratio | epoch ms cd-0 | cd-5 | speedup |")
    print("|---" * 7 + "|")
    for P in ranks:
        out = {}
        for d in ("0", "5"):
            sim, cfg, s = plan(g, f, c, "vertexcut", P, {"delay": d})
            v = epoch_median(sim.table.epoch_totals())[:, 0].max() / 1e6
            e = time_summary(sim, cfg, placement(prof, P, None, None))["epoch_seconds"]
            out[d] = (v, e)
            log(f"  distgnn P={P} cd-{d}: {s:.1f} s")
        (v0, e0), (v5, e5) = out["0"], out["5"]
        print(
            f"| {P} | {v0:.2f} | {v5:.2f} | {v0 / v5:.1f} | {e0 * 1e3:.1f} | {e5 * 1e3:.1f} "
            f"| {e0 / e5:.2f} |"
        )


TABLES = {
    "cagnet": (cagnet, "reddit", [16, 64, 256]),
    "plexus": (plexus, "products", [64, 256, 1024]),
    "supergcn": (supergcn, "products", [16, 64]),
    "distgnn": (distgnn, "reddit", [16, 64]),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tables", nargs="+", choices=[*TABLES, "all"])
    ap.add_argument("--graph", choices=list(GRAPHS), default=None)
    ap.add_argument("--ranks", default=None, help="comma-separated P (default: per table)")
    ap.add_argument("--scale", type=float, default=1.0, help="shrink the graphs (quick checks)")
    args = ap.parse_args(argv)
    names = list(TABLES) if "all" in args.tables else args.tables

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    graphs: dict = {}
    for name in names:
        fn, gname, ranks = TABLES[name]
        gname = args.graph or gname
        if gname not in graphs:
            t0 = time.perf_counter()
            graphs[gname] = paper_graph(gname, args.scale)
            g = graphs[gname][0]
            log(f"{g.name}: {g.n} nodes, {g.nnz} stored entries ({time.perf_counter() - t0:.0f} s)")
        ranks = [int(p) for p in args.ranks.split(",")] if args.ranks else ranks
        fn(*graphs[gname], ranks, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
