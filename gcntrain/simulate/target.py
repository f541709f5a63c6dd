"""What a plan is of: one `gcntrain train` run named by its graph, model, scheme and ranks
(`PlanTarget`), the first argument of `gcntrain.simulate.run.plan_training`,
`prepare_training` and `gcntrain.simulate.autogrid.rank_grids`.

The job layer makes one from its `JobSpec` (`gcntrain.job.spec.JobSpec.plan_target`); the
simulator's own searches (``--grid auto``, the sweep) vary a target's options.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class PlanTarget:
    """The run to plan.

    Parameters
    ----------
    source : None (the embedded default), a `Graph`, a graph file or a shard store.
    config : the `TrainConfig` (model and training; the plan covers ``config.epochs``).
    scheme : a registered scheme's name (``"auto"``: the registry's default for `ranks`).
    ranks : the number of ranks the run trains on.
    options : the scheme's option values ({"grid": "2x2"}, {"replication": 2}, ...); kept
        as a read-only copy.
    partition, partition_seed : the row partition (a method, a partition file, a vector;
        None: the scheme's default) and its seed.
    num_features, num_classes : the widths to assume for a graph without node data (None:
        the graph's).
    """

    source: Any
    config: Any
    scheme: str
    ranks: int
    options: Mapping = field(default_factory=dict)
    partition: Any = None
    partition_seed: int = 0
    num_features: int | None = None
    num_classes: int | None = None

    def __post_init__(self):
        object.__setattr__(self, "options", MappingProxyType(dict(self.options or {})))

    def with_options(self, options: Mapping | None) -> PlanTarget:
        """This run with the scheme options `options` instead."""
        return replace(self, options=options)
