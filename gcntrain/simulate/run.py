"""The accounting half of the simulator: a whole run's plan from one process, no MPI.

`plan_training` reads the graph once (a graph file without its features, its adjacency a
block of rows at a time: `gcntrain.simulate.plangraph`), builds the support's pattern
(`gcntrain.simulate.support`) and the scheme's layout for P ranks exactly as `gcntrain
train` would (same options, same numbering), records the model's schedule, and prices it
(`gcntrain.simulate.plan`).  Compute (SpMM nonzeros, dense flops) and memory come from
`gcntrain.simulate.work`.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from gcntrain.errors import InputError
from gcntrain.model.normalize import support_kind
from gcntrain.model.trainer import model_layers
from gcntrain.schemes import registry
from gcntrain.schemes.loading import open_source
from gcntrain.schemes.loading.numbering import partition_label
from gcntrain.schemes.protocol import PlanContext
from gcntrain.simulate.heldstore import held_source
from gcntrain.simulate.plan import LOAD_AGREEMENTS, PlanTable, plan_run
from gcntrain.simulate.plangraph import PlanGraph, plan_graph
from gcntrain.simulate.planmemory import plan_block
from gcntrain.simulate.schedule import record_schedule
from gcntrain.simulate.support import SYMMETRY_RTOL, plan_support, renumbered_pattern
from gcntrain.simulate.support import is_symmetric as support_symmetric
from gcntrain.simulate.target import PlanTarget

#: the trainer stores the first layer's input as CSR below this density (auto)
SPARSE_DENSITY = 0.2


def support_in_numbering(S: sp.csr_matrix, perm: np.ndarray) -> sp.csr_matrix:
    """S with rows and columns renumbered (``new = inv[old]``, ``perm[new] = old``), values
    included (the reference of `gcntrain.simulate.support.plan_support`'s pattern)."""
    M = sp.csr_matrix(S)[perm][:, perm].tocsr()
    M.sort_indices()
    return M


def is_symmetric(S: sp.csr_matrix) -> bool:
    """The symmetry test with scipy's transpose (the reference of `plan_support`'s)."""
    diff = abs(S - S.T)
    return bool(diff.nnz == 0 or diff.max() <= SYMMETRY_RTOL * max(abs(S).max(), 1.0))


def sparse_decision(config, graph: PlanGraph) -> bool:
    """Whether the run stores the first layer's input as CSR (as `prepare_features`: its
    nonzero values under `SPARSE_DENSITY` of its cells)."""
    if config.sparse_features is not None:
        return bool(config.sparse_features)
    cells = graph.n * graph.num_features
    if not graph.has_features or cells == 0:
        return False
    return bool(graph.nonzero / cells < SPARSE_DENSITY)


def feature_nnz(graph: PlanGraph, perm: np.ndarray) -> np.ndarray | None:
    """Stored feature nonzeros of every node, in the new numbering."""
    return None if graph.stored is None else graph.stored[perm]


@dataclass
class Simulation:
    scheme: object
    config: object  # the scheme's typed configuration (`SchemeConfig`)
    ctx: PlanContext
    calls: list
    table: PlanTable | None  # None until priced (`price_training`)
    meta: object
    graph: object
    num_features: int
    num_classes: int


def cached_numbering(cache: dict | None, sch, src, parts, spec, seed, col_parts, order="none"):
    """``sch.numbering(src, ...)``, computed once per partitioner, spec, seed, parts and
    locality order when `cache` is a dict (the entry keeps the numbering and the seconds it
    took)."""
    if cache is None or not isinstance(spec, str | None):
        return sch.numbering(src, parts, spec, seed, col_parts, order)
    key = _numbering_key(sch, parts, spec, seed, col_parts, order)
    if key not in cache:
        t0 = time.perf_counter()
        numbering = sch.numbering(src, parts, spec, seed, col_parts, order)
        cache[key] = (numbering, time.perf_counter() - t0)
    return cache[key][0]


def numbering_seconds(cache: dict) -> float:
    """Seconds the partitioners of a `cached_numbering` cache took in all."""
    return float(sum(seconds for _, seconds in cache.values()))


def plan_training(
    target: PlanTarget,
    *,
    agreements: int = LOAD_AGREEMENTS,
    setup: bool = True,
    **prepare,
) -> Simulation:
    """Plan a `gcntrain train` run of `config.epochs` epochs (no early stopping): the run
    `target` names (`gcntrain.simulate.target.PlanTarget`), prepared (`prepare_training`,
    which takes `prepare`: support, numberings, derived, max_memory) and priced.

    `target.num_features` / `target.num_classes` stand in for a graph without node data (a
    structure-only SNAP graph): the plan then assumes dense features of that width and
    train/val/test masks.  `agreements`: the load agreements of the run.  `setup`: price the
    setup exchanges (`gcntrain.simulate.plan.plan_run`; a sweep, which ranks by the epochs,
    does not).
    """
    sim = prepare_training(target, **prepare)
    return price_training(sim, agreements, setup)


def price_training(sim: Simulation, agreements: int = LOAD_AGREEMENTS, setup: bool = True):
    """`sim` with its plan table (`plan_run`; `sim` as `prepare_training` left it)."""
    sim.table = plan_run(sim.scheme, sim.ctx, sim.calls, agreements, setup)
    return sim


def numbering_key(sch, ranks: int, sc, partition, partition_seed: int) -> tuple | None:
    """What identifies the numbering that configuration `sc` of `sch` plans with (the key
    of `cached_numbering`'s cache), or None where it is not shareable (a partition vector)."""
    if not isinstance(partition, str | None):
        return None
    parts, cols = sch.row_parts(ranks, sc), sch.col_parts(ranks, sc)
    return _numbering_key(sch, parts, partition, partition_seed, cols, sch.locality_order(sc))


def _numbering_key(sch, parts, spec, seed, col_parts, order) -> tuple:
    return (type(sch).numbering.__qualname__, parts, spec, seed, col_parts, order)


def prepare_training(
    target: PlanTarget,
    *,
    support: sp.csr_matrix | None = None,
    numberings: dict | None = None,
    derived: dict | None = None,
    max_memory: float | None = None,
) -> Simulation:
    """Everything of `plan_training` but the pricing: the configuration, numbering, layout,
    support pattern and recorded schedule of the run `target` names, in a `Simulation`
    whose `table` is None (`price_training` adds it; a configuration search bounds a
    configuration's time from its compute first, `gcntrain.simulate.bound`).

    Parameters
    ----------
    target : the run (`gcntrain.simulate.target.PlanTarget`).
    support : the graph's support matrix for this model in its original numbering, when the
        caller already has it (the grid search plans one graph many times).
    numberings : a cache of numberings (partitions) shared by the plans of one graph; each
        entry also records the seconds its partitioner took (`numbering_seconds`).
    derived : a cache, shared by the plans of one graph with one `support`, of what depends
        only on the numbering and the model (the renumbered support matrix, its symmetry,
        the feature counts, the recorded schedule), so that a sweep builds them once per
        permutation rather than per configuration.
    max_memory : bytes the planner may use (its block size follows;
        `gcntrain.simulate.planmemory`).
    """
    config, ranks, partition = target.config, target.ranks, target.partition
    sch = registry.get(target.scheme, ranks)
    options = dict(target.options)
    sc = registry.configured(sch, ranks, options, config)
    src = held_source(open_source(target.source))
    meta = src.meta()
    limit = plan_block(src, meta, max_memory, sch, ranks)  # refused before reading
    numbering = cached_numbering(
        numberings,
        sch,
        src,
        sch.row_parts(ranks, sc),
        partition,
        target.partition_seed,
        sch.col_parts(ranks, sc),
        sch.locality_order(sc),
    )
    graph, numbering = plan_graph(src, numbering)
    graph.block_limit = limit
    where = getattr(src, "path", None)
    f0, classes = node_widths(graph, meta, target.num_features, target.num_classes, where)
    layout = sch.layout(numbering, meta, ranks, sc, model_layers(config, f0, classes))
    if support is None:
        derived = None  # built for this plan only: nothing to share
    kind = support_kind(config.model, config.aggregator)

    def renumbered():
        if support is None:
            S, symmetric = plan_support(graph, kind, graph.own(numbering.perm))
        else:  # a permutation does not change the symmetry: tested once per support
            given = sp.csr_matrix(support)
            symmetric = _memo(derived, ("symmetric", "given"), lambda: support_symmetric(given))
            S = renumbered_pattern(given.indptr, given.indices, numbering.perm, given.shape[0])
        graph.drop_structure()  # the plan holds S's pattern from here on
        fnnz = feature_nnz(graph, graph.own(numbering.perm))  # a store's rows as read
        if derived is not None:  # shared by the plans of a sweep: no plan may change them
            for a in (S.data, S.indices, S.indptr, fnnz):
                if a is not None:
                    a.flags.writeable = False
        return S, symmetric, fnnz

    S, symmetric, fnnz = _memo(derived, ("support", _digest(numbering.perm)), renumbered)
    ctx = PlanContext(
        layout,
        S,
        symmetric,
        feature_nnz=fnnz,
        feature_itemsize=4 if graph.itemsize is None else graph.itemsize,
        masks=len(graph.masks) if graph.has_features else 3,
        store=src.kind == "store",
        kind=kind,
    )
    masks = graph.masks
    cfg = repr(config)
    sparse = _memo(derived, ("sparse", cfg), lambda: sparse_decision(config, graph))
    schedule = (config, f0, classes, config.epochs, masks or ("train", "val", "test"), sparse)
    calls = _memo(derived, ("schedule", cfg, *schedule[1:]), lambda: record_schedule(*schedule))
    return Simulation(sch, sc, ctx, calls, None, meta, graph, f0, classes)


def _digest(perm) -> str | None:
    """A permutation's identity (numberings of different partitioners or part counts may
    be the same permutation: the block partition is the identity at every part count)."""
    if perm is None:
        return None
    a = np.ascontiguousarray(perm, dtype=np.int64)
    return hashlib.blake2b(a.view(np.uint8), digest_size=16).hexdigest()


def _memo(cache: dict | None, key: tuple, build):
    """``build()``, kept in `cache` under `key` (built afresh where `cache` is None or a
    part of the key is None: not shareable)."""
    if cache is None or any(k is None for k in key[1:2]):
        return build()
    if key not in cache:
        cache[key] = build()
    return cache[key]


def node_widths(graph, meta, num_features, num_classes, where=None) -> tuple[int, int]:
    """(feature width, classes) of the plan: the graph's, or the given stand-ins; `where`
    (the source's file, else the graph's name) names the graph in the line of a refusal."""
    f0 = int(num_features or graph.num_features or 0)
    classes = num_classes or meta.num_classes
    if classes is None and graph.labels is not None and graph.labels.size:
        classes = int(graph.labels.max()) + 1
    if f0 < 1 or not classes or classes < 2:
        raise InputError(
            "has no node features or labels to plan with; give --features F and "
            "--classes C (the widths a training run would use)",
            str(where or meta.name),
        )
    return f0, int(classes)


def simulation_summary(sim: Simulation, config, partition, seconds: float) -> dict:
    """The `gcntrain simulate --json` object (keys shared with `train --json` have the same
    meaning: per steady-state epoch, max / mean over ranks)."""
    import resource

    from gcntrain.model.run import model_summary
    from gcntrain.simulate.summary import summarize_table
    from gcntrain.simulate.timing import scheme_footprint
    from gcntrain.simulate.work import memory, work_summary

    t, ctx, g, meta = sim.table, sim.ctx, sim.graph, sim.meta
    ep = t.epoch_totals()
    traffic = summarize_table(ep, t.setup_total())
    sent = ep[:, :, 0].mean(axis=0) if ep.shape[0] else np.zeros(t.P)
    classes = sim.num_classes
    widths = [sim.num_features, *[int(h) for h in config.hidden], classes]
    itemsize = np.dtype(config.dtype).itemsize
    sparse = sparse_decision(config, g)
    fp = scheme_footprint(sim)
    fnnz = None
    if sparse and ctx.feature_nnz is not None:
        fnnz = fp["rows"] * (ctx.feature_nnz.sum() / max(g.n, 1))
    products = {int(c.shape(0)[1]) for c in sim.calls if c.method in ("aggregate", "aggregate_t")}
    mem = memory(fp, widths, itemsize, fnnz, sorted(products))
    mid = t.epoch_phases(len(t.epochs) // 2) if t.epochs else {}
    held = sim.scheme.held_estimate(ctx, itemsize)
    rf = sim.scheme.replication_factor(ctx)
    return {
        "scheme": sim.scheme.name,
        "ranks": t.P,
        "scheme_options": sim.config.to_dict(),
        "partition": partition_label(partition, sim.ctx.store, sim.scheme),
        "graph": meta.name,
        "num_nodes": meta.n,
        "nnz": meta.nnz,
        "num_features": sim.num_features,
        "num_classes": classes,
        **model_summary(config),
        "epochs": config.epochs,
        **traffic,
        "bytes_sent_imbalance": float(sent.max() / sent.mean()) if sent.mean() > 0 else 1.0,
        "phases_per_epoch": {
            k: {
                "bytes_sent_max": int(v[:, 0].max()),
                "bytes_sent_mean": float(v[:, 0].mean()),
                "messages_max": int(v[:, 2].max()),
            }
            for k, v in sorted(mid.items())
        },
        **work_summary(t),
        "memory_bytes_max": int(mem.max(initial=0)),
        "memory_bytes_mean": float(mem.mean()) if mem.size else 0.0,
        **(
            {}
            if held is None
            else {"held_bytes_max": int(held.max()), "held_bytes_mean": float(held.mean())}
        ),
        **({} if rf is None else {"replication_factor": rf}),
        "plan_notes": sim.scheme.plan_notes(ctx),
        "symmetric": ctx.symmetric,
        "simulate_seconds": seconds,
        "peak_rss_bytes": int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024,
    }
