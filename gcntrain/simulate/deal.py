"""Dealing a configuration search's candidates to the processes that plan them together
(``--scheme auto`` on k ranks, `gcntrain.simulate.sweep.sweep`'s `share`).

A process plans a configuration from its numbering (the partition, renumbered part by part),
which it computes once for all its configurations of that numbering (`cached_numbering`).
A partitioner that takes long (METIS, Libra) should therefore run on one process only: the
configurations of such a numbering go to one process together, heaviest group first, each to
the process with the least estimated work so far; the configurations of cheap numberings
(block, random) then fill the processes up one by one, each where it adds the least (its
numbering costs nothing more on a process that already has it).  The estimate counts a
configuration by its scheme's `Scheme.plan_weight` and a numbering by its partitioner
(`PARTITION_COST`), both in units of about 30 ms on soc-Slashdot0902 at P = 4 on the 2-core
development VM, where each figure was measured (a configuration's bound and full price, a
numbering's partitioner and renumbering).

The deal depends only on the candidates, P, the training configuration and the partition
seed, so every process computes the same deal.
"""

from __future__ import annotations

from gcntrain.errors import InputError
from gcntrain.schemes import registry
from gcntrain.simulate.run import numbering_key

#: estimated cost of computing a numbering (its partitioner and the support renumbered to
#: it), by partitioner, in the units of `Scheme.plan_cost` (measured on soc-Slashdot0902 at
#: P = 4: METIS 0.19-0.34 s for 2-4 parts, Libra 0.30 s, a random partition 28 ms; the
#: hypergraph partitioner's figure is an older estimate); a numbering that costs a unit or
#: more keeps its configurations on one process
PARTITION_COST = {"block": 0.0, "random": 0.9, "metis": 10.0, "hypergraph": 15.0, "libra": 10.0}
#: the cost of a partitioner not listed (a partition file: read and renumbered)
OTHER_PARTITION = 0.5


def deal(cands: list, ranks: int, config, partition_seed: int, count: int) -> list[list[int]]:
    """The indices into `cands` of each of `count` processes' parts (module docstring)."""
    got = [_key(c, ranks, config, partition_seed, i) for i, c in enumerate(cands)]
    keys, weight = [k for k, _ in got], [w for _, w in got]
    groups: dict = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    load = [0.0] * count
    held: list[set] = [set() for _ in range(count)]
    out: list[list[int]] = [[] for _ in range(count)]

    def cost(key) -> float:
        return PARTITION_COST.get(key[2], OTHER_PARTITION) if key[0] == "numbering" else 0.0

    def work(key) -> float:
        return cost(key) + sum(weight[i] for i in groups[key])

    heavy = [k for k in groups if cost(k) >= 1.0]
    heavy.sort(key=lambda k: (-work(k), groups[k][0]))
    for key in heavy:
        r = min(range(count), key=lambda q: (load[q], q))
        out[r].extend(groups[key])
        load[r] += work(key)
        held[r].add(key)
    for i, key in enumerate(keys):
        if cost(key) >= 1.0:
            continue
        w = weight[i]
        extra = [load[q] + w + (0.0 if key in held[q] else cost(key)) for q in range(count)]
        r = min(range(count), key=lambda q: (extra[q], q))
        out[r].append(i)
        load[r] = extra[r]
        held[r].add(key)
    return [sorted(part) for part in out]


def _key(cand, ranks: int, config, partition_seed: int, i: int) -> tuple[tuple, float]:
    """(("numbering", the configuration's numbering key's parts...) or ("alone", i) where
    the configuration has none to share (options its scheme refuses: the plan says why),
    its `Scheme.plan_weight`)."""
    sch = registry.get(cand.scheme, ranks)
    try:
        sc = registry.configured(sch, ranks, cand.option_dict, config)
    except InputError:
        return ("alone", i), 1.0
    key = numbering_key(sch, ranks, sc, cand.partition, partition_seed)
    if key is None:
        return ("alone", i), sch.plan_weight(sc)
    qualname, parts, spec, *rest = key
    return ("numbering", qualname, spec, parts, *rest), sch.plan_weight(sc)
