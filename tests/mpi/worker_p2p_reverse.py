"""MPI worker of tests/test_p2p_reverse.py: `mpiexec -n P python tests/mpi/worker_p2p_reverse.py
CASE`.

p2p's backward product by reverse exchange (partial sums sent back along the forward pattern)
or by fetching S^T's rows, chosen per pair of ranks.  Every rank checks its own part: training
equals serial training, measured traffic equals the plan on every phase; and it reports the
rows it sends and receives in one forward and one backward product, which the test compares
with counts it computes itself from the matrix and the partition.  Verdicts are reduced over
all ranks; rank 0 prints one JSON line {"case", "ranks", "ok", "details"} with every rank's
details.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from gcntrain.comm.counters import Tally  # noqa: E402
from gcntrain.data.convert import convert_source  # noqa: E402
from gcntrain.data.generate import random_node_data, rmat  # noqa: E402
from gcntrain.data.graph import Graph  # noqa: E402
from gcntrain.job.runner import load_rank, train_with  # noqa: E402
from gcntrain.job.spec import JobSpec  # noqa: E402
from gcntrain.model.normalize import support_kind  # noqa: E402
from gcntrain.model.phase import Phase  # noqa: E402
from gcntrain.model.trainer import TrainConfig  # noqa: E402
from gcntrain.partition.basic import block_partition, random_partition  # noqa: E402
from gcntrain.schemes.registry import SCHEMES  # noqa: E402
from gcntrain.simulate.run import plan_training  # noqa: E402
from gcntrain.simulate.target import PlanTarget  # noqa: E402
from tests.mpi.worker import bcast_object, rel_err, serial_fit, shared_dir  # noqa: E402

#: width of the probe products (rows = bytes / (WIDTH * 8))
WIDTH = 3
#: relative tolerance of the weights against serial training (float64)
TOL = 1e-5


def gemat11() -> Graph:
    """HB/gemat11's pattern (directed, 4,929 nodes) with seeded synthetic node data."""
    g = convert_source(str(shared_dir() / "datasets" / "suitesparse" / "gemat11.mtx"))
    g.data = None  # the pattern: the matrix's values (-216..623) are not edge weights
    return random_node_data(g, 8, 3, seed=7)


def gemat11_partition() -> np.ndarray:
    """The paper authors' 3-way hypergraph partition of gemat11's rows."""
    path = shared_dir() / "datasets" / "suitesparse" / "gemat11.mtx.3.hp"
    return np.array(path.read_text().split(), dtype=np.int64)


def hub_graph(n: int = 150, hubs: int = 6, seed: int = 3) -> Graph:
    """A directed graph whose nodes point at a few hubs (and one random node each): few rows
    needed forward, many by S^T's pattern, so every pair of ranks takes the reverse exchange."""
    rng = np.random.default_rng(seed)
    hub_ids = np.linspace(0, n - 1, hubs).astype(np.int64)
    rows, cols = [], []
    for i in range(n):
        targets = set(rng.choice(hub_ids, 3, replace=False).tolist())
        targets.add(int(rng.integers(0, n)))
        targets.discard(i)
        rows += [i] * len(targets)
        cols += sorted(targets)
    indptr = np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=n)))).astype(np.int64)
    g = Graph(indptr=indptr, indices=np.asarray(cols, np.int32), name="hubs", directed=True)
    return random_node_data(g, 6, 3, seed=seed)


def directed_cases(size: int) -> list[tuple[str, Graph, np.ndarray]]:
    """(label, graph, partition vector): directed R-MAT graphs (the backward product mixes
    reverse and fetch pairs at 3 and 4 ranks, reverse at 2) and the hub graph (reverse)."""
    a = rmat(7, edge_factor=4, seed=2, num_features=6, num_classes=3, symmetrize=False)
    b = rmat(7, edge_factor=4, seed=5, num_features=6, num_classes=3, symmetrize=False)
    h = hub_graph()
    return [
        ("rmat-s2-random", a, random_partition(a.n, size, seed=1)),
        ("rmat-s5-block", b, block_partition(b.n, size)),
        ("hubs-random", h, random_partition(h.n, size, seed=2)),
    ]


def symmetric_cases(size: int) -> list[tuple[str, Graph, np.ndarray]]:
    """An undirected R-MAT graph: GCN's S is symmetric, GraphSAGE-mean's has a symmetric
    pattern only; both must keep the fetch exchange."""
    g = rmat(7, edge_factor=4, seed=2, num_features=6, num_classes=3)
    return [("rmat-undirected-random", g, random_partition(g.n, size, seed=1))]


def probe(world, g, part, model: str) -> dict:
    """Rows this rank sends and receives in one ``S @ X`` and one ``S^T @ X`` (a fresh
    setup, random X of `WIDTH` float64 columns)."""
    cfg = TrainConfig(dtype="float64", model=model)
    kind = support_kind(cfg.model, cfg.aggregator)
    sch = SCHEMES["p2p"]
    world.tally = Tally()
    _, _, layout, local = load_rank(world, JobSpec(g, cfg, "p2p", {}, part))
    ops = sch.setup(world, layout, local, kind)
    X = np.random.default_rng(world.rank).random((local.orig_ids.size, WIDTH))
    first = (
        ops.aggregate(X, phase=Phase("aggregate", 0, "fwd")),
        ops.aggregate_t(X, phase=Phase("aggregate", 0, "bwd")),
    )
    buffers = {k: id(b) for k, b in ops.scratch._bufs.items()}
    # the same products again: bit-identical, and through the same message buffers (no
    # allocation in the epoch loop); counted under another layer's phases
    again = (
        ops.aggregate(X, phase=Phase("aggregate", 1, "fwd")),
        ops.aggregate_t(X, phase=Phase("aggregate", 1, "bwd")),
    )
    kept = list(ops.scratch._bufs.values())
    if ops.shared is not None:  # the node windows' memory is not the caller's either
        kept += [np.frombuffer(slot[2], np.uint8) for slot in ops.shared._slots if slot]
    out = {
        "repeat_identical": all(np.array_equal(a, b) for a, b in zip(first, again)),
        "buffers_reused": buffers == {k: id(b) for k, b in ops.scratch._bufs.items()},
        # a product's result is the caller's: never a kept message buffer
        "results_own_memory": not any(
            np.shares_memory(r, b) for r in (*first, *again) for b in kept
        ),
        "buffers": len(buffers),
        "windowed": ops.shared is not None,
    }
    for name, key in (("fwd", "L0.fwd.agg"), ("bwd", "L0.bwd.agg")):
        v = np.asarray(world.tally.phases.get(key, np.zeros(4)), dtype=np.int64)
        out[name] = [int(v[0]) // (WIDTH * 8), int(v[1]) // (WIDTH * 8)]
    return out


def train_check(world, g, part, model: str, epochs: int = 5) -> tuple[bool, dict]:
    """Train p2p for `epochs` epochs: weights against serial, measured phases against the
    plan (whole run, setup included), and the plan's notes."""
    cfg = TrainConfig(epochs=epochs, seed=3, dtype="float64", early_stopping=0, model=model)
    world.tally = Tally()
    run = train_with(world, JobSpec(g, cfg, "p2p", {}, part))
    err = rel_err(run.result.weights, serial_fit(g, cfg).weights)
    planned = None
    if world.rank == 0:
        sim = plan_training(PlanTarget(g, cfg, "p2p", world.size, {}, part))
        planned = (sim.table.phases(), sim.scheme.plan_notes(sim.ctx))
    phases, notes = bcast_object(planned)
    measured = run.phases().phases
    diffs = []
    for k in sorted(set(phases) | set(measured)):
        a = np.asarray(measured.get(k, np.zeros(4, np.int64)))
        b = phases[k][world.rank] if k in phases else np.zeros(4, np.int64)
        if not np.array_equal(a, b):
            diffs.append(f"{k}: measured {a.tolist()} planned {b.tolist()}")
    good = err <= TOL and not diffs
    return good, {"rel_err": err, "plan_diffs": diffs[:3], "notes": notes}


def check(world, cases, models) -> tuple[bool, list]:
    ok, details = True, []
    for label, g, part in cases:
        for model in models:
            good, d = train_check(world, g, part, model)
            d.update(probe(world, g, part, model))
            ok &= good
            details.append({"graph": label, "model": model, "rank": world.rank, **d})
    return ok, details


def case_gemat11(world):
    """gemat11 with the authors' 3-way partition (GCN)."""
    return check(world, [("gemat11", gemat11(), gemat11_partition())], ("gcn",))


def case_directed(world):
    """Directed graphs (GCN and GraphSAGE) and an undirected one (GCN, GraphSAGE)."""
    return check(world, directed_cases(world.size) + symmetric_cases(world.size), ("gcn", "sage"))


CASES = {"gemat11": case_gemat11, "directed": case_directed}


if __name__ == "__main__":
    from tests.mpi.worker import main  # the one verdict-reducing main of the MPI workers

    sys.exit(main(CASES))
