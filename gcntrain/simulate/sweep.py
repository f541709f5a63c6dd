"""``simulate --sweep`` and the recommender: plan every configuration of every scheme for one
graph and P, predict each one's epoch time and memory on a machine profile, rank them.

A configuration is a scheme, one of its `Scheme.sweep_options` (grids, replication, delay,
aggregation split, message bits, permutation) and a partition (the scheme's
`Scheme.sweep_partitions`, or the user's list).  Each is planned exactly as `gcntrain
simulate` plans one run (`plan_training`: the scheme's own exchange description), so the
ranking is the Plexus configuration search extended across all schemes, by plan rather than by
formula.  The graph and its support matrix are read once; each partition is computed once per
part count (its seconds are reported apart from the planning's).

Each configuration is planned for `SWEEP_EPOCHS` epochs (or --epochs, if fewer): the ranking
is by predicted steady-state epoch time, which more epochs do not change.

Ranking: configurations that fit the node's memory first (when the profile states it), then by
predicted epoch time, then by memory per rank.  The recommender (`recommend`) takes the best
*exact* one (results equal to serial training); approximate modes (cd-R, 0c, quantized
messages) are ranked and flagged, never recommended.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field, replace

from gcntrain.errors import InputError
from gcntrain.schemes import registry
from gcntrain.simulate.deal import deal
from gcntrain.simulate.run import (
    numbering_seconds,
    prepare_training,
    price_training,
    simulation_summary,
)
from gcntrain.simulate.target import PlanTarget

#: partitions that assign edges rather than vertices (taken only by a vertex-cut scheme)
EDGE_PARTITIONS = ("libra",)
#: epochs each configuration is planned for (at most --epochs): every steady state shows in
#: them (DistGNN cd-5's buckets included); the ranking is by the per-epoch time
SWEEP_EPOCHS = 12


@dataclass(frozen=True)
class Candidate:
    """One configuration to plan: a scheme, its option values, a partition."""

    scheme: str
    options: tuple[tuple[str, object], ...]
    partition: str

    @property
    def option_dict(self) -> dict:
        return dict(self.options)


def _is_edge(spec: str) -> bool:
    return spec in EDGE_PARTITIONS


def scheme_partitions(sch, partitions: list[str] | None) -> list[str]:
    """The partitions to try for `sch`: its own sweep list, or the user's (those of its kind,
    vertex or edge; its default where none is)."""
    if not partitions:
        return list(sch.sweep_partitions)
    edge = _is_edge(sch.default_partition)
    mine = [p for p in partitions if _is_edge(p) == edge]
    return mine or [sch.default_partition]


def _own_given(sch, options: dict | None) -> dict:
    """The options of `sch` the user gave (non-default values)."""
    own = {o.name: o for o in sch.options}
    return {k: v for k, v in (options or {}).items() if k in own and own[k].given(v)}


def candidates(
    ranks: int,
    schemes: list[str] | None = None,
    partitions: list[str] | None = None,
    options: dict | None = None,
) -> list[Candidate]:
    """Every configuration to plan on `ranks` ranks: each scheme (all that run on that many
    ranks, or `schemes`) x its sweep options (with the user's `options` of that scheme
    replacing the swept values) x its partitions.  Duplicates are dropped."""
    names = schemes or [n for n, s in registry.SCHEMES.items() if ranks == 1 or s.uses_mpi]
    out: dict[Candidate, None] = {}
    for name in names:
        sch = registry.get(name, ranks)
        given = _own_given(sch, options)
        for variant in sch.sweep_options(ranks):
            merged = {**variant, **given}
            for part in scheme_partitions(sch, partitions):
                out[Candidate(sch.name, tuple(sorted(merged.items())), part)] = None
    return list(out)


def merged_ranking(
    rows: list[dict],
    ranks: int,
    parts: int,
    partitions: list[str] | None = None,
    options: dict | None = None,
    exact_only: bool = True,
) -> list[dict]:
    """The rows of `parts` processes' parts (`sweep`'s `share`) in one ranking by `rank_key`,
    whichever process planned a row.  A tie (the same time, memory and scheme) goes as it
    went when the i-th configuration was planned by process i mod `parts` and their rows
    were concatenated: to the lesser (i mod `parts`, i); with one part, to the configuration
    listed first, as in one process's sweep."""
    todo = candidates(ranks, None, partitions, options)
    todo = [c for c in todo if not exact_only or _exact(c, ranks)]
    first = {label(c): (i % parts, i) for i, c in enumerate(todo)}
    last = (parts, len(first))
    return sorted(rows, key=lambda r: (*rank_key(r), first.get(r["label"], last)))


def label(cand: Candidate) -> str:
    """A configuration in words: the scheme, the swept option values, the partition."""
    opts = " ".join(f"{k.replace('_', '-')} {v}" for k, v in cand.options)
    return " ".join(filter(None, (cand.scheme, opts, f"[{cand.partition}]")))


def evaluate(
    cand: Candidate,
    source,
    config,
    ranks: int,
    place,
    support,
    numberings,
    widths,
    seed=0,
    derived: dict | None = None,
):
    """(the sweep row of one configuration, the graph's `GraphMeta`); the row has ``error``
    (and the meta is None) where the plan refuses the configuration."""
    t0 = time.perf_counter()
    sim = _prepare(cand, source, config, ranks, support, numberings, widths, seed, derived)
    if isinstance(sim, dict):
        return sim, None
    return _priced(cand, sim, config, place, t0)


def _prepare(cand, source, config, ranks, support, numberings, widths, seed, derived):
    """`prepare_training` of one configuration, or its refused row."""
    try:
        target = PlanTarget(
            source, config, cand.scheme, ranks, cand.option_dict, cand.partition, seed, **widths
        )
        return prepare_training(target, support=support, numberings=numberings, derived=derived)
    except InputError as e:
        return {**_row(cand), "error": str(e)}


def _row(cand: Candidate) -> dict:
    return {"scheme": cand.scheme, "partition": cand.partition, "options": cand.option_dict}


def _priced(cand: Candidate, sim, config, place, t0: float):
    """(row, meta) of a prepared configuration, priced in full (`evaluate`)."""
    from gcntrain.simulate.timing import time_summary

    try:  # the row is per epoch: the setup's exchanges are not priced
        price_training(sim, setup=False)
    except InputError as e:
        return {**_row(cand), "error": str(e)}, None
    s = simulation_summary(sim, config, cand.partition, 0.0)
    t = time_summary(sim, config, place)
    mem = int(s["memory_bytes_max"])
    node_mem = place.machine.memory
    b = t["breakdown"]
    return {
        **_row(cand),
        "label": label(cand),
        "values": cand.option_dict,  # what to give `train` (--grid 2x2, ...)
        "options": sim.config.to_dict(),
        "exact": bool(sim.scheme.is_exact(sim.config)),
        "epoch_seconds": float(t["epoch_seconds"]),
        "compute_seconds": float(b["compute"]),
        "comm_seconds": float(b["comm"]),
        "wait_seconds": float(b["wait"]),
        "bytes_sent_max": int(s["bytes_sent_max"]),
        "messages_max": int(s["messages_max"]),
        "memory_bytes_max": mem,
        "fits": bool(node_mem <= 0 or mem * place.ranks_per_node <= node_mem),
        "plan_seconds": time.perf_counter() - t0,
    }, sim.meta


def rank_key(row: dict) -> tuple:
    """Fitting configurations first, then predicted epoch time, then memory per rank."""
    return (not row["fits"], row["epoch_seconds"], row["memory_bytes_max"], row["scheme"])


@dataclass
class SweepResult:
    ranking: list[dict]  # planned rows, best first
    meta: object  # the graph's GraphMeta
    refused: list[dict]  # rows with "error"
    partition_seconds: float
    sweep_seconds: float
    #: configurations not priced in full: their compute alone (`prune`) exceeds the second
    #: best price found, so neither the best nor the runner-up could be theirs
    pruned: int = 0
    #: the numberings (partitions) the plans computed, by `numbering_key`: (the
    #: `Numbering`, the seconds it took); a job that trains the chosen configuration
    #: can take its numbering from here (`gcntrain.job.auto`)
    numberings: dict = field(default_factory=dict)

    @property
    def plan_seconds(self) -> float:
        return max(self.sweep_seconds - self.partition_seconds, 0.0)


def sweep(
    source,
    config,
    ranks: int,
    place,
    *,
    schemes: list[str] | None = None,
    partitions: list[str] | None = None,
    options: dict | None = None,
    num_features: int | None = None,
    num_classes: int | None = None,
    partition_seed: int = 0,
    exact_only: bool = False,
    progress: bool = False,
    share: tuple[int, int] = (0, 1),
    strict: bool = True,
    prune: bool = False,
) -> SweepResult:
    """Plan and price every configuration (`candidates`) of `source` on `ranks` ranks placed
    by `place` (`gcntrain.simulate.timing.Placement`).

    `share` = (i, k): plan only the i-th of k parts of the configurations (the part of one
    of k processes planning together, `gcntrain.job.auto`; `gcntrain.simulate.deal`
    balances the parts by estimated cost and keeps a partition's configurations together);
    without `strict`, a part with no fitting configuration returns an empty ranking instead
    of raising.  `prune`: bound each configuration's epoch from its compute first
    (`gcntrain.simulate.bound`) and price in full, in the order of the bounds, only those
    whose bound does not exceed the second best price found: the ranking then holds the
    best and the runner-up of the part (what `recommend` and ``--scheme auto`` read) but
    not every configuration (`SweepResult.pruned` counts the others)."""
    from gcntrain.simulate.autogrid import reusable_source

    t0 = time.perf_counter()
    config = replace(config, epochs=min(config.epochs, SWEEP_EPOCHS))
    source, support = reusable_source(source, config)
    cands = candidates(ranks, schemes, partitions, options)
    numberings: dict = {}
    derived: dict = {}  # per permutation: the renumbered support; the schedule
    widths = {"num_features": num_features, "num_classes": num_classes}
    todo = [c for c in cands if not exact_only or _exact(c, ranks)]
    index, count = share
    if count > 1:
        todo = [todo[i] for i in deal(todo, ranks, config, partition_seed, count)[index]]
    plan = (source, config, ranks, support, numberings, widths, partition_seed, derived)
    good, bad, meta, pruned = [], [], None, 0
    say = _progress(len(todo)) if progress else (lambda i: None)
    if not prune:
        for i, cand in enumerate(todo):
            row, got = evaluate(cand, source, config, ranks, place, *plan[3:])
            (bad if "error" in row else good).append(row)
            meta = meta or got
            say(i)
    else:
        good, bad, meta, pruned = _pruned_search(todo, plan, place, say)
    if progress:
        print(file=sys.stderr)
    if not good and strict:
        why = bad[0]["error"] if bad else "no configuration to plan"
        raise InputError(f"--sweep: no configuration fits: {why}")
    good.sort(key=rank_key)
    seconds = time.perf_counter() - t0
    part_seconds = numbering_seconds(numberings)
    return SweepResult(good, meta, bad, part_seconds, seconds, pruned, numberings)


def _progress(total: int):
    def say(i: int) -> None:
        print(f"\rplanned {i + 1}/{total} configurations", end="", file=sys.stderr)

    return say


def _pruned_search(mine: list[Candidate], plan: tuple, place, say):
    """(good, bad, meta, pruned) of `sweep`'s branch and bound: every configuration
    prepared and bounded, then priced in full in the order of their bounds until a bound
    exceeds the second best fitting price (later bounds are no smaller); the rows in the
    order of `mine`, as the full search leaves them."""
    from gcntrain.simulate.bound import compute_bound

    config = plan[1]
    staged, bad = [], []
    for i, cand in enumerate(mine):
        t0 = time.perf_counter()
        sim = _prepare(cand, *plan)
        if isinstance(sim, dict):
            bad.append(sim)
            continue
        bound = compute_bound(sim, config, place)
        staged.append((bound, i, cand, sim, time.perf_counter() - t0))
    staged.sort(key=lambda s: (s[0], s[1]))
    priced, meta, best = [], None, []  # best: the two least fitting epoch times so far
    pruned = 0
    for n, (bound, i, cand, sim, spent) in enumerate(staged):
        if len(best) == 2 and bound > best[1]:
            pruned = len(staged) - n
            break
        row, got = _priced(cand, sim, config, place, time.perf_counter() - spent)
        if "error" in row:
            bad.append(row)
            continue
        priced.append((i, row))
        meta = meta or got
        if row["fits"]:
            best = sorted([*best, row["epoch_seconds"]])[:2]
        say(n)
    return [row for _, row in sorted(priced, key=lambda p: p[0])], bad, meta, pruned


def _exact(cand: Candidate, ranks: int) -> bool:
    """Whether a candidate's configuration is exact, before planning it (one `configure`
    refuses is kept: its plan reports the error)."""
    sch = registry.get(cand.scheme, ranks)
    try:
        return sch.is_exact(sch.configure(ranks, cand.option_dict))
    except InputError:
        return True


def recommend(result: SweepResult) -> dict:
    """The best exact configuration that fits (`InputError` when none does)."""
    for row in result.ranking:
        if row["exact"] and row["fits"]:
            return row
    raise InputError("no exact configuration fits this machine's memory")
