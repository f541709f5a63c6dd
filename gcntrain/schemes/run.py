"""`gcntrain train` under MPI: the distributed counterpart of `gcntrain.model.run`."""

from __future__ import annotations

import os
import time

import numpy as np

from gcntrain.comm.agree import agree
from gcntrain.comm.communicator import Comm
from gcntrain.comm.node import auto_threads
from gcntrain.model.normalize import support_kind
from gcntrain.model.run import DEFAULT_SOURCE, model_summary, result_summary
from gcntrain.schemes.driver import train_distributed
from gcntrain.schemes.loading import make_loader
from gcntrain.schemes.report import summarize_ranks


def _is_store(source) -> bool:
    from gcntrain.schemes.loading import is_shard_store

    return isinstance(source, str | os.PathLike) and is_shard_store(os.fspath(source))


def res_median_epoch(res) -> float:
    return result_summary(res)["epoch_seconds"]


def run_distributed_training(
    source,
    config,
    scheme: str,
    replication: int = 1,
    partition: str | None = None,
    partition_seed: int = 0,
    out_dir=None,
    callback=None,
    threads: int | None = None,
    comm=None,
) -> tuple[object, dict]:
    """Train with `scheme` on every rank of `comm` (default COMM_WORLD).

    Returns (TrainResult of the local rows, job summary identical on every rank).
    """
    world = comm if comm is not None else Comm()
    t0 = time.perf_counter()
    nthreads = auto_threads(world, threads)
    if out_dir is not None:
        from gcntrain.model.output import check_out_dir

        agree(world, lambda: check_out_dir(out_dir) if world.rank == 0 else None)
    loader = make_loader(source, partition, partition_seed)
    run = train_distributed(world, scheme, loader, config, replication, callback=callback)
    res, local = run.result, run.local
    first_copy = world.rank % (replication if scheme == "1.5d" else 1) == 0
    stats = summarize_ranks(
        world,
        run.epoch_tallies,
        run.tally_setup,
        res_median_epoch(res),
        run.setup_seconds,
        int(local.indptr[-1]) if first_copy else 0,
    )
    summary = {
        **result_summary(res),
        "scheme": scheme,
        "ranks": world.size,
        "replication": replication if scheme == "1.5d" else 1,
        "partition": partition or ("store" if _is_store(source) else "block"),
        "threads_per_rank": nthreads,
        **stats,
        "total_seconds": time.perf_counter() - t0,
        **model_summary(config),
        "graph": local.name,
        "source": DEFAULT_SOURCE if source is None else os.fspath(source),
        "num_nodes": local.n,
        "num_features": int(local.features.shape[1]),
        "num_classes": local.num_classes,
    }
    if out_dir is not None:
        _write_outputs(world, run, config, summary, out_dir, replication if scheme == "1.5d" else 1)
        summary["out"] = os.fspath(out_dir)
    return res, summary


def _write_outputs(world, run, config, summary, out_dir, c: int) -> None:
    """Gather predictions (one copy of each row) to rank 0, which writes every file."""
    from gcntrain.model.output import write_outputs

    res, local = run.result, run.local
    first_copy = world.rank % c == 0
    ids = res.rows if first_copy else res.rows[:0]
    cols = np.stack([ids, res.predictions[: ids.size], local.labels[: ids.size]], axis=1)
    counts = world.allgatherv(np.array([ids.size], dtype=np.int64), [1] * world.size, "report")
    got = world.gatherv(np.ascontiguousarray(cols.astype(np.int64)), counts, 0, "report")

    def write():
        if world.rank != 0:
            return
        order = np.argsort(got[:, 0], kind="stable")
        g = got[order]
        keys = (
            "scheme",
            "ranks",
            "replication",
            "partition",
            "graph",
            "source",
            "num_nodes",
            "num_classes",
        )
        resolved = {
            **config.to_dict(),
            **{k: summary[k] for k in keys},
            "support": support_kind(config.model, config.aggregator),
            "layers": res.layers,
            "bias": res.layers[0]["bias"],
        }
        write_outputs(
            out_dir,
            resolved,
            res.history,
            res.weights,
            g[:, 1],
            g[:, 0],
            labels=g[:, 2],
            layers=res.layers,
        )

    agree(world, write)
