"""A job as the user gave it (`JobSpec`) and as it runs (`resolve`): the one place where
``--scheme auto`` and ``--grid auto`` become a scheme, its options and a partition.

`gcntrain train` (the runner), `gcntrain simulate` (`gcntrain.job.plan`), `gcntrain
jobscript` and `gcntrain.api` build a `JobSpec` from their options and hand it to
`resolve`, which answers the two searches once:

* ``--scheme auto`` on several ranks (only where a job's ranks are there to share the
  search: `gcntrain.job.auto.choose`, collective);
* ``--grid auto``: every grid of the scheme planned, the least volume kept
  (`gcntrain.simulate.autogrid.rank_grids`); in a job rank 0 plans and broadcasts, every
  rank continues with the same grid.

What the scheme then checks of its options against the training configuration is
`gcntrain.schemes.registry.configured`, done where the options meet the graph (the runner's
collective load, the planner, jobscript's check).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from gcntrain.schemes import registry
from gcntrain.simulate.target import PlanTarget


def _frozen(d: Mapping | None) -> Mapping:
    return MappingProxyType(dict(d or {}))


@dataclass(frozen=True)
class JobSpec:
    """What a job is before any search is resolved.

    Parameters
    ----------
    source : None (the embedded default), a `Graph`, a graph file or a shard store.
    config : the `TrainConfig` (model and training).
    scheme : a registered scheme's name or ``"auto"``.
    options : the scheme's option values ({"grid": "auto"}, {"replication": 2}, ...).
    partition, partition_seed : the row partition (a method, a partition file, a vector)
        and its seed.
    machine : the profile that prices a search or a plan (None: the command's default).
    ranks : ranks of the job (None: the launcher's, where the job runs).
    nodes, ranks_per_node, threads : the placement (None: what the command assumes).
    node_shape : a torus profile's job box (None: the profile's rule).
    max_memory : bytes one rank may use (None: the node's share).
    num_features, num_classes : widths to assume for a graph without node data (planning).
    device : ``"cpu"``, ``"gpu"`` or ``"auto"`` (``--device``; `gcntrain.device.choice`).
    """

    source: Any = None
    config: Any = None
    scheme: str = registry.AUTO_NAME
    options: Mapping = field(default_factory=dict)
    partition: Any = None
    partition_seed: int = 0
    machine: str | None = None
    ranks: int | None = None
    nodes: int | None = None
    ranks_per_node: int | None = None
    node_shape: tuple | None = None
    threads: int | None = None
    max_memory: float | None = None
    num_features: int | None = None
    num_classes: int | None = None
    device: str = "cpu"

    def __post_init__(self):
        if self.config is None:
            from gcntrain.model.trainer import TrainConfig

            object.__setattr__(self, "config", TrainConfig())
        object.__setattr__(self, "options", _frozen(self.options))

    @property
    def widths(self) -> dict:
        """``num_features`` and ``num_classes`` to assume (None: the graph's)."""
        return {"num_features": self.num_features, "num_classes": self.num_classes}

    def plan_target(self, ranks: int) -> PlanTarget:
        """What to plan of this job on `ranks` ranks (`gcntrain.simulate.target.PlanTarget`:
        its source, configuration, scheme, options, partition and assumed widths)."""
        return PlanTarget(
            self.source,
            self.config,
            self.scheme,
            ranks,
            self.options,
            self.partition,
            self.partition_seed,
            self.num_features,
            self.num_classes,
        )

    def scheme_of(self, ranks: int | None = None):
        """The registered scheme object (``auto``: the registry's default for the ranks)."""
        return registry.get(self.scheme, ranks or self.ranks or 1)

    def chose(self, scheme: str, options: Mapping, partition) -> JobSpec:
        """This job with ``--scheme auto``'s choice in place."""
        return replace(self, scheme=scheme, options=_frozen(options), partition=partition)


@dataclass(frozen=True)
class Resolved:
    """A job whose searches are answered: `spec` names the scheme, its options (the grid
    chosen) and the partition it runs with; `recommendation` and `grid_search` are what
    the searches found (None where none ran), for the summary; `numbering`: (numbering
    key, `Numbering`) of the chosen configuration as ``--scheme auto``'s search computed
    it, for the job to train with (None: the job partitions the graph itself)."""

    spec: JobSpec
    scheme: Any
    recommendation: dict | None = None
    grid_search: list | None = None
    numbering: Any = None


def resolve_grid(spec: JobSpec, ranks: int, world=None) -> tuple[JobSpec, list | None]:
    """(`spec` with ``--grid auto`` replaced by the grid of least volume, the ranking), or
    (`spec`, None) where no grid search is asked.  With `world` (a job's communicator, of
    `ranks` ranks) rank 0 plans and broadcasts the ranking, under one agreement; this runs
    before the run's counters start, so the reported traffic is the training run's."""
    from gcntrain.simulate.autogrid import rank_grids

    sch = spec.scheme_of(ranks)
    if not sch.wants_grid_search(spec.options):
        return spec, None
    target = spec.plan_target(ranks)  # a named scheme here: ``auto`` has no grid

    def search() -> list:
        return rank_grids(target)

    if world is None:
        ranked = search()
    else:
        from gcntrain.comm.agree import on_root

        got = on_root(world, lambda: json.dumps(search()).encode())
        ranked = json.loads(world.bcast_bytes(got, 0, "control").decode())
    return replace(spec, options=_frozen(sch.with_grid(spec.options, ranked[0]["grid"]))), ranked


def resolve(
    spec: JobSpec, ranks: int, world=None, per_node: int = 1, notice=None, machine="local"
) -> Resolved:
    """The job `spec` on `ranks` ranks with its searches answered (module docstring):
    ``--scheme auto`` where `world` holds the job's ranks (several of them), then
    ``--grid auto``.  `per_node`: the job's ranks per node; `notice`: rank 0's progress
    lines; `machine`: the profile ``auto`` prices with when the spec names none."""
    recommendation = numbering = None
    if spec.scheme == registry.AUTO_NAME and ranks > 1 and world is not None:
        from gcntrain.job.auto import choose

        recommendation, numbering = choose(
            world,
            spec.source,
            spec.config,
            dict(spec.options),
            spec.partition,
            spec.partition_seed,
            spec.machine or machine,
            per_node,
            notice,
            spec.max_memory,
        )
        spec = spec.chose(
            recommendation["scheme"], recommendation["values"], recommendation["partition"]
        )
    spec, search = resolve_grid(spec, ranks, world)
    return Resolved(spec, spec.scheme_of(ranks), recommendation, search, numbering)


@dataclass(frozen=True)
class JobOutputs:
    """What a training job writes besides its summary.

    Parameters
    ----------
    out_dir : directory for metrics.jsonl, config.json, weights.h5, predictions.h5.
    per_rank : path of a CSV of the measured bytes/messages of every rank and phase.
    checkpoint, checkpoint_every, resume : a directory to save the training state in every
        `checkpoint_every` epochs (and at the last), and one to resume from
        (`gcntrain.job.checkpoint`).
    config_toml : the command's resolved configuration as TOML, written to `out_dir` as
        config.toml beside config.json.
    """

    out_dir: Any = None
    per_rank: Any = None
    checkpoint: Any = None
    checkpoint_every: int = 10
    resume: Any = None
    config_toml: str | None = None
