"""Plans: the exact bytes and messages of every rank and phase, priced from the exchange
descriptions the schemes execute (docs/architecture.md).

`plan_run` walks the model's recorded schedule (`gcntrain.simulate.schedule`): calls before
the first ``begin_epoch`` belong to the setup (with the scheme's own setup steps and the
runner's load agreement), calls between ``begin_epoch`` and ``end_epoch`` to that epoch, the
rest (final evaluation, gathering the parameters) to ``final``.  Every distinct call
(`Scheme.price_key`) is priced once (`Scheme.steps` -> vectorised step volumes); an epoch
is kept as counts of (phase, call) pairs, so 200 epochs at P = 8192 cost little more than one.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from gcntrain.comm.exchange import Allreduce, Groups, total

#: the runner's collective agreements before training: one int64 pair Allreduce each
AGREEMENT_ELEMS = 2
#: agreements of `gcntrain.job.runner.load_rank`: the configuration and memory check
#: (every rank, before any rank loads), then the loading
LOAD_AGREEMENTS = 2


@dataclass
class PlanTable:
    """Planned tallies: int64 (P, 4) arrays [bytes sent, bytes received, messages sent,
    messages received].

    Attributes
    ----------
    P : ranks
    prices : {call key: (P, 4)} of every distinct priced call
    work : {call key: (P, 4)} its SpMM nonzeros, SpMM flops, dense flops and dense rows
    setup : {phase: (P, 4)} before the first epoch (agreement, setup steps, prelude calls)
    epochs : one Counter {(phase, call key): times} per epoch
    final : Counter {(phase, call key): times} after the last epoch
    """

    P: int
    prices: dict = field(default_factory=dict)
    work: dict = field(default_factory=dict)
    setup: dict = field(default_factory=dict)
    epochs: list = field(default_factory=list)
    final: Counter = field(default_factory=Counter)

    def _zero(self) -> np.ndarray:
        return np.zeros((self.P, 4), dtype=np.int64)

    def _phases_of(self, counts: Counter) -> dict:
        out: dict = {}
        for (phase, key), times in counts.items():
            if not self.prices[key].any():
                continue
            v = self.prices[key] * times
            out[phase] = out[phase] + v if phase in out else v
        return out

    def phases(self) -> dict:
        """Whole run (setup, every epoch, final), per phase."""
        counts: Counter = Counter()
        for e in self.epochs:
            counts.update(e)
        counts.update(self.final)
        out = {k: v.copy() for k, v in self.setup.items()}
        for k, v in self._phases_of(counts).items():
            out[k] = out[k] + v if k in out else v
        return out

    def epoch_phases(self, e: int) -> dict:
        """Epoch `e` per phase."""
        return self._phases_of(self.epochs[e])

    def setup_total(self) -> np.ndarray:
        return sum(self.setup.values(), self._zero())

    def epoch_totals(self, what: str = "prices") -> np.ndarray:
        """(E, P, 4) traffic (or work with ``what="work"``: `Scheme.work`'s four columns) of
        each epoch summed over its calls; identical epochs are summed once."""
        prices = getattr(self, what)
        width = 4  # traffic and work both have four columns
        seen: dict = {}
        out = []
        for e in self.epochs:
            sig = frozenset(e.items())
            if sig not in seen:
                t = np.zeros((self.P, width), dtype=np.int64)
                for (_, key), times in e.items():
                    t += prices[key] * times
                seen[sig] = t
            out.append(seen[sig])
        return np.stack(out) if out else np.zeros((0, self.P, width), dtype=np.int64)


def plan_run(
    scheme, ctx, calls, agreements: int = LOAD_AGREEMENTS, setup: bool = True
) -> PlanTable:
    """The plan of a whole training run of `scheme` (see the module docstring).

    `agreements`: collective agreements the runner makes before setup (`LOAD_AGREEMENTS`:
    the configuration and memory check, then the loading).  `setup`: price the scheme's
    setup exchanges (`Scheme.setup_steps`); without, the table's setup holds only what the
    recorded calls before the first epoch move (a configuration search, which ranks by the
    epochs, skips the setup's pricing: a third of a plan's time on Slashdot).
    """
    P = ctx.P
    table = PlanTable(P)
    world = Groups.world(P)
    for _ in range(agreements):
        vol = Allreduce(world, np.array([AGREEMENT_ELEMS]), 8).volumes()
        table.setup["control"] = table.setup.get("control", 0) + vol
    for phase, step in scheme.setup_steps(ctx) if setup else ():
        table.setup[phase] = table.setup.get(phase, 0) + step.volumes()
    current = None  # None: setup; else the Counter of the epoch or of the final part
    for call in calls:
        if call.method == "begin_epoch":
            current = Counter()
            table.epochs.append(current)
            continue
        if call.method == "end_epoch":
            current = table.final
            continue
        pk = scheme.price_key(ctx, call)
        if pk not in table.prices:
            table.prices[pk] = total(scheme.steps(ctx, call), P)
            table.work[pk] = scheme.work(ctx, call)
        key = call.phase.key
        if current is not None:
            current[(key, pk)] += 1
        elif table.prices[pk].any():
            v = table.prices[pk]
            table.setup[key] = table.setup[key] + v if key in table.setup else v.copy()
    table.setup = {k: np.asarray(v, dtype=np.int64) for k, v in table.setup.items()}
    return table
