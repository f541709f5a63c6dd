"""A lower bound of a configuration's predicted epoch time from its compute alone.

The time model (`gcntrain.simulate.timing.TimeModel`) replays an epoch over a clock per
rank that starts at the epoch's element-wise work and per-call cost (`other_seconds`) and
then, call by call, adds the call's compute and the costs and waits of its exchanges; the
exchanges only ever move a clock forward (a step starts when its group's last member
arrives and lasts no less than nothing), and an overlapped call ends at the later of its
compute and its exchange.  So every rank's clock at the end of an epoch is at least its
``other + sum of its calls' compute``, added in the same order from the same figures
(`call_compute`; rounding is monotone), and the epoch at least the largest of them.  The
median over the planned epochs keeps the inequality.  The bound leaves the element-wise
work out (its per-rank rows come from `Scheme.footprint`, which for some schemes costs as
much to build as the rest of the bound) and keeps the per-call cost: a looser bound, as
cheap as the scheme's work.

`compute_bound` needs the plan's layout, support pattern and schedule
(`gcntrain.simulate.run.prepare_training`) and the scheme's work, but none of its
exchange descriptions: a configuration search (`gcntrain.simulate.sweep`) prices a
configuration in full only when its bound does not already exceed a price found.
"""

from __future__ import annotations

import numpy as np

from gcntrain.simulate.timing import call_compute, epoch_calls, other_seconds


def compute_bound(sim, config, place) -> float:
    """The lower bound (module docstring) of ``time_summary(sim, config, place)
    ["epoch_seconds"]``, for a `Simulation` with or without its plan table."""
    sch, ctx = sim.scheme, sim.ctx
    widths = [sim.num_features, *[int(h) for h in config.hidden], sim.num_classes]
    none = {"rows": np.zeros(ctx.P), "col_fraction": np.zeros(ctx.P)}  # no element-wise work
    comp: dict = {}
    seen: dict = {}
    per_epoch = []
    for calls in epoch_calls(sim):
        keys = tuple(sch.price_key(ctx, c) for c in calls)
        if keys not in seen:
            clock = other_seconds(none, widths, len(calls), place).copy()
            for call, pk in zip(calls, keys):
                if pk not in comp:
                    comp[pk] = sum(call_compute(sch, ctx, call, place).values())
                clock = clock + comp[pk]
            seen[keys] = float(clock.max(initial=0.0))
        per_epoch.append(seen[keys])
    return float(np.median(per_epoch)) if per_epoch else 0.0
