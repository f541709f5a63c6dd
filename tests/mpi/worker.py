"""MPI test worker: `mpiexec -n P python tests/mpi/worker.py CASE`.

Every rank checks its own part; verdicts are reduced over all ranks (a failure on one rank
fails all), rank 0 prints one JSON line {"case", "ranks", "ok", "details"}, and every rank
exits with the same status (0 ok, 1 failed).  Driven by tests/test_mpi_schemes.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from gcntrain.comm.communicator import Comm
from gcntrain.comm.counters import Tally, same_volume
from gcntrain.data.convert import convert_source
from gcntrain.data.generate import rmat
from gcntrain.model.normalize import support_kind, support_matrix
from gcntrain.model.ops import SerialOps
from gcntrain.model.trainer import TrainConfig, fit
from gcntrain.partition.basic import block_partition, random_partition
from gcntrain.partition.hypergraph import column_nets, km1
from gcntrain.partition.metis import metis_partition
from gcntrain.schemes import driver, registry
from gcntrain.schemes.schedule import record_schedule


def shared_dir() -> Path:
    here = Path(__file__).resolve().parents[2]
    for cand in (here.parent / "shared", Path("/work/shared")):
        if cand.is_dir():
            return cand
    raise FileNotFoundError("shared/ datasets not found beside the repository")


def cora():
    return convert_source(str(shared_dir() / "datasets" / "planetoid" / "ind.cora"))


def masks_of(g):
    return {"train": g.train_mask, "val": g.val_mask, "test": g.test_mask}


def scheme_cases(g, size):
    """(label, scheme, replication, partition vector) per the acceptance list."""
    out = []
    out.append(("1d", "1d", 1, block_partition(g.n, size)))
    c = 2 if size == 4 else 1
    B = size // c
    out.append((f"1.5d-c{c}", "1.5d", c, block_partition(g.n, B)))
    out.append(("p2p-block", "p2p", 1, block_partition(g.n, size)))
    out.append(("p2p-random", "p2p", 1, random_partition(g.n, size, seed=5)))
    out.append(("p2p-metis", "p2p", 1, metis_partition(g.indptr, g.indices, size, seed=0)))
    return out


def run_scheme(world, g, scheme, c, part, cfg):
    world.tally = Tally()
    return driver.train_distributed(
        world, scheme, lambda nb, b: driver.block_from_graph(g, part, nb, b), cfg, c
    )


def plan_diffs(run, gl, rank, calls) -> list[str]:
    """Measured vs planned, setup and training separately, every phase of this rank."""
    return ["setup " + d for d in same_volume(run.tally_setup, registry.setup_plan(gl, rank))] + [
        "train " + d for d in same_volume(run.tally_train, registry.training_plan(gl, rank, calls))
    ]


def rel_err(ws_a, ws_b) -> float:
    err = 0.0
    for a, b in zip(ws_a, ws_b):
        for k in a:
            err = max(err, float(np.abs(a[k] - b[k]).max() / max(np.abs(b[k]).max(), 1e-30)))
    return err


def case_equiv(world):
    """Weights after 5 epochs equal serial; measured bytes/messages equal the plan."""
    details, ok = [], True
    graphs = {
        "cora": cora(),
        "rmat": rmat(9, edge_factor=8, seed=11, num_features=24, num_classes=4),
    }
    for gname, g in graphs.items():
        for dtype, tol in (("float64", 1e-5), ("float32", 1e-4)):
            cfg = TrainConfig(epochs=5, seed=3, dtype=dtype, early_stopping=0)
            S = support_matrix(g, support_kind(cfg.model, cfg.aggregator))
            ser = fit(SerialOps(S), g.features, g.labels, masks_of(g), g.num_classes, cfg)
            calls = record_schedule(cfg, g.num_features, g.num_classes, 5)
            for label, scheme, c, part in scheme_cases(g, world.size):
                run = run_scheme(world, g, scheme, c, part, cfg)
                err = rel_err(run.result.weights, ser.weights)
                gl = registry.global_layout(scheme, S, part, world.size, c)
                diffs = plan_diffs(run, gl, world.rank, calls)
                good = err <= tol and not diffs
                ok &= good
                if not good or world.rank == 0:
                    details.append(
                        {
                            "graph": gname,
                            "dtype": dtype,
                            "scheme": label,
                            "rank": world.rank,
                            "rel_err": err,
                            "plan_diffs": diffs[:2],
                        }
                    )
    return ok, details


def case_directed(world):
    """A directed graph (S != S^T): the transposed rows are exchanged; still exact."""
    g = rmat(8, edge_factor=8, seed=2, num_features=10, num_classes=3, symmetrize=False)
    ok, details = True, []
    for model in ("gcn", "sage"):
        cfg = TrainConfig(model=model, epochs=4, seed=1, dtype="float64", early_stopping=0)
        S = support_matrix(g, support_kind(model, cfg.aggregator))
        ser = fit(SerialOps(S), g.features, g.labels, masks_of(g), g.num_classes, cfg)
        calls = record_schedule(cfg, g.num_features, g.num_classes, 4)
        for label, scheme, c, part in scheme_cases(g, world.size)[:4]:
            run = run_scheme(world, g, scheme, c, part, cfg)
            err = rel_err(run.result.weights, ser.weights)
            gl = registry.global_layout(scheme, S, part, world.size, c)
            diffs = plan_diffs(run, gl, world.rank, calls)
            good = err <= 1e-10 and not diffs and not gl.symmetric
            ok &= good
            if not good or world.rank == 0:
                details.append(
                    {
                        "model": model,
                        "scheme": label,
                        "rank": world.rank,
                        "rel_err": err,
                        "symmetric": gl.symmetric,
                        "plan_diffs": diffs[:2],
                    }
                )
    return ok, details


def case_nomask(world):
    """Without validation/test masks the schedule (and so the plan) has no stop decisions."""
    g = rmat(8, edge_factor=8, seed=9, num_features=6, num_classes=3)
    g.val_mask = None
    g.test_mask = None
    cfg = TrainConfig(epochs=4, seed=2, dtype="float64", early_stopping=0)
    S = support_matrix(g, "gcn")
    ser = fit(SerialOps(S), g.features, g.labels, {"train": g.train_mask}, g.num_classes, cfg)
    calls = record_schedule(cfg, g.num_features, g.num_classes, 4, ("train",))
    ok, details = True, []
    for label, scheme, c, part in scheme_cases(g, world.size)[:3]:
        run = run_scheme(world, g, scheme, c, part, cfg)
        err = rel_err(run.result.weights, ser.weights)
        gl = registry.global_layout(scheme, S, part, world.size, c)
        diffs = plan_diffs(run, gl, world.rank, calls)
        good = err <= 1e-10 and not diffs
        ok &= good
        if not good or world.rank == 0:
            details.append(
                {"scheme": label, "rank": world.rank, "rel_err": err, "plan_diffs": diffs[:2]}
            )
    return ok, details


def case_accuracy(world):
    """Full Cora training: test accuracy under each scheme equals the serial run."""
    g = cora()
    ok, details = True, []
    for dtype in ("float32",):
        cfg = TrainConfig(seed=123, dtype=dtype)
        S = support_matrix(g, "gcn")
        ser = fit(SerialOps(S), g.features, g.labels, masks_of(g), g.num_classes, cfg)
        for label, scheme, c, part in scheme_cases(g, world.size):
            if label in ("p2p-block", "p2p-random"):
                continue
            run = run_scheme(world, g, scheme, c, part, cfg)
            a, b = run.result.final["test_acc"], ser.final["test_acc"]
            good = a == b and len(run.result.history) == len(ser.history)
            ok &= good
            if world.rank == 0:
                details.append(
                    {
                        "dtype": dtype,
                        "scheme": label,
                        "test_acc": a,
                        "serial_test_acc": b,
                        "epochs": len(run.result.history),
                        "serial_epochs": len(ser.history),
                    }
                )
    return ok, details


def case_volume(world):
    """Per-SpMM traffic: 1D receives (n - n_p) f words; p2p sends km1 rows in total."""
    ok, details = True, []
    rng = np.random.default_rng(17)
    for trial in range(3):
        g = rmat(
            8 + trial, edge_factor=4 + 4 * trial, seed=40 + trial, num_features=4, num_classes=2
        )
        f = 5
        part = random_partition(g.n, world.size, seed=trial)
        S = support_matrix(g, "gcn")
        for scheme in ("1d", "p2p"):
            world.tally = Tally()
            local = driver.block_from_graph(g, part, world.size, world.rank)
            ops = driver.setup_ops(world, scheme, 1, local, "gcn")
            X = rng.random((local.orig_ids.size, f))
            got = ops.aggregate(X, "probe")
            sent = world.tally.phases["probe"][0] // (f * 8)
            recv = world.tally.phases["probe"][1] // (f * 8)
            tot = world.allreduce(np.array([sent, recv], dtype=np.int64), "report")
            if scheme == "1d":
                expect_recv = g.n - local.orig_ids.size
                good = (
                    recv == expect_recv
                    and got.shape == (local.orig_ids.size, f)
                    and int(tot[1]) == (world.size - 1) * g.n
                )
                if world.rank == 0:
                    details.append(
                        {
                            "trial": trial,
                            "scheme": "1d",
                            "recv_rows_rank0": int(recv),
                            "n_minus_np": int(expect_recv),
                            "total_recv_words": int(tot[1]) * f,
                        }
                    )
            else:
                net_ptr, pins = column_nets(S.indptr, S.indices)
                k = km1(net_ptr, pins, part)
                good = int(tot[0]) == k and int(tot[1]) == k
                if world.rank == 0:
                    details.append(
                        {"trial": trial, "scheme": "p2p", "rows_sent": int(tot[0]), "km1": k}
                    )
            ok &= bool(good)
    return ok, details


def case_fault(world):
    """Rank 1 (or 0 at np=1) raises mid-epoch through the GCNTRAIN_FAULT hook."""
    g = rmat(8, edge_factor=8, seed=1, num_features=8, num_classes=2)
    cfg = TrainConfig(epochs=50, early_stopping=0)
    run_scheme(world, g, "1d", 1, block_partition(g.n, world.size), cfg)
    return False, ["training finished although a fault was injected"]


CASES = {
    "equiv": case_equiv,
    "directed": case_directed,
    "accuracy": case_accuracy,
    "nomask": case_nomask,
    "volume": case_volume,
    "fault": case_fault,
}


def main() -> int:
    case = sys.argv[1]
    world = Comm()
    try:
        ok, details = CASES[case](world)
    except Exception as e:  # a local failure must not hang the others: abort the job
        from gcntrain.comm.errors import handle_internal_error

        return handle_internal_error(e)
    verdict = world.allreduce(np.array([1 if ok else 0], dtype=np.int64), "report", op="min")
    # gather the per-rank details of failing ranks to rank 0 as JSON text
    text = json.dumps(details, default=float).encode()
    lens = world.comm.allgather(len(text))
    allt = world.comm.gather(text, root=0)
    if world.rank == 0:
        merged = []
        for t in allt:
            merged.extend(json.loads(t.decode()))
        print(
            json.dumps(
                {
                    "case": case,
                    "ranks": world.size,
                    "ok": bool(verdict[0]),
                    "details": merged,
                    "sizes": lens,
                }
            ),
            flush=True,
        )
    return 0 if verdict[0] else 1


if __name__ == "__main__":
    sys.exit(main())
