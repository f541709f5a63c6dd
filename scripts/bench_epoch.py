"""gcntrain's serial epoch against PyG and plain-PyTorch anchors, and np 2 against serial.

Interleaved runs, medians and ratios, with the machine's load and memory bandwidth measured in
the same run.

    python scripts/bench_epoch.py [--rounds 5] [--epochs 12] [--threads 2]
                                  [--anchor-python PY] [--shared ../shared] [--no-cora]
                                  [--size 200000,2000000] [--graph G.h5 ...] [--no-anchors]
                                  [--mpi] [--mpi-rounds 3] [--mpi-baseline DIR]
                                  [--reorders degree,rcm]
                                  [--breakdown] [--baseline DIR] [--variant LABEL:K=V,...]

Graphs: the generated 200k-node / 4M-nonzero benchmark graph
(``../shared/bench/make_bench_graph.py 200000 2000000 128 16 7``, symmetrised by
``gcntrain convert``; `--size NODES,EDGES` generates another size, e.g. ``--size 20000,200000``
for a quick run) and Cora; `--graph G.h5` (repeatable) runs those graph files instead of the
generated one.  Model: gcntrain's defaults (GCN F -> 16 -> C, dropout 0.5,
Adam, an evaluation pass every epoch), float32.

Each round runs, in an order rotated from round to round: ``gcntrain train G --threads T``
(its ``--json`` median epoch and breakdown), then, when `--anchor-python` names an interpreter
with PyTorch (``../shared/bench/anchor_env.sh`` builds one; by default the one in
``$TMPDIR/anchors-venv``), three anchors: ``pyg``, PyG's ``GCNConv(cached=True)`` over a CSR
adjacency (``../shared/bench/pyg_epoch.py``: no dropout, no evaluation pass);
``torch.sparse``, plain PyTorch doing gcntrain's work with ``torch.sparse.mm``, whose backward
builds the support's transpose every call (`anchor_torch_epoch.py`); ``torch.strong``, the same
work with the backward product taken as ``S @ grad``, S being symmetric
(`anchor_torch_strong.py`).  Each round prints the load and a triad, then every tool's median
epoch; the summary gives each tool's median over rounds and gcntrain / each anchor.

Memory: one more serial run in a child process under `tracemalloc` (which NumPy reports its
array buffers to) prints the arrays held at the first epoch boundary (graph, support and its
transpose, features, weights, Adam moments) and the peak traced during each later epoch, and
their ratio.

`--reorders none,degree,rcm`: gcntrain also runs with ``--reorder ORDER`` for each in the same
rounds (the default run is ``--reorder auto``): ratios of medians against the default run
and the anchors, and the median of the per-round ratios.  `--no-anchors`: gcntrain only.

`--mpi`: ``mpiexec -n 2 gcntrain train G --threads 1 --scheme S`` for 1d and p2p against
serial ``--threads 1``, interleaved, `--mpi-rounds` rounds; ratio = np 2 / serial.
`--mpi-baseline DIR` adds the same 1d and p2p runs from the gcntrain package of another
checkout (``git worktree add DIR COMMIT``) to the same rounds, for a side-by-side ratio.

`--breakdown` (scripts/bench_epoch_breakdown.py): where the serial epoch goes on the 200k
graph, piece by piece (every Ops call by operation, layer and pass, ReLU and its gradient,
Adam, the weight decay, the rest), in a fresh process per run (``gcntrain.api.train`` with
the timers patched in), with the minor page faults per epoch.  `--baseline DIR` runs the
same breakdown from the gcntrain package of another checkout in the same rounds
(alternating, the order rotated from round to round), `--tree DIR` names the checkout this
tree's runs take their package from, and ``--variant LABEL:OPT=VALUE,...`` adds runs of
this tree with other training options (e.g. ``cache:eval_cache=true``); `--lockstep` runs
a round's variants at once with their epochs taken in turn (each pair of epochs within a
second of each other, for a machine others load).  Each round prints the load and a triad
beside its runs; the summary gives each piece's median over rounds, each run's arrays held
between epochs and traced peak (once per run), and each variant's epoch over the
baseline's, round by round (a ratio of runs made side by side) and their spread.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_epoch_breakdown import (  # noqa: E402
    BREAKDOWN_EPOCHS,
    BREAKDOWN_SKIP,
    MEMORY_SNIPPET,
    bench_breakdown,
)
from bench_simulate import gcntrain, machine_state, mpiexec  # noqa: E402

HERE = Path(__file__).resolve().parent
DEFAULT_SHARED = HERE.parent.parent / "shared"
DEFAULT_ANCHOR = Path(tempfile.gettempdir()) / "anchors-venv" / "bin" / "python"


def sh(cmd: list[str], **kw) -> str:
    """Run `cmd`, return its stdout; on failure print its stderr and stop."""
    res = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if res.returncode != 0:
        sys.exit(f"failed ({res.returncode}): {' '.join(cmd)}\n{res.stderr[-2000:]}")
    return res.stdout


def gcn_json(
    graph: str,
    threads: int,
    epochs: int,
    extra: list[str] | tuple = (),
    np_: int = 1,
    code: str | None = None,
) -> dict:
    """``gcntrain train`` on `graph`, its --json output; `code`: a checkout whose gcntrain
    package runs instead of the installed one (put first on PYTHONPATH)."""
    cmd = [*gcntrain(), "train", graph, "--threads", str(threads), "--epochs", str(epochs)]
    cmd += [*extra, "--json", "--quiet", "--early-stopping", "0"]
    if np_ > 1:
        cmd = [mpiexec(), "-n", str(np_), *cmd]
    env = None
    if code:
        path = os.pathsep.join(p for p in (code, os.environ.get("PYTHONPATH", "")) if p)
        env = {**os.environ, "PYTHONPATH": path}
    out = sh(cmd, env=env, cwd=tempfile.gettempdir() if code else None)
    return json.loads([ln for ln in out.splitlines() if ln.startswith("{")][0])


def anchor_seconds(python: str, script: Path, npz: str, threads: int) -> float:
    """An anchor script's median epoch (the second field of its one output line)."""
    out = sh([python, str(script), npz, "16", str(threads)])
    return float(out.split()[1])


def export_npz(h5: str, npz: str) -> None:
    """The graph of `h5` in the anchors' .npz format (edges once per direction stored)."""
    import numpy as np

    from gcntrain.data.store import read_graph

    g = read_graph(h5)
    rows = np.repeat(np.arange(g.n), np.diff(g.indptr))
    feats = g.features.toarray() if hasattr(g.features, "toarray") else g.features
    np.savez(
        npz,
        edges=np.stack([rows, g.indices], axis=1).astype(np.int64),
        node_features=np.asarray(feats, dtype=np.float32),
        node_labels=np.asarray(g.labels, dtype=np.int64),
        train_masks=np.asarray(g.train_mask, dtype=bool)[None, :],
    )


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}" if b == b and b > 0 else "-"


def bench_serial(graphs: dict, a, anchor: str | None) -> None:
    anchors = {
        "pyg": Path(a.shared) / "bench" / "pyg_epoch.py",
        "torch.sparse": HERE / "anchor_torch_epoch.py",
        "torch.strong": HERE / "anchor_torch_strong.py",
    }
    tools = ["gcntrain"] + [f"gcntrain --reorder {o}" for o in a.reorders]
    if anchor:
        tools += list(anchors)
    for name, (h5, npz) in graphs.items():
        times: dict[str, list[float]] = {t: [] for t in tools}
        parts: dict[str, list[float]] = {"aggregation": [], "dense": [], "other": []}
        for r in range(a.rounds):
            print(f"  {name} round {r + 1}: {machine_state()}", flush=True)
            order = tools[r % len(tools) :] + tools[: r % len(tools)]
            for tool in order:
                if tool.startswith("gcntrain"):
                    js = gcn_json(h5, a.threads, a.epochs, tool.split()[1:])
                    times[tool].append(js["epoch_seconds"])
                    if tool == "gcntrain":
                        for k in parts:
                            parts[k].append(js["epoch_breakdown"][k])
                else:
                    times[tool].append(anchor_seconds(anchor, anchors[tool], npz, a.threads))
            print(
                f"  {name} round {r + 1}: "
                + ", ".join(f"{t} {times[t][-1] * 1e3:.1f} ms" for t in tools),
                flush=True,
            )
        g = med(times["gcntrain"])
        print(f"{name}: median epoch over {a.rounds} rounds, {a.threads} threads")
        for t in tools:
            m = med(times[t])
            vs = (
                f"   / gcntrain: {ratio(m, g)}, / pyg: {ratio(m, med(times['pyg']))}"
                if t.startswith("gcntrain --reorder") and "pyg" in times
                else f"   / gcntrain: {ratio(m, g)}"
                if t.startswith("gcntrain --reorder")
                else ""
                if t == "gcntrain"
                else f"   gcntrain / {t}: {ratio(g, m)}"
            )
            print(f"  {t:<14} {m * 1e3:9.1f} ms{vs}")
            if t.startswith("gcntrain --reorder"):  # per round: the same spell of the machine
                pairs = [x / y for x, y in zip(times[t], times["gcntrain"])]
                below = sum(x < 1 for x in pairs)
                print(
                    f"    paired per round, {t} / gcntrain: median {med(pairs):.3f}, "
                    f"{below} of {len(pairs)} below 1"
                )
        print(
            "  gcntrain breakdown (median epoch): "
            + ", ".join(f"{k} {med(v) * 1e3:.1f} ms" for k, v in parts.items())
        )


def bench_memory(graphs: dict, a) -> None:
    for name, (h5, _) in graphs.items():
        out = sh([sys.executable, "-c", MEMORY_SNIPPET, h5, str(a.threads)])
        d = json.loads(out.strip().splitlines()[-1])
        print(
            f"{name}: arrays held between epochs {d['held'] / 2**20:.1f} MiB, peak during an "
            f"epoch {d['peak'] / 2**20:.1f} MiB, ratio {d['peak'] / d['held']:.2f}"
        )


def bench_mpi(h5: str, a) -> None:
    runs = {"serial": (1, [], None), "1d np2": (2, ["--scheme", "1d"], None)}
    runs["p2p np2"] = (2, ["--scheme", "p2p"], None)
    if a.mpi_baseline:
        runs["1d np2 base"] = (2, ["--scheme", "1d"], a.mpi_baseline)
        runs["p2p np2 base"] = (2, ["--scheme", "p2p"], a.mpi_baseline)
    times: dict[str, list[float]] = {k: [] for k in runs}
    keys = list(runs)
    for r in range(a.mpi_rounds):
        for k in keys[r % len(keys) :] + keys[: r % len(keys)]:
            np_, extra, code = runs[k]
            times[k].append(gcn_json(h5, 1, a.epochs, extra, np_, code)["epoch_seconds"])
        print(
            f"  round {r + 1}: " + ", ".join(f"{k} {v[-1] * 1e3:.1f} ms" for k, v in times.items()),
            flush=True,
        )
    s = med(times["serial"])
    print(f"--threads 1, median over {a.mpi_rounds} rounds (no environment variables set)")
    for k in keys:
        print(f"  {k:<12} {med(times[k]) * 1e3:9.1f} ms   / serial: {ratio(med(times[k]), s)}")
    if a.mpi_baseline:
        for k in ("1d np2", "p2p np2"):
            b = med(times[f"{k} base"])
            print(f"  {k}: this tree / {a.mpi_baseline}: {ratio(med(times[k]), b)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--epochs", type=int, default=12)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--anchor-python", default=None)
    ap.add_argument("--shared", default=str(DEFAULT_SHARED))
    ap.add_argument("--no-cora", action="store_true")
    ap.add_argument("--no-anchors", action="store_true", help="gcntrain's runs only")
    ap.add_argument(
        "--graph",
        action="append",
        default=[],
        help="a graph file to run instead of the generated benchmark graph (repeatable; "
        "with the anchors, it is exported to their .npz format)",
    )
    ap.add_argument(
        "--size",
        type=lambda v: tuple(int(x) for x in v.split(",")),
        default=(200000, 2000000),
        help="NODES,EDGES of the generated graph (default 200000,2000000: the 200k-node / "
        "4M-nonzero benchmark; smaller for a quick run)",
    )
    ap.add_argument("--mpi", action="store_true")
    ap.add_argument("--mpi-rounds", type=int, default=3)
    ap.add_argument("--only-mpi", action="store_true", help="skip the serial comparison")
    ap.add_argument(
        "--mpi-baseline",
        default=None,
        help="with --mpi: also run 1d and p2p from this checkout (e.g. a git worktree of an "
        "older commit), interleaved, and print this tree / that one",
    )
    ap.add_argument(
        "--reorders",
        type=lambda v: [o for o in v.split(",") if o],
        default=[],
        help="also run gcntrain with --reorder ORDER for each (e.g. degree,rcm)",
    )
    ap.add_argument("--breakdown", action="store_true", help="the per-piece serial epoch")
    ap.add_argument(
        "--baseline",
        default=None,
        help="with --breakdown: also run the gcntrain package of this checkout (a git "
        "worktree of an older commit), alternating with this tree",
    )
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        help="with --breakdown: LABEL:OPTION=VALUE,... runs this tree with other options",
    )
    ap.add_argument(
        "--tree",
        default=None,
        help="with --breakdown: the checkout whose gcntrain 'this tree' and the variants run "
        "(default: this script's)",
    )
    ap.add_argument(
        "--lockstep",
        action="store_true",
        help="with --breakdown: run the variants of a round at once, their epochs in turn "
        "(`lockstep_round`)",
    )
    ap.add_argument(
        "--breakdown-log",
        default=None,
        help="with --breakdown: append every run's figures to this file (JSON lines)",
    )
    ap.add_argument(
        "--breakdown-epochs",
        type=int,
        default=BREAKDOWN_EPOCHS,
        help=f"with --breakdown: epochs per run (the first {BREAKDOWN_SKIP} not counted)",
    )
    a = ap.parse_args()
    for opt in ("baseline", "tree"):
        if getattr(a, opt):
            setattr(a, opt, os.path.abspath(getattr(a, opt)))
            if not os.path.isfile(os.path.join(getattr(a, opt), "gcntrain", "__init__.py")):
                ap.error(f"--{opt} {getattr(a, opt)}: no gcntrain package there")
    if a.mpi_baseline:
        if not a.mpi:
            ap.error("--mpi-baseline compares MPI runs: give --mpi too")
        a.mpi_baseline = os.path.abspath(a.mpi_baseline)
        if not os.path.isfile(os.path.join(a.mpi_baseline, "gcntrain", "__init__.py")):
            ap.error(f"--mpi-baseline {a.mpi_baseline}: no gcntrain package there")
    anchor = a.anchor_python or (str(DEFAULT_ANCHOR) if DEFAULT_ANCHOR.exists() else None)
    anchor = None if a.no_anchors else anchor
    if anchor and subprocess.run([anchor, "-c", "import torch_geometric"]).returncode != 0:
        print(f"{anchor} has no PyTorch Geometric: anchors skipped")
        anchor = None
    print(f"before: {machine_state()}", flush=True)
    print(f"anchors: {anchor or 'none (pass --anchor-python; ../shared/bench/anchor_env.sh)'}")
    with tempfile.TemporaryDirectory() as tmp:
        npz, h5 = os.path.join(tmp, "g.npz"), os.path.join(tmp, "g.h5")
        maker = Path(a.shared) / "bench" / "make_bench_graph.py"
        nodes, edges = a.size
        if a.graph:  # the given files; .npz beside them in tmp, for the anchors
            graphs = {}
            for i, g in enumerate(a.graph):
                gnpz = os.path.join(tmp, f"g{i}.npz")
                if anchor:
                    export_npz(g, gnpz)
                graphs[Path(g).name] = (os.path.abspath(g), gnpz)
            h5 = graphs[Path(a.graph[0]).name][0]
        else:
            sh([sys.executable, str(maker), str(nodes), str(edges), "128", "16", "7", npz])
            sh([*gcntrain(), "convert", npz, "-o", h5, "--symmetrize"])
            label = "200k/4M" if a.size == (200000, 2000000) else f"{nodes}n/{edges}e"
            graphs = {label: (h5, npz)}
        if a.breakdown:
            bench_breakdown(h5, a)
            print(f"after: {machine_state()}")
            return 0
        if not a.no_cora:
            cora, cnpz = os.path.join(tmp, "cora.h5"), os.path.join(tmp, "cora.npz")
            src = Path(a.shared) / "datasets" / "planetoid" / "ind.cora"
            sh([*gcntrain(), "convert", str(src), "-o", cora])
            export_npz(cora, cnpz)
            graphs["cora"] = (cora, cnpz)
        sh([*gcntrain(), "train", h5, "--epochs", "1", "--quiet"])  # compile once
        if not a.only_mpi:
            bench_serial(graphs, a, anchor)
            bench_memory(graphs, a)
        if a.mpi:
            bench_mpi(h5, a)
    print(f"after: {machine_state()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
