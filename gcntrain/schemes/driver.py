"""Distributed training driver: load this rank's rows, set a scheme up, train, reduce a report.

The model and trainer are used unchanged (`gcntrain.model.trainer.fit`); only the Ops differ.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from time import perf_counter

import numpy as np
import scipy.sparse as sp

from gcntrain.comm.agree import agree
from gcntrain.comm.grid import grid_2d
from gcntrain.errors import InputError
from gcntrain.model.normalize import degrees, support_kind, support_rows
from gcntrain.schemes import registry
from gcntrain.schemes.base import transpose_rows
from gcntrain.schemes.layout import renumber
from gcntrain.schemes.one_d import OneDOps
from gcntrain.schemes.one_five_d import OneFiveDOps
from gcntrain.schemes.p2p import P2POps


@dataclass
class LocalBlock:
    """One row block in the new numbering (what a rank holds after loading).

    indptr/indices/data: adjacency rows (global NEW column ids); new_ids: their new ids;
    orig_ids: their original ids; offsets: block boundaries (B+1).
    """

    n: int
    offsets: np.ndarray
    block: int
    indptr: np.ndarray
    indices: np.ndarray
    data: np.ndarray | None
    orig_ids: np.ndarray
    features: np.ndarray | sp.spmatrix
    labels: np.ndarray
    masks: dict[str, np.ndarray]
    num_classes: int
    name: str = "graph"
    meta: dict = field(default_factory=dict)

    @property
    def new_ids(self) -> np.ndarray:
        return np.arange(self.offsets[self.block], self.offsets[self.block + 1], dtype=np.int64)


def block_from_graph(graph, part: np.ndarray, nblocks: int, block: int) -> LocalBlock:
    """Cut block `block` out of an in-memory graph under partition vector `part`."""
    perm, inv, offsets = renumber(part, nblocks)
    old = perm[offsets[block] : offsets[block + 1]]
    A = graph.adjacency()[old]
    A.sort_indices()
    cols = inv[A.indices.astype(np.int64)]
    # keep rows' column order sorted in the new numbering
    M = sp.csr_matrix((A.data, cols, A.indptr), shape=(old.size, graph.n))
    M.sort_indices()
    masks = {}
    for k in ("train", "val", "test"):
        m = getattr(graph, f"{k}_mask")
        if m is not None:
            masks[k] = np.asarray(m, dtype=bool)[old]
    labels = (
        np.full(old.size, -1, np.int64)
        if graph.labels is None
        else np.asarray(graph.labels, dtype=np.int64)[old]
    )
    feats = (
        graph.features[old] if graph.features is not None else np.ones((old.size, 1), np.float32)
    )
    return LocalBlock(
        graph.n,
        offsets,
        block,
        M.indptr.astype(np.int64),
        M.indices.astype(np.int64),
        None if graph.data is None else M.data.astype(np.float32),
        old,
        feats,
        labels,
        masks,
        int(graph.num_classes or 1),
        graph.name,
    )


def setup_ops(world, scheme: str, replication: int, local: LocalBlock, kind: str):
    """Build the scheme's Ops for this rank (setup traffic in phase "setup")."""
    if scheme == "1.5d":
        grid = grid_2d(world, world.size // replication, replication)
        bcomm = grid.col
    else:
        grid = None
        bcomm = world
    assert bcomm.rank == local.block
    sizes = np.diff(local.offsets)
    deg = degrees(local.indptr, local.indices, local.data, kind, rows=local.new_ids)
    deg_all = bcomm.allgatherv(deg.astype(np.float64), sizes, "setup")
    fwd = support_rows(local.indptr, local.indices, local.data, local.new_ids, deg_all, kind)
    bwd = transpose_rows(bcomm, local.offsets, *fwd)
    same = (
        bwd[0].shape == fwd[0].shape
        and np.array_equal(bwd[0], fwd[0])
        and np.array_equal(bwd[1], fwd[1])
        and np.allclose(bwd[2], fwd[2], rtol=1e-12, atol=0)
    )
    flag = world.allreduce(np.array([0 if same else 1], dtype=np.int64), "setup", op="max")
    if flag[0] == 0:
        bwd = None
    if scheme == "1d":
        return OneDOps(world, local.offsets, fwd, bwd, local.orig_ids)
    if scheme == "1.5d":
        return OneFiveDOps(world, grid, local.offsets, fwd, bwd, local.orig_ids)
    return P2POps(world, local.offsets, fwd, bwd, local.orig_ids)


class FaultOps:
    """Test hook (GCNTRAIN_FAULT=rank:call): raise on this rank's N-th aggregation."""

    def __init__(self, ops, at_call: int):
        self._ops = ops
        self._left = at_call

    def __getattr__(self, name):
        return getattr(self._ops, name)

    def aggregate(self, X, phase=""):
        self._left -= 1
        if self._left <= 0:
            raise RuntimeError(f"injected fault (GCNTRAIN_FAULT) in aggregation {phase}")
        return self._ops.aggregate(X, phase)

    def aggregate_t(self, X, phase=""):
        return self._ops.aggregate_t(X, phase)


def maybe_fault(ops, rank: int):
    spec = os.environ.get("GCNTRAIN_FAULT")
    if not spec:
        return ops
    r, n = spec.split(":")
    return FaultOps(ops, int(n)) if int(r) == rank else ops


@dataclass
class DistributedRun:
    result: object  # TrainResult (local rows)
    ops: object
    tally_setup: object  # Tally of loading and setup (phases "control", "setup")
    tally_train: object  # Tally of training alone (setup excluded)
    setup_seconds: float
    local: LocalBlock
    epoch_tallies: list  # one Tally per epoch (what the per-epoch report uses)

    @property
    def tally_total(self):
        return self.tally_setup.merged(self.tally_train)


def check_classes(local: LocalBlock) -> LocalBlock:
    """Classification needs at least two classes (same rule as the serial path)."""
    if local.num_classes < 2:
        raise InputError(f"need at least 2 classes, found {local.num_classes}", local.name)
    return local


def train_distributed(
    world, scheme: str, loader, config, replication: int = 1, callback=None
) -> DistributedRun:
    """Validate the configuration and load (one collective agreement), set up, train.

    `loader(nblocks, block) -> LocalBlock` runs on every rank; a failure on any rank (bad
    configuration, bad input) makes all ranks raise the same error.
    """
    from gcntrain.model.trainer import fit

    t0 = perf_counter()

    def load() -> LocalBlock:
        config.validate()
        nblocks = registry.num_blocks(scheme, world.size, replication)
        return check_classes(loader(nblocks, registry.block_of(scheme, world.rank, replication)))

    start = world.tally.snapshot()
    local = agree(world, load)
    kind = support_kind(config.model, config.aggregator)
    ops = setup_ops(world, scheme, replication, local, kind)
    setup_s = perf_counter() - t0
    after_setup = world.tally.snapshot()
    marks = [after_setup]

    def at_epoch_end(rec):
        marks.append(world.tally.snapshot())
        if callback is not None:
            callback(rec)

    run_ops = maybe_fault(ops, world.rank)
    result = fit(
        run_ops,
        local.features,
        local.labels,
        local.masks,
        local.num_classes,
        config,
        callback=at_epoch_end,
    )
    epochs = [b.since(a) for a, b in zip(marks[:-1], marks[1:])]
    return DistributedRun(
        result,
        ops,
        after_setup.since(start),
        world.tally.since(after_setup),
        setup_s,
        local,
        epochs,
    )
