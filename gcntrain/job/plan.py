"""A planned (simulated) job: what `gcntrain simulate` prints and `gcntrain.api.simulate`
returns, computed once for both."""

from __future__ import annotations

import sys
import time

from gcntrain import status
from gcntrain.errors import InputError
from gcntrain.job.progress import count
from gcntrain.job.spec import JobSpec, resolve_grid

#: how the command line names the placement options in its refusals
CLI_WORDS = {
    "placement": "--nodes, --ranks-per-node and --node-shape need --machine PROFILE",
    "sweep_machine": "--sweep ranks configurations by predicted time: give --machine",
    "sweep_per_rank": "--per-rank tables one run; it does not combine with --sweep",
    "node_shape": "--node-shape",
}


def plan_job(
    spec: JobSpec,
    *,
    sweep: bool = False,
    per_rank=None,
    quiet: bool = False,
    words: dict = CLI_WORDS,
    notice=None,
) -> dict:
    """The summary of one planned run (``simulate --json``) or, with `sweep`, of every
    configuration ranked by predicted time (``simulate --sweep --json``).

    Parameters
    ----------
    spec : the job (`gcntrain.job.spec.JobSpec`) on ``spec.ranks`` ranks; ``machine``,
        ``nodes`` and ``ranks_per_node`` are the profile and placement pricing the epoch,
        ``num_features`` / ``num_classes`` the widths to assume (None: the graph's).
    sweep : rank every configuration instead (needs a machine).
    per_rank : write the per rank and phase table of the plan to this file.
    quiet : no progress line on stderr (the sweep's).
    words : the refusals' wording (`CLI_WORDS`: the command line's flags).
    notice : called with one line saying the placement assumed when neither `nodes` nor
        `ranks_per_node` is given (None: silent).
    """
    machine, nodes, ranks_per_node = spec.machine, spec.nodes, spec.ranks_per_node
    ranks = int(spec.ranks)
    if machine is None and (
        nodes is not None or ranks_per_node is not None or spec.node_shape is not None
    ):
        raise InputError(words["placement"])
    if sweep and machine is None:
        raise InputError(words["sweep_machine"])
    if sweep and per_rank is not None:
        raise InputError(words["sweep_per_rank"])
    if sweep and spec.max_memory is not None:  # the sweep holds its graph's support whole
        raise InputError("--max-memory bounds one plan; it does not combine with --sweep")
    if per_rank is not None:
        from gcntrain.data.atomic import check_output_file

        check_output_file(per_rank, (spec.source, spec.partition), "--per-rank")
    place, assumed = None, None
    if machine is None and spec.device != "cpu":  # simulate --device gpu prices a profile
        raise InputError(f"--device {spec.device} prices the epoch on a profile: give --machine")
    if machine is not None:
        from gcntrain.simulate.local import load_machine
        from gcntrain.simulate.machine import on_device
        from gcntrain.simulate.timing import placement

        prof = with_shape(on_device(load_machine(machine), spec.device), spec.node_shape)
        if nodes is None and ranks_per_node is None:
            ranks_per_node, assumed = default_ranks_per_node(prof, ranks, machine)
        place = placement(prof, ranks, nodes, ranks_per_node)
        _check_shape(spec.node_shape, place.nodes, words)

    _check_planning(spec.source, spec.config, spec.widths)

    def say():
        if assumed is not None and notice is not None:
            notice(
                f"simulate: {count(place.nodes, 'node')} x "
                f"{count(place.ranks_per_node, 'rank')} assumed ({assumed}); --nodes / "
                "--ranks-per-node to plan another placement"
            )

    # the note comes before a long plan (read first), after a short one, never with a refusal
    with status.say_before_long_work(say):
        if sweep:
            with status.phase(f"ranking every configuration on {count(ranks, 'rank')}"):
                return sweep_summary(spec, place, quiet)
        return _plan_one(spec, ranks, place, per_rank, notice)


def _plan_one(spec: JobSpec, ranks: int, place, per_rank, notice) -> dict:
    """`plan_job`'s summary of one planned run (its inputs checked)."""
    from gcntrain.simulate.run import plan_training, simulation_summary

    t0 = time.perf_counter()
    with status.phase(f"choosing the grid for {count(ranks, 'rank')}"):
        spec, search = resolve_grid(spec, ranks)
    with status.phase(f"planning {count(ranks, 'rank')}"):
        sim = plan_training(spec.plan_target(ranks), max_memory=spec.max_memory)
    if per_rank is not None:
        from gcntrain.simulate.table import write_table

        write_table(per_rank, sim.table.phases())
    summary = simulation_summary(sim, spec.config, spec.partition, time.perf_counter() - t0)
    if summary["partition"] != "store" and notice is not None:
        shards = _store_shards(spec.source)
        if shards is not None:  # planned as the graph the store holds: `train` refuses it
            notice(
                f"simulate: planned the graph {spec.source} holds, numbered as its graph file "
                f"would be ({summary['partition']}); `train` reads this store as it is only on "
                f"{shards} ranks (its shards), so reshard it (`gcntrain shard`) to train this "
                "plan"
            )
    if place is not None:
        from gcntrain.simulate.timing import time_summary

        with status.phase(f"pricing the epoch on {place.machine.name}"):
            summary.update(time_summary(sim, spec.config, place), device=spec.device)
    if per_rank is not None:
        summary["per_rank"] = str(per_rank)
    if search is not None:
        summary["grid_search"] = search
    return summary


def with_shape(prof, shape):
    """`prof` with its torus's job box set to `shape` (None: `prof` as it is);
    `InputError` where its topology is not a torus."""
    if shape is None:
        return prof
    from dataclasses import replace

    if prof.topology.kind != "torus":
        raise InputError(
            f"a node shape sets a torus job's box; profile {prof.name}'s topology is "
            f"{prof.topology.kind}"
        )
    return replace(prof, topology=replace(prof.topology, shape=tuple(shape)))


def _check_shape(shape, nodes: int, words: dict) -> None:
    """`InputError` where the requested box holds fewer nodes than the placement."""
    if shape is not None and shape[0] * shape[1] * shape[2] < nodes:
        box = "x".join(map(str, shape))
        raise InputError(
            f"{words['node_shape']} {box} holds {shape[0] * shape[1] * shape[2]} nodes, "
            f"the job needs {nodes}"
        )


def _store_shards(source) -> int | None:
    """The shard count of a shard store `source` (None: a graph file or the default)."""
    import os

    if source is None or not os.path.isdir(source):
        return None
    from gcntrain.schemes.loading import open_source

    src = open_source(source)
    return int(src.man.num_parts) if getattr(src, "kind", "") == "store" else None


def _check_planning(source, config, widths: dict) -> None:
    """The planner records one whole model: refuse (one line) a model whose parameters
    cannot fit this process (`gcntrain.job.memory_guard.check_planning`)."""
    import numpy as np

    from gcntrain.job.memory_guard import check_planning
    from gcntrain.schemes.loading import open_source

    config.validate()
    meta = open_source(source).meta()
    f0 = widths.get("num_features") or meta.num_features or 1
    classes = widths.get("num_classes") or meta.num_classes or 2
    check_planning([f0, *config.hidden, classes], np.dtype(config.dtype).itemsize, 1)


def default_ranks_per_node(prof, ranks: int, machine) -> tuple[int, str]:
    """(ranks per node, why) of a plan given no placement: on ``local`` (the machine at
    hand, where ``mpiexec -n P gcntrain train`` puts every rank on this node) all of them,
    as `train --scheme auto` prices its own run; else the profile's ranks per node."""
    if str(machine) == "local":
        return ranks, "the local profile is this machine: mpiexec -n P puts every rank on it"
    rpn = min(prof.ranks_per_node, ranks)
    return rpn, f"the profile's {count(prof.ranks_per_node, 'rank')} per node"


def sweep_summary(spec: JobSpec, place, quiet: bool) -> dict:
    """The ``simulate --sweep`` summary (`gcntrain.simulate.sweep`)."""
    from gcntrain.schemes import registry
    from gcntrain.simulate.sweep import recommend, sweep

    ranks, scheme, partition = int(spec.ranks), spec.scheme, spec.partition
    schemes = None if scheme == registry.AUTO_NAME else [registry.get(scheme, ranks).name]
    parts = None if partition is None else [p for p in str(partition).split(",") if p]
    res = sweep(
        spec.source,
        spec.config,
        ranks,
        place,
        schemes=schemes,
        partitions=parts,
        options=dict(spec.options),
        partition_seed=spec.partition_seed,
        progress=not quiet and sys.stderr.isatty(),
        **spec.widths,
    )
    try:
        best = recommend(res)
    except InputError:
        best = None
    m = place.machine
    return {
        "graph": res.meta.name,
        "num_nodes": res.meta.n,
        "nnz": res.meta.nnz,
        "ranks": ranks,
        "machine": m.name,
        "machine_file": m.path,
        "nodes": place.nodes,
        "ranks_per_node": place.ranks_per_node,
        "node_memory_bytes": int(m.memory),
        "configurations": len(res.ranking) + len(res.refused),
        "partition_seconds": res.partition_seconds,
        "plan_seconds": res.plan_seconds,
        "sweep_seconds": res.sweep_seconds,
        "recommended": best,
        "ranking": res.ranking,
        "refused": res.refused,
    }
