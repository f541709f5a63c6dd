"""``--scheme auto`` on several ranks: choose the exact configuration with the least predicted
epoch time, quickly and aloud.

* **Planned by the ranks, one per core.**  The configurations
  (`gcntrain.simulate.sweep.candidates`, exact ones only) are dealt by estimated cost to
  the job's ranks that have a core each (`gcntrain.comm.node.working_ranks`: on a node
  with fewer cores than ranks, the first ranks; the others sleep), the configurations of a
  slow partitioner (METIS, Libra) together (`gcntrain.simulate.deal`); each plans its
  share (`sweep(..., share=(i, k), prune=True)`): it bounds every configuration's
  epoch from its compute alone (`gcntrain.simulate.bound`) and prices in full, in the
  order of the bounds, only those that could still be its best or runner-up.  The rows are
  gathered on every rank (one Allgatherv of their JSON) and every rank picks the same best
  (`recommend`): the choice and the runner-up are those of the full search.  The profile
  is loaded on rank 0 first (``--machine local`` may calibrate this machine once, the other
  ranks asleep), then by the others from the file it names.
* **Cached.**  The choice is kept in the cache directory (`gcntrain.simulate.local.cache_dir`)
  under a key of everything it depends on: the graph's content hash and size, the model
  configuration (epochs capped as the sweep caps them), ranks and ranks per node, the scheme
  options and partition given, the profile's figures and the gcntrain version.  A partition
  file enters by its path, size and modification time.  A graph without a content hash (an
  in-memory graph whose hash is empty) is not cached.
* **Partitioned once.**  The rank whose search computed the chosen configuration's
  numbering (its METIS partition, say) sends it to the others, and the job trains with it
  (`gcntrain.job.runner.load_rank`) instead of partitioning the graph again on every rank.
* **Said aloud.**  One line when the search starts and one with the choice, its predicted
  epoch, the runner-up and the search's time (rank 0, stderr, through `notice`); for
  ``--machine local`` the choice's line names this host's cached profile and when it was
  measured, and the choice carries the profile's file and date (``machine_file``,
  ``machine_measured``).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from gcntrain.comm.agree import agree, idle_barrier, on_root
from gcntrain.comm.node import working_ranks
from gcntrain.errors import InputError
from gcntrain.job.progress import count
from gcntrain.jsonutil import to_json

#: seconds between the waiting ranks' polls while rank 0 loads (perhaps measures) the profile
PROFILE_POLL = 0.1
#: the keys of a sweep row the choice carries
KEEP = ("scheme", "values", "partition", "label", "epoch_seconds", "memory_bytes_max")
#: bump when the cached choice's meaning changes
CACHE_FORMAT = 1


def _profile(world, machine: str):
    """The profile on every rank: rank 0 resolves it (and may calibrate ``local``) while the
    others sleep, then sends its text, which every rank parses (no rank reads a file only
    rank 0 can see: a node-local cache).  (profile, True), or (profile on rank 0 and None
    elsewhere, False) where it has no file (measured, not cached): rank 0 then plans alone."""
    from gcntrain.simulate.local import load_machine
    from gcntrain.simulate.machine import parse_machine

    def first():
        prof = load_machine(machine)
        ok = bool(prof.path) and os.path.isfile(prof.path)
        return prof, (Path(prof.path).read_text(encoding="utf-8") if ok else "")

    got = on_root(world, first, poll=PROFILE_POLL)
    text = world.bcast_bytes(got[1].encode() if got else None, 0, "control").decode()
    if not text:
        return (got[0] if world.rank == 0 else None), False
    path = world.bcast_bytes(got[0].path.encode() if got else None, 0, "control").decode()
    return agree(world, lambda: got[0] if got else parse_machine(text, path)), True


def _stat(path) -> list:
    st = os.stat(path)
    return [os.path.abspath(path), st.st_size, st.st_mtime_ns]


def cache_key(
    meta, config, size, per_node, options, partition, partition_seed, prof, source=None
) -> str:
    """The cache key of a choice (module docstring), or "" where it cannot be cached.
    `source`: the graph as given; a shard store (a directory: its numbering and shards are
    its own) enters by its manifest's path, size and time besides the graph's hash."""
    from gcntrain import __version__
    from gcntrain.simulate.sweep import SWEEP_EPOCHS

    if not getattr(meta, "content_hash", ""):
        return ""
    where = ["graph"]
    if isinstance(source, (str, os.PathLike)) and os.path.isdir(source):
        manifest = Path(source) / "manifest.json"
        where = ["store", _stat(manifest) if manifest.is_file() else os.path.abspath(source)]
    part = partition
    if isinstance(partition, (str, os.PathLike)) and os.path.isfile(partition):
        part = _stat(partition)
    elif partition is not None and not isinstance(partition, str):
        return ""  # a partition vector (the API): not worth hashing
    cfg = asdict(replace(config, epochs=min(config.epochs, SWEEP_EPOCHS)))
    doc = {
        "format": CACHE_FORMAT,
        "version": __version__,
        "graph": [meta.content_hash, meta.n, meta.nnz, meta.num_features, meta.num_classes],
        "source": where,
        "config": cfg,
        "ranks": [size, per_node],
        "options": options or {},
        "partition": [part, partition_seed],
        "machine": repr(replace(prof, path="")),  # its figures, wherever the file lies
    }
    text = json.dumps(doc, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _cache_file(key: str):
    from gcntrain.simulate.local import cache_dir

    return cache_dir() / "auto" / f"{key}.json"


def _cached(key: str) -> dict | None:
    if not key:
        return None
    try:
        got = json.loads(_cache_file(key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    need = (*KEEP[:4], "predicted_epoch_seconds", "machine", "configurations", "runner_up")
    return got if isinstance(got, dict) and all(k in got for k in need) else None


def _store(key: str, choice: dict) -> None:
    """Keep `choice` (best effort: a cache that cannot be written is no error)."""
    from gcntrain.data.atomic import write_text

    if not key:
        return
    try:
        path = _cache_file(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, to_json(choice))
    except Exception:  # noqa: BLE001 - the cache is an optimisation only
        pass


def _gather_rows(world, rows: list[dict]) -> list[dict]:
    """Every rank's rows on every rank (one Allgatherv of their JSON, phase control)."""
    mine = np.frombuffer(to_json(rows).encode(), dtype=np.uint8)
    sizes = np.zeros(world.size, dtype=np.int64)
    sizes[world.rank] = mine.size
    sizes = world.allreduce(sizes, "control")
    flat = world.allgatherv(mine, sizes, "control").tobytes()
    out, at = [], 0
    for n in sizes.tolist():
        out.extend(json.loads(flat[at : at + n].decode()))
        at += n
    return out


def choose(
    world,
    source,
    config,
    options,
    partition,
    partition_seed,
    machine,
    per_node,
    notice,
    max_memory=None,
    cores=None,
):
    """The choice of ``--scheme auto`` on every rank of `world` (module docstring): (a dict
    of the best row's `KEEP` keys (``epoch_seconds`` as ``predicted_epoch_seconds``) plus
    ``machine``, ``configurations``, ``sweep_seconds``, ``runner_up`` and ``cached``; the
    chosen configuration's numbering as the search computed it, `_hand_over`, or None).
    `cores`: the cores of each node the planning ranks are counted by (default: those the
    node's ranks may run on, `gcntrain.comm.node.working_ranks`)."""
    from gcntrain.job.memory_guard import check_planning
    from gcntrain.schemes.loading import open_source
    from gcntrain.simulate.sweep import merged_ranking, recommend, sweep
    from gcntrain.simulate.timing import placement

    say = notice if (notice is not None and world.rank == 0) else (lambda line: None)
    prof, shared = _profile(world, machine)
    origin, cached_at = _origin(prof, machine)
    t0 = time.perf_counter()  # the choice's own time (not a first calibration of `local`)
    prof = process_room(prof, per_node, max_memory)  # a choice must fit --max-memory too

    def widths():
        config.validate()  # a bad value is its own line, not "no configuration fits"
        if partition is not None and not isinstance(partition, str | os.PathLike):
            raise InputError(
                "--scheme auto chooses among partition methods or a partition file; a "
                "partition vector needs an explicit scheme"
            )
        meta = open_source(source).meta()  # its widths checked (`runner.verify_source`)
        widths = [meta.num_features, *config.hidden, meta.num_classes or 2]
        check_planning(widths, np.dtype(config.dtype).itemsize, per_node, max_memory)
        return meta

    meta = agree(world, widths)  # before any planning: one refusal on every rank

    def lookup():
        if world.rank != 0:
            return None
        shape = (world.size, per_node, options, partition, partition_seed, prof, source)
        key = cache_key(meta, config, *shape)
        hit = _cached(key)
        if hit is not None:
            hit.update(origin)  # where the profile lies now (the key holds its figures)
        return key, hit

    got = agree(world, lookup)
    key, hit = got if got is not None else ("", None)
    hit = json.loads(world.bcast_bytes(to_json(hit).encode() if world.rank == 0 else None))
    if hit is not None:
        hit.update(cached=True, sweep_seconds=time.perf_counter() - t0)
        say(_chosen_line(hit, cached_at))
        return hit, None
    # one planning rank per core of each node (`working_ranks`)
    planners = working_ranks(world, cores) if shared else [0]
    # every rank planning holds the whole graph: only where the node has room for them all
    shared = shared and _graphs_fit(meta, min(per_node, len(planners)), max_memory)
    nodes = -(-world.size // per_node)
    say(
        f"scheme auto: planning the exact configurations of every scheme for "
        f"{count(world.size, 'rank')} ({count(nodes, 'node')} x {per_node}) on profile "
        f"{prof.name if prof is not None else machine}"
        + (f", shared by {_sharers(len(planners), world.size)}" if shared else "")
        + " ..."
    )
    parts = None if partition is None else [partition]
    held: dict = {}  # this rank's numberings, by numbering key (`_hand_over`)

    def plan(share):
        place = placement(prof, world.size, None, per_node)
        res = sweep(
            source,
            config,
            world.size,
            place,
            partitions=parts,
            options=options,
            partition_seed=partition_seed,
            exact_only=True,
            share=share,
            strict=False,
            prune=True,
        )
        why = res.refused[0]["error"] if res.refused else ""
        held.update(res.numberings)
        return res.ranking, len(res.ranking) + len(res.refused) + res.pruned, why

    def share():
        try:
            if world.rank not in planners:
                return [], 0, ""
            return plan((planners.index(world.rank), len(planners)))
        finally:  # a rank done early sleeps: polling, it would take the working ranks' cores
            idle_barrier(world.comm)

    if shared:
        rows, n, why = agree(world, share)
        rows = _gather_rows(world, rows)
        total = int(world.allreduce(np.array([n], dtype=np.int64), "control")[0])
        whys = [r for r in _gather_rows(world, [why] if why else []) if r]
    else:
        got = on_root(world, lambda: to_json(plan((0, 1))).encode(), poll=PROFILE_POLL)
        rows, total, why = json.loads(world.bcast_bytes(got, 0, "control").decode())
        whys = [why] if why else []
    rows = merged_ranking(rows, world.size, len(planners) if shared else 1, parts, options)

    def pick():
        from gcntrain.simulate.sweep import SweepResult

        if not rows:  # every configuration refused: say why, as `simulate --sweep` does
            raise InputError(f"--scheme auto: no configuration fits: {whys[0] if whys else '-'}")
        if max_memory is not None:
            no_fit_line(rows, max_memory, np.dtype(config.dtype).itemsize)
        best = recommend(SweepResult(rows, None, [], 0.0, 0.0))
        others = [r for r in rows if r["exact"] and r["fits"] and r is not best]
        choice = {k: best[k] for k in KEEP}
        choice["predicted_epoch_seconds"] = choice.pop("epoch_seconds")
        choice.update(
            machine=prof.name if prof is not None else str(machine),
            **origin,
            configurations=total,
            sweep_seconds=time.perf_counter() - t0,
            runner_up={
                "label": others[0]["label"] if others else None,
                "predicted_epoch_seconds": others[0]["epoch_seconds"] if others else None,
            },
        )
        if world.rank == 0:
            _store(key, choice)
            return to_json(choice).encode()
        return None

    # rank 0's choice on every rank: one summary, identical everywhere
    mine = agree(world, pick, name_rank=False)
    choice = json.loads(world.bcast_bytes(mine, 0, "control").decode())
    choice["cached"] = False
    say(_chosen_line(choice, cached_at))
    return choice, _hand_over(world, choice, held, config, partition_seed)


def _hand_over(world, choice: dict, held: dict, config, partition_seed: int):
    """(numbering key, `Numbering`) of the chosen configuration on every rank, sent by the
    lowest rank whose search computed it, or None where none did (or it is no plain vertex
    numbering: a vertex cut's carries its edges); the job then trains with it instead of
    partitioning the graph again on every rank (`gcntrain.job.runner.load_rank`)."""
    from gcntrain.job.numbering import is_plain, send_numbering
    from gcntrain.schemes import registry
    from gcntrain.simulate.run import numbering_key

    def chosen_key():
        sch = registry.get(choice["scheme"], world.size)
        sc = registry.configured(sch, world.size, choice["values"], config)
        return numbering_key(sch, world.size, sc, choice["partition"], partition_seed)

    key = agree(world, chosen_key)  # one verdict: no rank left waiting in the broadcasts
    got = held.get(key, (None,))[0] if key is not None else None
    mine = np.array([world.rank if is_plain(got) else world.size], dtype=np.int64)
    root = int(world.allreduce(mine, "control", op="min")[0])
    if root == world.size:
        return None
    return key, send_numbering(world, got, root)


def _sharers(planners: int, size: int) -> str:
    """Who plans: "the 4 ranks", or "2 of the 4 ranks (one per core)" on a node with
    fewer cores than ranks."""
    if planners == size:
        return f"the {size} ranks"
    return f"{planners} of the {size} ranks (one per core)"


def _graphs_fit(meta, per_node: int, max_memory) -> bool:
    """Whether `per_node` planning processes can each hold the whole graph (its adjacency
    as int64 and float64, its features as float32) in a quarter of their share of memory;
    else rank 0 plans alone, as before the planning was shared."""
    from gcntrain.data.memory import available_bytes

    graph = 16.0 * meta.nnz + 4.0 * meta.n * max(meta.num_features, 1)
    have = float(max_memory) * per_node if max_memory is not None else available_bytes()
    return have is None or per_node * graph <= have / 4


def process_room(prof, per_node: int, max_memory):
    """`prof` (a `Machine`, or None) with its node's memory bounded by ``--max-memory``:
    each of the `per_node` ranks of a node has `max_memory` bytes less the fixed
    `gcntrain.job.memory_guard.PROCESS_BYTES` for its share, so that the sweep's ``fits``
    (a rank's estimated memory times the ranks of a node within the node's memory) holds a
    configuration to the bound, its pruning keeps the best and runner-up among those that
    fit, and the cache key names the bound.  Unchanged without `max_memory`."""
    from gcntrain.job.memory_guard import PROCESS_BYTES

    if prof is None or max_memory is None:
        return prof
    # at least a byte: a node memory of 0 reads as unknown, which everything fits
    room = max(float(per_node) * (float(max_memory) - PROCESS_BYTES), 1.0)
    return replace(prof, memory=min(prof.memory, room) if prof.memory > 0 else room)


def no_fit_line(rows: list[dict], max_memory: float, itemsize: int) -> None:
    """`InputError` when no exact configuration of `rows` (the sweep's, held to
    `process_room`) fits because of ``--max-memory``: the bound, the smallest need among
    them (the fixed part and the share apart, `gcntrain.job.memory_guard.need_words`) and
    whether more ranks could help.  Nothing where one fits, or where the node's own memory,
    not the bound, excludes them (`recommend` says so)."""
    from gcntrain.data.memory import fmt_bytes
    from gcntrain.job.memory_guard import need_words

    exact = [r for r in rows if r["exact"]]
    if not exact or any(r["fits"] for r in exact):
        return
    least = min(exact, key=lambda r: r["memory_bytes_max"])
    what = "its share (graph, model, activations and buffers: the plan's estimate)"
    ways = ["more ranks", "a smaller --hidden"]
    need, split, ways_out = need_words(least["memory_bytes_max"], what, max_memory, ways, itemsize)
    if need <= max_memory:
        return
    raise InputError(
        f"--scheme auto: no configuration fits the {fmt_bytes(max_memory)} of --max-memory "
        f"per rank: the smallest need, {least['label']}'s, is about {split}; {ways_out}"
    )


def _origin(prof, machine) -> tuple[dict, str]:
    """The profile's file and date for the choice (``machine_file``: None where it has no
    file; ``machine_measured``: None where it records none), and for ``--machine local``
    where this host's cache holds it, the words naming that cache and its date
    (`gcntrain.simulate.local.cached_words`; "" otherwise, and on ranks without `prof`)."""
    from gcntrain.simulate.local import LOCAL, cached_words

    has_file = prof is not None and bool(prof.path) and os.path.isfile(prof.path)
    origin = {
        "machine_file": prof.path if has_file else None,
        "machine_measured": (prof.measured or None) if prof is not None else None,
    }
    return origin, cached_words(prof) if has_file and str(machine) == LOCAL else ""


def _chosen_line(c: dict, cached_at: str = "") -> str:
    """The notice of a choice: what, its predicted epoch (on which profile: for ``--machine
    local``, `cached_at` names this host's cached profile and its date), why (the
    runner-up), how long."""
    ms = c["predicted_epoch_seconds"] * 1e3
    line = f"scheme auto: {c['label']}, predicted {ms:.3f} ms per epoch on profile {c['machine']}"
    if cached_at:
        line += f" (this host's, {cached_at})"
    r = c.get("runner_up") or {}
    if r.get("label"):
        line += f"; the next best, {r['label']}, {r['predicted_epoch_seconds'] * 1e3:.3f} ms"
        if c["predicted_epoch_seconds"] > 0:
            gap = r["predicted_epoch_seconds"] / c["predicted_epoch_seconds"] - 1.0
            line += f" ({gap:+.1%})"
    else:
        line += "; the only exact configuration that fits"
    if c.get("cached"):
        line += " (the choice cached for this graph and job shape)"
    else:
        line += f"; {count(c['configurations'], 'configuration')} in {c['sweep_seconds']:.1f} s"
    return line
