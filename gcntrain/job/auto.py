"""``--scheme auto`` on several ranks: choose the exact configuration with the least predicted
epoch time, quickly and aloud.

* **Planned by every rank.**  The configurations (`gcntrain.simulate.sweep.candidates`,
  exact ones only) are dealt round-robin to the job's ranks; each plans and prices its share
  (`sweep(..., share=(rank, size))`), the rows are gathered on every rank (one Allgatherv of
  their JSON) and every rank picks the same best (`recommend`).  The profile is loaded on
  rank 0 first (``--machine local`` may calibrate this machine once, the other ranks asleep),
  then by the others from the file it names.
* **Cached.**  The choice is kept in the cache directory (`gcntrain.simulate.local.cache_dir`)
  under a key of everything it depends on: the graph's content hash and size, the model
  configuration (epochs capped as the sweep caps them), ranks and ranks per node, the scheme
  options and partition given, the profile's figures and the gcntrain version.  A partition
  file enters by its path, size and modification time.  A graph without a content hash (an
  in-memory graph whose hash is empty) is not cached.
* **Said aloud.**  One line when the search starts and one with the choice, its predicted
  epoch, the runner-up and the search's time (rank 0, stderr, through `notice`).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, replace

import numpy as np

from gcntrain.comm.agree import agree, on_root
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
    others sleep; they then read the file it names (the cached profile for ``local``), or,
    where there is none, get None (rank 0 then plans alone)."""
    from gcntrain.simulate.local import load_machine

    def first():
        prof = load_machine(machine)
        return prof, (prof.path if prof.path and os.path.isfile(prof.path) else "")

    got = on_root(world, first, poll=PROFILE_POLL)
    path = world.bcast_bytes(got[1].encode() if got else None, 0, "control").decode()
    if not path:
        return (got[0] if world.rank == 0 else None), False
    return agree(world, lambda: got[0] if world.rank == 0 else load_machine(path)), True


def cache_key(meta, config, size, per_node, options, partition, partition_seed, prof) -> str:
    """The cache key of a choice (module docstring), or "" where it cannot be cached."""
    from gcntrain import __version__
    from gcntrain.simulate.sweep import SWEEP_EPOCHS

    if not getattr(meta, "content_hash", ""):
        return ""
    part = partition
    if isinstance(partition, (str, os.PathLike)) and os.path.isfile(partition):
        st = os.stat(partition)
        part = [os.path.abspath(partition), st.st_size, st.st_mtime_ns]
    elif partition is not None and not isinstance(partition, str):
        return ""  # a partition vector (the API): not worth hashing
    cfg = asdict(replace(config, epochs=min(config.epochs, SWEEP_EPOCHS)))
    doc = {
        "format": CACHE_FORMAT,
        "version": __version__,
        "graph": [meta.content_hash, meta.n, meta.nnz, meta.num_features, meta.num_classes],
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
    return got if isinstance(got, dict) and "scheme" in got else None


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
):
    """The choice of ``--scheme auto`` on every rank of `world` (module docstring): a dict of
    the best row's `KEEP` keys (``epoch_seconds`` as ``predicted_epoch_seconds``) plus
    ``machine``, ``configurations``, ``sweep_seconds``, ``runner_up`` and ``cached``."""
    from gcntrain.job.memory_guard import check_planning
    from gcntrain.model.run import check_widths
    from gcntrain.schemes.loading import open_source
    from gcntrain.simulate.sweep import rank_key, recommend, sweep
    from gcntrain.simulate.timing import placement

    say = notice if (notice is not None and world.rank == 0) else (lambda line: None)
    prof, shared = _profile(world, machine)
    t0 = time.perf_counter()  # the choice's own time (not a first calibration of `local`)

    def widths():
        config.validate()  # a bad value is its own line, not "no configuration fits"
        src = open_source(source)
        meta = src.meta()
        check_widths(meta.num_features, meta.num_classes, getattr(src, "label", meta.name))
        widths = [meta.num_features, *config.hidden, meta.num_classes or 2]
        check_planning(widths, np.dtype(config.dtype).itemsize, per_node, max_memory)
        return meta

    meta = agree(world, widths)  # the refusal every path gives, before any planning
    key = ""
    if world.rank == 0:
        key = cache_key(
            meta, config, world.size, per_node, options, partition, partition_seed, prof
        )
    hit = _cached(key) if world.rank == 0 else None
    hit_bytes = world.bcast_bytes(to_json(hit).encode() if world.rank == 0 else None)
    hit = json.loads(hit_bytes.decode())
    if hit is not None:
        hit.update(cached=True, sweep_seconds=time.perf_counter() - t0)
        say(_chosen_line(hit, world.size, per_node))
        return hit
    nodes = -(-world.size // per_node)
    say(
        f"scheme auto: planning the exact configurations of every scheme for "
        f"{count(world.size, 'rank')} ({count(nodes, 'node')} x {per_node}) on profile "
        f"{prof.name if prof is not None else machine}"
        + (f", shared by the {world.size} ranks" if shared else "")
        + " ..."
    )
    parts = None if partition is None else [partition]

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
        )
        return res.ranking, len(res.ranking) + len(res.refused)

    if shared:
        rows, n = agree(world, lambda: plan((world.rank, world.size)))
        rows = _gather_rows(world, rows)
        total = int(world.allreduce(np.array([n], dtype=np.int64), "control")[0])
    else:
        got = on_root(world, lambda: to_json(plan((0, 1))).encode(), poll=PROFILE_POLL)
        rows, total = json.loads(world.bcast_bytes(got, 0, "control").decode())
    rows.sort(key=rank_key)

    def pick():
        from gcntrain.simulate.sweep import SweepResult

        return recommend(SweepResult(rows, None, [], 0.0, 0.0))

    best = agree(world, pick, name_rank=False)
    others = [r for r in rows if r["exact"] and r["fits"] and r is not best]
    choice = {k: best[k] for k in KEEP}
    choice["predicted_epoch_seconds"] = choice.pop("epoch_seconds")
    choice.update(
        machine=prof.name if prof is not None else str(machine),
        configurations=total,
        sweep_seconds=time.perf_counter() - t0,
        runner_up={
            "label": others[0]["label"] if others else None,
            "predicted_epoch_seconds": others[0]["epoch_seconds"] if others else None,
        },
    )
    if world.rank == 0:
        _store(key, choice)
    choice["cached"] = False
    say(_chosen_line(choice, world.size, per_node))
    return choice


def _chosen_line(c: dict, size: int, per_node: int) -> str:
    """The notice of a choice: what, its predicted epoch, why (the runner-up), how long."""
    ms = c["predicted_epoch_seconds"] * 1e3
    line = f"scheme auto: {c['label']}, predicted {ms:.3f} ms per epoch on profile {c['machine']}"
    r = c.get("runner_up") or {}
    if r.get("label"):
        gap = r["predicted_epoch_seconds"] / c["predicted_epoch_seconds"] - 1.0
        line += f"; the next best, {r['label']}, {r['predicted_epoch_seconds'] * 1e3:.3f} ms "
        line += f"({gap:+.1%})"
    else:
        line += "; the only exact configuration that fits"
    if c.get("cached"):
        line += " (the choice cached for this graph and job shape)"
    else:
        line += f"; {count(c['configurations'], 'configuration')} in {c['sweep_seconds']:.1f} s"
    return line
