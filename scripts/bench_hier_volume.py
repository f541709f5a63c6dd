"""SuperGCN's pre / post / hybrid aggregation volumes on soc-Slashdot0902 (its Table 5 and
section 5.3), without MPI: per rank pair, the rows each strategy sends per product with S
(`gcntrain.schemes.hier.receiver_split` and `pair_rows`, the functions the runtime and the
plans use), on METIS partitions; then the planned bytes per epoch of `gcntrain simulate
--scheme hier` for each strategy, 32-bit and Int2 messages.

Symmetrized graph; the plans assume dense features of width 64 and 4 classes
(`--features 64 --classes 4`), GCN 64 -> 16 -> 4, float32.  Checks hybrid <= min(pre, post)
on every rank pair and prints the totals; then per strategy the planned bytes per epoch
(all exchanges) and the bytes of the training aggregation exchanges alone, with the Int2
ones (parameters per row, or one pair per message) as a fraction of fp32's.

With ``--measure P`` it also trains for real (``mpiexec -n P gcntrain train``, 3 epochs) on
the same graph with random features of width 64 and random labels (4 classes), hybrid fp32
and Int2 (parameters per row and per message), and prints the measured bytes of the
training aggregation exchanges beside the planned ones.

    python scripts/bench_hier_volume.py [--parts 4,16] [--measure 4] [--shared ../shared]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_simulate import gcntrain, run_json, training_agg_bytes  # noqa: E402


def planned_agg_bytes(argv: list[str], table: Path) -> tuple[dict, int]:
    """(simulate --json, bytes sent by the training aggregation phases over all ranks and
    epochs, from its --per-rank table)."""
    d = run_json([*argv, "--per-rank", str(table)])
    return d, training_agg_bytes(table)


def pair_volumes(S, part: np.ndarray, P: int) -> dict[str, np.ndarray]:
    """Rows sent per ordered rank pair (P x P, [src, dst]) per strategy, renumbered part by
    part as the runtime does."""
    from gcntrain.partition.mvc import AGGR
    from gcntrain.schemes.hier import pair_rows, receiver_split
    from gcntrain.schemes.layout import renumber

    perm, inv, off = renumber(part, P)
    M = S[perm][:, perm].tocsr()
    n = M.shape[0]
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(M.indptr))
    cols = M.indices.astype(np.int64)
    out = {}
    for aggr in AGGR:
        V = np.zeros((P, P), dtype=np.int64)
        for p in range(P):
            a, b = int(M.indptr[off[p]]), int(M.indptr[off[p + 1]])
            cut, src, mode = receiver_split(p, rows[a:b], cols[a:b], off, aggr)
            npre, npost = pair_rows(src, rows[a:b][cut], cols[a:b][cut], mode, P, n)
            V[:, p] = npre + npost
        out[aggr] = V
    return out


def measure(graph, P: int, tmp: Path) -> None:
    """Real runs on P ranks: bytes of the training aggregation exchanges, measured and
    planned, fp32 against Int2."""
    from gcntrain.data.graph import Graph
    from gcntrain.data.store import write_graph

    rng = np.random.default_rng(0)
    n = graph.n
    split = rng.random(n)
    g = Graph(
        indptr=graph.indptr,
        indices=graph.indices,
        features=rng.standard_normal((n, 64)).astype(np.float32),
        labels=rng.integers(0, 4, n),
        train_mask=split < 0.5,
        val_mask=(split >= 0.5) & (split < 0.75),
        test_mask=split >= 0.75,
        name="slashdot-random-features",
    )
    path = tmp / "slashdot-rf.h5"
    write_graph(path, g)
    part = tmp / f"rf-metis{P}.h5"
    run_json(["partition", str(path), "-m", "metis", "--parts", str(P), "-o", str(part)])
    common = ["--scheme", "hier", "--partition", str(part), "--epochs", "3"]
    common += ["--early-stopping", "0", "--eval-every", "3", "--hidden", "16"]
    print(f"\nmeasured, {P} ranks, random features 64, 4 classes, 3 epochs (training aggregation)")
    print(f"{'run':26} {'measured MB':>12} {'planned MB':>11} {'ratio':>8}")
    base = None
    for label, extra in (
        ("hybrid fp32", []),
        ("hybrid Int2 per row", ["--quant-bits", "2"]),
        ("hybrid Int2 per message", ["--quant-bits", "2", "--quant-group", "0"]),
    ):
        mt, pt = tmp / "m.csv", tmp / "p.csv"
        cmd = ["mpiexec", "-n", str(P), *gcntrain(), "train", str(path), *common, *extra]
        subprocess.run([*cmd, "--quiet", "--per-rank", str(mt)], check=True, capture_output=True)
        run_json(["simulate", str(path), "--ranks", str(P), *common, *extra, "--per-rank", str(pt)])
        got = [training_agg_bytes(t) for t in (mt, pt)]
        base = got[0] if base is None else base
        print(
            f"{label:26} {got[0] / 1e6:12.3f} {got[1] / 1e6:11.3f} {'1/%.2f' % (base / got[0]):>8}"
        )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="4,16")
    ap.add_argument("--measure", type=int, default=0, help="ranks of the measured runs (0: none)")
    ap.add_argument("--shared", default=str(Path(__file__).resolve().parents[1].parent / "shared"))
    args = ap.parse_args()
    from gcntrain.data.store import read_graph
    from gcntrain.partition.metis import metis_partition

    snap = Path(args.shared) / "datasets" / "snap" / "soc-Slashdot0902.txt.gz"
    with tempfile.TemporaryDirectory() as tmp:
        g = str(Path(tmp) / "slashdot.h5")
        subprocess.run(
            [*gcntrain(), "convert", str(snap), "-o", g, "--symmetrize"],
            check=True,
            capture_output=True,
        )
        graph = read_graph(g)
        S = graph.adjacency().tocsr()
        print(f"soc-Slashdot0902 symmetrized: {graph.n} nodes, {graph.nnz} entries")
        for P in map(int, args.parts.split(",")):
            part = metis_partition(graph.indptr, graph.indices, P, seed=0)
            V = pair_volumes(S, part, P)
            worse = int(np.count_nonzero(V["hybrid"] > np.minimum(V["pre"], V["post"])))
            tot = {k: int(v.sum()) for k, v in V.items()}
            print(
                f"\nMETIS {P} parts, rows per product with S (all pairs): pre {tot['pre']}, "
                f"post {tot['post']}, hybrid {tot['hybrid']} "
                f"(min(pre, post) / hybrid = {min(tot['pre'], tot['post']) / tot['hybrid']:.3f}); "
                f"pairs where hybrid > min(pre, post): {worse} of {int((V['post'] > 0).sum())}"
            )
            pfile = str(Path(tmp) / f"metis{P}.h5")
            run_json(["partition", g, "-m", "metis", "--parts", str(P), "-o", pfile])
            sim = ["simulate", g, "--ranks", str(P), "--features", "64", "--classes", "4"]
            sim += ["--hidden", "16", "--epochs", "3", "--scheme", "hier", "--partition", pfile]
            print(
                f"{'planned':26} {'MB sent/epoch total':>19} {'max':>7} {'msgs max':>9} "
                f"{'agg MB (3 epochs)':>17} {'ratio':>8}"
            )
            base = None
            for label, extra in (
                ("pre fp32", ["--aggr", "pre"]),
                ("post fp32", ["--aggr", "post"]),
                ("hybrid fp32", ["--aggr", "hybrid"]),
                ("hybrid Int2 per row", ["--quant-bits", "2"]),
                ("hybrid Int2 per message", ["--quant-bits", "2", "--quant-group", "0"]),
            ):
                d, agg = planned_agg_bytes([*sim, *extra], Path(tmp) / "t.csv")
                base = agg if label == "hybrid fp32" else base
                ratio = f"1/{base / agg:.2f}" if base and label.startswith("hybrid") else ""
                print(
                    f"{label:26} {d['bytes_sent_mean'] * P / 1e6:19.3f}"
                    f" {d['bytes_sent_max'] / 1e6:7.3f} {d['messages_max']:9d}"
                    f" {agg / 1e6:17.3f} {ratio:>8}"
                )
        if args.measure:
            measure(graph, args.measure, Path(tmp))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
