"""One numbering (the row partition, renumbered part by part) for all of a job's ranks.

Every rank used to compute the job's numbering itself: the same METIS partition P times
over, on cores the ranks share where a node holds more ranks than cores, and with P copies
of the partitioner's working memory at once.  Instead:

* ``--scheme auto``'s search hands over the numbering it computed for the configuration it
  chose (`gcntrain.job.auto`), and the job takes it where its key is the job's own
  (`handed_numbering`);
* otherwise, where the partition is a slow method (METIS, the hypergraph partitioner) or the
  rows are put in a locality order (``--reorder``, which reads the whole graph's structure),
  rank 0 computes it while the others sleep, and sends it (`numbering_once`).

Both run before the run's counters start (the reported traffic is the training run's, as
`gcntrain simulate` plans it), and the job's `load_rank` takes the numbering where its key
is the job's own (`handed_numbering`).

Only plain vertex numberings travel (`send_numbering`: the permutation and the part
offsets); a vertex cut's numbering, which carries its edges, and a shard store's, which has
no permutation, are computed by every rank as before.
"""

from __future__ import annotations

import numpy as np

from gcntrain.comm.agree import agree, on_root

#: partitions computed once per job and sent (the slow vertex partitioners; Libra's edge
#: numbering carries its edges and is not sent)
ONCE = ("metis", "hypergraph")


def is_plain(numbering) -> bool:
    """Whether `numbering` can be sent: a vertex numbering with a permutation."""
    return numbering is not None and numbering.perm is not None and numbering.cut is None


def send_numbering(world, numbering, root: int):
    """`root`'s plain `numbering` (`is_plain`) on every rank of `world` (a counted Comm;
    phase control, before the run's counters start), or None on every rank where it is not
    plain.  Collective: every rank calls it, `numbering` is read on `root` only."""
    from gcntrain.schemes.graphs import Numbering

    plain = world.bcast_flag(world.rank == root and is_plain(numbering), root)
    if not plain:
        return None
    sizes = np.zeros(3, dtype=np.int64)  # rows, parts + 1, column parts + 1 (0: none)
    if world.rank == root:
        cols = numbering.col_offsets
        sizes[:] = numbering.perm.size, numbering.offsets.size, 0 if cols is None else cols.size
    world.bcast(sizes, root, "control")
    arrays = []
    for size, name in zip(sizes.tolist(), ("perm", "offsets", "col_offsets")):
        a = getattr(numbering, name) if world.rank == root else None
        a = np.empty(size, dtype=np.int64) if a is None else a
        arrays.append(world.bcast(np.ascontiguousarray(a, dtype=np.int64), root, "control"))
    perm, offsets, cols = arrays
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size, dtype=np.int64)
    return Numbering(perm, inv, offsets, cols if sizes[2] else None)


def own_numbering(scheme, size: int, sc, spec, source):
    """The numbering the job `spec` (configuration `sc` of `scheme` on `size` ranks) has on
    `source` when a rank computes it itself: its partition, renumbered part by part, in the
    scheme's locality order."""
    return scheme.numbering(
        source,
        scheme.row_parts(size, sc),
        spec.partition,
        spec.partition_seed,
        scheme.col_parts(size, sc),
        scheme.locality_order(sc),
    )


def handed_numbering(handed, scheme, size: int, sc, spec):
    """The `Numbering` of `handed` (numbering key, numbering) where its key is the one the
    job's configuration `sc` of `scheme` numbers by on `size` ranks, else None."""
    if handed is None:
        return None
    from gcntrain.simulate.run import numbering_key

    key = numbering_key(scheme, size, sc, spec.partition, spec.partition_seed)
    return handed[1] if key is not None and key == handed[0] else None


def numbering_once(world, spec, scheme):
    """(numbering key, `Numbering`) of the job `spec` (its configuration of `scheme`)
    computed by rank 0 alone (the others asleep, `on_root`: its error, if any, raised on
    every rank) and sent to every rank, where on several ranks the partition is one of
    `ONCE` or the rows are put in a locality order (``--reorder``, ``auto`` included: the
    order reads the whole graph's structure, which P ranks of a node would each hold); else
    None (each rank numbers its rows itself).  The job's runner calls it before the run's
    counters start, as ``--scheme auto``'s search and its hand-over run: the reported
    traffic is the training run's (and `gcntrain simulate`'s plan)."""
    if world.size == 1 or not isinstance(spec.partition, str | None):
        return None
    from gcntrain.model.run import check_widths
    from gcntrain.schemes import registry
    from gcntrain.schemes.loading import open_source
    from gcntrain.simulate.run import numbering_key

    size = world.size
    sc = agree(world, lambda: registry.configured(scheme, size, dict(spec.options), spec.config))
    if spec.partition not in ONCE and scheme.locality_order(sc) == "none":
        return None

    def number():
        src = open_source(spec.source)
        check_widths(src.meta(), src.label)  # the same first refusals as `load_rank`'s
        return own_numbering(scheme, size, sc, spec, src)

    sent = send_numbering(world, on_root(world, number), 0)
    if sent is None:
        return None
    return numbering_key(scheme, size, sc, spec.partition, spec.partition_seed), sent
