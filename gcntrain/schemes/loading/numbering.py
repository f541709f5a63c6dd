"""The numbering of a whole-graph source: a partition spec (block | random | metis |
hypergraph | PART.h5, or a partition vector) renumbered part by part (`numbering_of`).
"""

from __future__ import annotations

import os

import numpy as np

from gcntrain.errors import InputError
from gcntrain.schemes.graphs import Numbering
from gcntrain.schemes.layout import renumber

#: vertex partitioners run at start-up by ``--partition NAME`` (every rank computes the same
#: parts: METIS with its seed, Mt-KaHyPar with its deterministic preset)
STARTUP_METHODS = ("metis", "hypergraph")


def partition_vector(
    spec, n: int, nblocks: int, seed: int, graph_hash: str, structure=None
) -> np.ndarray:
    """block | random | metis | hypergraph | PART.h5 (checked against the graph's content
    hash and part count), or a partition vector given as an array (library callers, tests).
    metis and hypergraph partition the graph at start-up: `structure()` returns its
    (indptr, indices)."""
    from gcntrain.partition.basic import block_partition, random_partition

    if isinstance(spec, np.ndarray):
        part = np.asarray(spec, dtype=np.int64)
        if part.shape != (n,) or (n and (part.min() < 0 or part.max() >= nblocks)):
            raise InputError(f"a partition vector must have {n} entries in 0..{nblocks - 1}")
        return part
    if spec == "block":
        return block_partition(n, nblocks)
    if spec == "random":
        return random_partition(n, nblocks, seed=seed)
    if spec in STARTUP_METHODS:
        if structure is None:
            raise InputError(
                f"--partition {spec} is computed at start-up from a graph file; write a "
                f"partition file with `gcntrain partition -m {spec}` for this source"
            )
        from gcntrain.partition.methods import run_method

        indptr, indices = structure()
        opts = {"preset": "deterministic"} if spec == "hypergraph" else None
        res = run_method(spec, indptr, indices, nblocks, seed=seed, hg_options=opts)
        return np.asarray(res.part, dtype=np.int64)
    if not os.path.exists(spec):
        raise InputError(
            "--partition must be block, random, metis, hypergraph or a partition file; "
            f"no such file: {spec}"
        )
    from gcntrain.data.partition_file import read_partition

    res = read_partition(spec, graph_hash or None, n=n)
    if res.part is None:
        kind = "2D permutation" if res.row_perm is not None else "vertex-cut (edge)"
        raise InputError(
            f"{spec} holds a {res.method} {kind} partition; this scheme needs a "
            "vertex partition (block, random, metis, hypergraph)"
        )
    if res.parts != nblocks:
        raise InputError(
            f"{spec} has {res.parts} parts but this run needs {nblocks} row "
            f"blocks (the scheme's row parts for this number of ranks)"
        )
    if res.part.shape[0] != n:
        raise InputError(f"{spec} partitions {res.part.shape[0]} nodes, the graph has {n}")
    return np.asarray(res.part, dtype=np.int64)


def _spec(spec):
    return "block" if spec is None else spec


def numbering_of(
    spec: str, n: int, parts: int, seed: int, graph_hash: str, structure=None
) -> Numbering:
    part = partition_vector(spec, n, parts, seed, graph_hash, structure)
    perm, inv, offsets = renumber(part, parts)
    return Numbering(perm, inv, offsets)


def whole_graph_numbering(source, parts: int, spec: str | None, seed: int) -> Numbering:
    """`numbering_of` a source that holds the whole graph (in memory or in one file): the
    partition is keyed by the content hash of its `meta()`, computed once per source."""
    meta = source.meta()
    return numbering_of(
        _spec(spec), meta.n, parts, seed, meta.content_hash, lambda: graph_structure(source)
    )


def graph_structure(source) -> tuple[np.ndarray, np.ndarray]:
    """(indptr, indices) of a graph file or in-memory graph source, original numbering."""
    if source.kind == "graph":
        g = source.graph
        return np.asarray(g.indptr, np.int64), np.asarray(g.indices, np.int64)
    from gcntrain.data.store import open_h5, read_dataset

    with open_h5(source.path, "graph file") as f:
        ip = read_dataset(f, "indptr", source.path)
        ix = read_dataset(f, "indices", source.path)
    return np.asarray(ip, np.int64), np.asarray(ix, np.int64)


def partition_label(partition, from_store: bool, scheme) -> str:
    """The partition of a run or a plan, as `train --json` and `simulate --json` name it: a
    store's own shards (``store``, where the run reads a store as it is), the scheme's
    default (block) without --partition, else the --partition given (a method or a file's
    path; "vector" for an array given through the API)."""
    if partition is None:
        return "store" if from_store else scheme.default_partition
    return partition if isinstance(partition, str) else "vector"
