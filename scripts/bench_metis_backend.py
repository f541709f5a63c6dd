#!/usr/bin/env python
"""METIS (pymetis) against its fallback without pymetis (Mt-KaHyPar graph mode, cut
objective, DETERMINISTIC preset) on soc-Slashdot0902 and Cora.

For each graph and each ``--parts`` P, both backends partition the rows exactly as
``gcntrain partition --method metis`` does (`run_method`: row-nonzero vertex weights,
imbalance 0.03 unless ``--eps``, seed 0; the fallback also with ``--seeds`` more seeds).
Columns: edge cut; the 1D SpMM volume (rows of H sent per SpMM: total, busiest sender and
receiver; `comm_volume`); messages; nnz imbalance (max / mean of the parts' nonzeros, what
the vertex weights balance) and row imbalance; wall and CPU seconds (Mt-KaHyPar runs the
process's threads, pymetis one).  Below each graph: the fallback's ratios to METIS.

Slashdot is read as ``gcntrain convert ... --symmetrize --self-loops drop`` reads it (the
features that ``--features 32 --classes 4`` add do not change the partition); Cora as
``gcntrain convert .../ind.cora``.  Run from the repository root, with pymetis installed:
``python scripts/bench_metis_backend.py [--parts 4,16,64] [--graphs cora,slashdot]``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gcntrain.data.convert import convert_source  # noqa: E402
from gcntrain.partition import mtk  # noqa: E402
from gcntrain.partition.methods import run_method  # noqa: E402
from gcntrain.partition.metis import BACKEND_ENV, metis_backend  # noqa: E402
from gcntrain.partition.report import build_report  # noqa: E402

sys.path.insert(0, str(ROOT / "scripts"))
from bench_partitions import shared_dir, table  # noqa: E402  (the same table layout)

COLUMNS = [
    "backend",
    "edge cut",
    "vol total",
    "max send",
    "max recv",
    "msgs",
    "nnz imb",
    "rows imb",
    "seconds",
    "cpu s",
]


def load(name: str):
    data = shared_dir() / "datasets"
    if name == "slashdot":
        src = data / "snap" / "soc-Slashdot0902.txt.gz"
        return convert_source(str(src), symmetrize=True, self_loops="drop")
    if name == "cora":
        return convert_source(str(data / "planetoid" / "ind.cora"))
    raise SystemExit(f"unknown graph {name!r} (cora, slashdot)")


def partition(backend: str, g, P: int, eps: float, seed: int) -> tuple[dict, float]:
    """`run_method("metis")` with `backend` forced; (its report, CPU seconds)."""
    os.environ[BACKEND_ENV] = backend
    c = time.process_time()
    result = run_method("metis", g.indptr, g.indices, P, seed=seed, imbalance=eps)
    cpu = time.process_time() - c
    return build_report(g.indptr, g.indices, result), cpu


def row(label: str, rep: dict, cpu: float) -> list:
    keys = ["edge_cut", "volume_total", "volume_max_send", "volume_max_recv", "messages_total"]
    out = [label, *(int(rep[k]) for k in keys)]
    out += [float(rep["nnz_imbalance"]), float(rep["size_imbalance"])]
    return [*out, float(rep["seconds"]), round(cpu, 3)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graphs", default="slashdot,cora")
    ap.add_argument("--parts", default="4,16,64")
    ap.add_argument("--eps", type=float, default=0.03)
    ap.add_argument("--seeds", type=int, default=2, help="fallback seeds 0..N-1 (default 2)")
    args = ap.parse_args(argv)
    parts = [int(p) for p in args.parts.split(",")]
    os.environ[BACKEND_ENV] = "pymetis"
    print(f"METIS: {metis_backend()}")
    os.environ[BACKEND_ENV] = "mtkahypar"
    print(f"fallback: {metis_backend()}")
    mtk.mtkahypar_initializer()  # started once, outside the timings
    print(
        f"{platform.machine()}, Python {platform.python_version()}, "
        f"Mt-KaHyPar threads {mtk.initializer_threads()}, pymetis 1 thread; "
        f"vertex weights: row nonzeros; eps {args.eps}\n"
    )
    t_all = time.perf_counter()
    for name in args.graphs.split(","):
        t = time.perf_counter()
        g = load(name)
        print(f"== {name}: n = {g.n:,}, nnz = {g.nnz:,}, loaded in {time.perf_counter() - t:.1f} s")
        ratios = []
        for P in parts:
            rows = []
            ref, cpu = partition("pymetis", g, P, args.eps, 0)
            rows.append(row("pymetis", ref, cpu))
            for s in range(args.seeds):
                rep, cpu = partition("mtkahypar", g, P, args.eps, s)
                rows.append(row(f"mtkahypar seed {s}", rep, cpu))
                if s == 0:
                    ratios.append((P, ref, rep))
            print(f"\nP = {P}\n{table(COLUMNS, rows)}")
        print(f"\n{name}, fallback (seed 0) / METIS:")
        for P, ref, rep in ratios:
            cut = rep["edge_cut"] / ref["edge_cut"]
            vol = rep["volume_total"] / ref["volume_total"]
            mx = max(rep["volume_max_send"], rep["volume_max_recv"]) / max(
                ref["volume_max_send"], ref["volume_max_recv"]
            )
            secs = rep["seconds"] / max(ref["seconds"], 1e-3)
            print(
                f"  P = {P:3d}: edge cut {cut:.3f}, total volume {vol:.3f}, max volume {mx:.3f}, "
                f"nnz imbalance {rep['nnz_imbalance']:.3f} vs {ref['nnz_imbalance']:.3f}, "
                f"time x{secs:.1f}"
            )
        print()
    print(f"total {time.perf_counter() - t_all:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
