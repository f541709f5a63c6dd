"""DistGNN vertex-cut scheme (Md et al., SC'21, sections 5.1-5.3, Algorithm 4).

Every stored adjacency entry belongs to exactly one rank (a Libra edge partition: computed at
start-up with ``--partition libra``, read from a ``gcntrain partition -m libra`` file, or
fixed by a ``gcntrain shard -m libra`` store).  A rank holds a *clone* of every vertex its
edges touch; the vertices are renumbered by their *root* rank (the part holding most of their
edges), so the root of any vertex follows from its id (`gcntrain.partition.cut_layout`).
Node-wise matrices have one row per clone, roots first: the first ``counted`` rows are the
vertices this rank counts in losses, accuracies and outputs, the others are replicas.

Aggregation ``S @ X`` multiplies the rank's own entries (the local partial aggregate; the
identity of GCN / SAGE-gcn sits on the root's copy), then synchronises every split vertex
through its one-level tree: the leaves send their partial aggregates to the root (one
Alltoallv), the root adds them (scatter-reduce) and sends the total back (one Alltoallv), and
the leaves overwrite theirs (scatter).  Forward values are then equal on every clone.
Gradients follow the adjoint convention: a gradient row of a replicated vertex is the *sum* of
its clones' rows (the loss gradient lives on the root), so ``S^T @ dY`` first synchronises
dY through the same tree and then multiplies the local entries; the weight gradient, a sum
over all local rows, is then exact.  ``--delay``:

* ``0`` (cd-0): the exchange above in every aggregation: results equal serial training;
* ``R`` (cd-R): each root's vertices are cut into R contiguous buckets; in epoch e only bucket
  ``e mod R`` communicates: the leaves' partial aggregates posted in epoch e (non-blocking
  Alltoallv) are added by the root in epoch e + R, which posts its total, consumed by the
  leaves in epoch e + 2R (Algorithm 4, lines 8-21); a split vertex outside the bucket keeps
  its local partial aggregate.  Forward and backward keep separate queues per layer;
* ``none`` (0c): no remote aggregation in training.

Evaluation passes (validation, test, predictions) always aggregate exactly (cd-0), so the
accuracy of every mode measures the trained weights on the whole graph; their traffic is in
the ``eval.*`` phases.  Degrees are the whole graph's: partial degrees are summed through the
same trees at setup.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path
from time import perf_counter

import numpy as np
import scipy.sparse as sp

from gcntrain.comm.communicator import Pending
from gcntrain.comm.exchange import Groups, Pairs, Uniform
from gcntrain.errors import InputError
from gcntrain.kernels.rows import gather_rows, scatter_add_rows, scatter_rows
from gcntrain.model.normalize import DEGREE_OFFSET, degrees, support_rows
from gcntrain.model.phase import Phase, phase_key
from gcntrain.partition.cut_layout import (
    EdgeCut,
    bucket_of,
    root_of,
)
from gcntrain.schemes.base import (
    COUNT_BYTES,
    VALUE_BYTES,
    RowOps,
    RowScheme,
    as_dtype,
    csr_apply,
    dense_rows_work,
    spmm_work,
)
from gcntrain.schemes.loading import graph_structure
from gcntrain.schemes.protocol import OVERLAP_EPOCHS, LoadRequest, Numbering, SchemeOption

#: `--delay` values: a non-negative integer R, or "none" (0c)
NO_COMM = "none"
#: the delay ``simulate --sweep`` plans besides 0 and none (DistGNN's cd-5)
SWEEP_DELAY = 5


def parse_delay(value) -> int | None:
    """``--delay`` as an int R >= 0, or None for 0c ("none")."""
    text = str(value).strip().lower()
    if text == NO_COMM:
        return None
    try:
        r = int(text)
    except ValueError:
        r = -1
    if r < 0:
        raise InputError(
            "--delay must be 0 (cd-0), a number of epochs R >= 1 (cd-R) or none (0c), "
            f"got {value!r}"
        )
    return r


# -- numbering: the edge assignment --------------------------------------------------------


def cut_numbering(source, parts: int, spec, seed: int) -> Numbering:
    """The root numbering of a vertex cut, with the cut attached (`Numbering.cut`).

    `spec`: None or "libra" (computed here with `seed`, identically on every rank), or a
    vertex-cut partition file of this graph with `parts` parts.
    """
    from gcntrain.data.shards.edges import edge_layout
    from gcntrain.partition.io import read_vertex_cut
    from gcntrain.partition.libra import libra_partition

    if source.kind == "store":
        if not getattr(source, "cut_store", False):
            raise InputError(
                "store is not a vertex-cut store; write one with `gcntrain shard -m libra`",
                source.path,
            )
        return source.numbering(parts, spec, seed)
    if not isinstance(spec, str | None) or spec in ("block", "random"):
        given = "a partition vector" if not isinstance(spec, str) else f"--partition {spec}"
        if spec == "random":
            given += " (or --permute random)"
        raise InputError(
            f"{given} is a vertex partition; this scheme needs an edge partition: "
            "--partition libra (default) or a file from `gcntrain partition -m libra`"
        )
    if spec is None or spec == "libra":
        indptr, indices = graph_structure(source)
        vc = libra_partition(indptr, indices, parts, seed=seed)
        lay = edge_layout(indptr, indices, vc.edge_part, vc.root, parts)
    else:
        if not Path(spec).exists():
            raise InputError(
                f"--partition must be libra or a vertex-cut partition file; no such file: {spec}"
            )
        meta = source.meta()
        edge_part, root, _ = read_vertex_cut(
            spec, meta.content_hash, meta.nnz, parts, "the number of ranks"
        )
        indptr, indices = graph_structure(source)
        try:
            lay = edge_layout(indptr, indices, edge_part, root, parts)
        except InputError as e:
            raise InputError(f"{spec}: {e}") from None
    return Numbering(lay.perm, lay.inv, lay.offsets, cut=lay.cut)


# -- layout --------------------------------------------------------------------------------


@dataclass
class CutLayout:
    """Pure layout of a vertex cut over `size` ranks: rank p roots the new ids
    ``offsets[p]:offsets[p+1]`` and holds the clones `EdgeCut.clones_of(p)`.  Without the cut
    (a shard store at run time, or after setup, which drops it: `keep_offsets`) it still
    answers `request` and `owned`."""

    numbering: Numbering
    size: int
    delay: int | None

    @property
    def offsets(self) -> np.ndarray:
        return self.numbering.offsets

    @property
    def cut(self) -> EdgeCut | None:
        return self.numbering.cut

    def request(self, rank: int) -> LoadRequest:
        p = int(rank)
        rows = (int(self.offsets[p]), int(self.offsets[p + 1]))
        if self.cut is None:
            return LoadRequest(rows, part=p)
        return LoadRequest(rows, ids=self.cut.clones_of(p), entries=self.cut.entries_of(p), part=p)

    def keep_offsets(self) -> None:
        """Forget the whole graph's edge assignment (a rank needs only the offsets once its
        entries are loaded)."""
        self.numbering = Numbering(None, None, self.offsets)

    def owned(self, rank: int) -> int:
        """The first k local rows (its roots) are the rank's canonical rows."""
        return int(self.offsets[rank + 1] - self.offsets[rank])

    def block_groups(self) -> Groups:
        return Groups.world(self.size)


# -- the trees of one rank -----------------------------------------------------------------


class Trees:
    """This rank's part of every split vertex's tree: which local rows it sends to which
    root (`leaf_idx`, grouped by root, ascending ids; `leaf_counts` per rank) and which of its
    root rows every leaf rank sends (`root_idx`, grouped by source; `root_counts`), learnt in
    setup from one Alltoall of counts and one Alltoallv of ids (leaf -> root)."""

    def __init__(self, comm, ids: np.ndarray, offsets: np.ndarray, k: int, delay: int | None):
        me = comm.rank
        lo = int(offsets[me])
        leaves = np.arange(k, ids.size, dtype=np.int64)
        dst = root_of(ids[leaves], offsets)
        got, order, send, recv = comm.route(dst, [ids[leaves]], "setup")
        self.leaf_idx = leaves[order]
        self.leaf_counts = send
        self.root_idx = np.asarray(got[0], dtype=np.int64) - lo
        if self.root_idx.size and (self.root_idx.min() < 0 or self.root_idx.max() >= k):
            raise RuntimeError(f"rank {me} received leaves of vertices it does not root")
        self.root_counts = recv
        self.buckets = []
        if delay:
            lb = bucket_of(ids[self.leaf_idx], offsets, delay)
            rb = bucket_of(self.root_idx + lo, offsets, delay)
            root_rank = np.repeat(np.arange(comm.size), send)
            leaf_rank = np.repeat(np.arange(comm.size), recv)
            for b in range(delay):
                ls, rs = lb == b, rb == b
                self.buckets.append(
                    (
                        self.leaf_idx[ls],
                        np.bincount(root_rank[ls], minlength=comm.size),
                        self.root_idx[rs],
                        np.bincount(leaf_rank[rs], minlength=comm.size),
                    )
                )

    def full(self):
        return self.leaf_idx, self.leaf_counts, self.root_idx, self.root_counts


def _gather(X: np.ndarray, idx: np.ndarray) -> np.ndarray:
    return gather_rows(X, idx, np.empty((idx.size, X.shape[1]), dtype=X.dtype))


def _untimed(name: str, t0: float) -> None:
    return None


def tree_sync(comm, trees: Trees, X: np.ndarray, key: str, clock=_untimed) -> None:
    """Exact tree synchronisation of the rows of X in place: the leaves' rows gathered
    (pre-processing) and sent to their roots (Alltoallv), added there (post-processing), the
    roots' rows gathered and sent back (Alltoallv) and written at the leaves.  ``clock(name,
    t0)`` is told when each part (``t_remote_pre``, ``_comm``, ``_post``) that began at t0
    ends."""
    leaf_idx, leaf_counts, root_idx, root_counts = trees.full()
    t = perf_counter()
    buf = _gather(X, leaf_idx)
    clock("t_remote_pre", t)
    t = perf_counter()
    got = comm.alltoallv(buf, leaf_counts, root_counts, key)
    clock("t_remote_comm", t)
    t = perf_counter()
    scatter_add_rows(got, root_idx, X)
    buf = _gather(X, root_idx)
    clock("t_remote_post", t)
    t = perf_counter()
    got = comm.alltoallv(buf, root_counts, leaf_counts, key)
    clock("t_remote_comm", t)
    t = perf_counter()
    scatter_rows(got, leaf_idx, X)
    clock("t_remote_post", t)


# -- runtime -------------------------------------------------------------------------------


class VertexCutOps(RowOps):
    """One rank of the vertex-cut scheme (see the module docstring)."""

    def __init__(self, world, layout: CutLayout, k: int, S: sp.csr_matrix, trees, orig_ids):
        super().__init__(world, world, orig_ids, int(layout.offsets[-1]))
        self.layout = layout
        self.delay = layout.delay
        self.counted = int(k)
        self.trees = trees
        self._S = S
        T = S.T.tocsr()
        T.sort_indices()
        self._T = T
        self._typed: dict = {}
        self._queues: dict = {}
        self._times = self._zero_times()
        self.epoch_stats: list[dict] = []

    @staticmethod
    def _zero_times() -> dict:
        return {"t_local_agg": 0.0, "t_remote_pre": 0.0, "t_remote_comm": 0.0, "t_remote_post": 0.0}

    def _matrix(self, which: str, dtype) -> sp.csr_matrix:
        key = (which, np.dtype(dtype).str)
        if key not in self._typed:
            self._typed[key] = as_dtype([self._S if which == "f" else self._T], dtype)[0]
        return self._typed[key]

    # -- the tree exchange ---------------------------------------------------------------
    def _timed(self, name: str, t0: float, phase: Phase) -> None:
        if phase.training:
            self._times[name] += perf_counter() - t0

    def _sync(self, X: np.ndarray, phase: Phase) -> None:
        """Exact tree synchronisation in place (`tree_sync`), timed."""
        tree_sync(
            self.world, self.trees, X, phase_key(phase), lambda n, t: self._timed(n, t, phase)
        )

    def _delayed(self, X: np.ndarray, phase: Phase, direction: str) -> None:
        """cd-R in place (Algorithm 4): post bucket e mod R's leaf partials; add those posted
        R epochs ago at the roots and post the roots' totals; write the totals posted R epochs
        ago at the leaves."""
        r, e = self.delay, int(phase.epoch)
        key = phase_key(phase)
        leaf_idx, leaf_counts, root_idx, root_counts = self.trees.buckets[e % r]
        qkey = (phase.layer, phase.term, direction)
        waiting = self._queues.get(qkey, deque())
        old = sorted((it for it in waiting if it[0] == e - r), key=lambda it: it[1])
        q = deque(it for it in waiting if it[0] != e - r)
        self._queues[qkey] = q
        t = perf_counter()
        buf = _gather(X, leaf_idx)
        self._timed("t_remote_pre", t, phase)
        t = perf_counter()
        up = self.world.ialltoallv(buf, leaf_counts, root_counts, key)
        self._timed("t_remote_comm", t, phase)
        for _, stage, pending in old:
            t = perf_counter()
            got = self.world.wait(pending, key)
            self._timed("t_remote_comm", t, phase)
            t = perf_counter()
            if stage == 1:
                scatter_add_rows(got, root_idx, X)
                buf2 = _gather(X, root_idx)
                self._timed("t_remote_post", t, phase)
                t = perf_counter()
                down = self.world.ialltoallv(buf2, root_counts, leaf_counts, key)
                self._timed("t_remote_comm", t, phase)
                q.append((e, 2, down))
            else:
                scatter_rows(got, leaf_idx, X)
                self._timed("t_remote_post", t, phase)
        q.append((e, 1, up))

    def _drain(self, phase: Phase) -> None:
        """Complete every exchange still in flight (before the final evaluation)."""
        key = phase_key(phase)
        for q in self._queues.values():
            while q:
                self.world.wait(q.popleft()[2], key)

    def _remote(self, X: np.ndarray, phase: Phase, direction: str) -> None:
        if not phase.training:
            if phase.epoch < 0:
                self._drain(phase)
            self._sync(X, phase)
        elif self.delay == 0:
            self._sync(X, phase)
        elif self.delay is not None:
            self._delayed(X, phase, direction)

    # -- protocol ------------------------------------------------------------------------
    def aggregate(self, X, *, phase):
        X = np.ascontiguousarray(X)
        t = perf_counter()
        out = csr_apply(self._matrix("f", X.dtype), X)
        self._timed("t_local_agg", t, phase)
        self._remote(out, phase, "fwd")
        return out

    def aggregate_t(self, X, *, phase):
        Y = np.array(X, order="C", copy=True)
        self._remote(Y, phase, "bwd")
        t = perf_counter()
        out = csr_apply(self._matrix("t", Y.dtype), Y)
        self._timed("t_local_agg", t, phase)
        return out

    def begin_epoch(self, *, phase):
        self._times = self._zero_times()

    def state_dict(self, *, phase):
        """cd-R's delayed aggregates in flight: each exchange is completed here (its
        received rows are what a later epoch consumes) and kept by queue, epoch and stage."""
        out = {}
        for (layer, term, direction), q in self._queues.items():
            for i, (e, stage, pending) in enumerate(q):
                got = self.world.wait(pending, phase_key(phase))
                out[f"{layer}|{term}|{direction}|{i}|{e}|{stage}"] = got
        return out

    def load_state(self, state, *, phase):
        self._queues = {}
        for name in sorted(state, key=lambda k: int(k.split("|")[3])):
            layer, term, direction, _, e, stage = name.split("|")
            qkey = (None if layer == "None" else int(layer), term, direction)
            got = np.ascontiguousarray(state[name])
            item = (int(e), int(stage), Pending(None, got, got))
            self._queues.setdefault(qkey, deque()).append(item)

    def end_epoch(self, *, phase):
        self.epoch_stats.append(dict(self._times))


def local_support(world, layout: CutLayout, local, kind: str):
    """(clone ids, root count k, local support S (clones x clones), the trees, row order
    applied): the rank's entries with the whole graph's degrees (partial degrees summed
    through the trees, phase "setup"), the identity on the root's copy only."""
    p = world.rank
    lo, hi = int(layout.offsets[p]), int(layout.offsets[p + 1])
    ids = np.asarray(local.new_ids, dtype=np.int64)
    own = (ids >= lo) & (ids < hi)
    order = np.concatenate(
        [np.flatnonzero(own)[np.argsort(ids[own])], np.flatnonzero(~own)[np.argsort(ids[~own])]]
    )
    ids = ids[order]
    k = int(own.sum())
    if k != hi - lo:
        raise RuntimeError(f"rank {p} holds {k} of the {hi - lo} vertices it roots")
    m = ids.size
    rank_of = np.empty(m, dtype=np.int64)
    rank_of[order] = np.arange(m, dtype=np.int64)
    indptr, indices = np.asarray(local.indptr, np.int64), np.asarray(local.indices, np.int64)
    lrow = rank_of[np.repeat(np.arange(m, dtype=np.int64), np.diff(indptr))]
    sorted_ids = np.sort(ids)
    pos = np.searchsorted(sorted_ids, indices)
    pos[pos >= m] = 0
    if indices.size and not np.array_equal(sorted_ids[pos], indices):
        raise RuntimeError(f"rank {p} holds an edge to a vertex it has no clone of")
    by_sorted = np.argsort(ids, kind="stable")
    lcol = by_sorted[pos]
    vals = None if local.data is None else np.asarray(local.data, np.float64)
    M = sp.csr_matrix((np.ones(lcol.size) if vals is None else vals, (lrow, lcol)), shape=(m, m))
    M.sort_indices()
    # duplicate entries are summed into one (weight 2 on an unweighted graph, as serial counts)
    ip, ix, dv = M.indptr.astype(np.int64), M.indices.astype(np.int64), M.data
    local_rows = np.arange(m, dtype=np.int64)
    deg = degrees(ip, ix, dv, kind, rows=local_rows, partial=True).reshape(m, 1)
    trees = Trees(world, ids, layout.offsets, k, layout.delay)
    tree_sync(world, trees, deg, "setup")
    deg = deg[:, 0] + DEGREE_OFFSET[kind]
    identity = np.zeros(m, dtype=bool)
    identity[:k] = True
    sp_ip, sp_ix, sp_dv = support_rows(ip, ix, dv, local_rows, deg, kind, identity=identity)
    S = sp.csr_matrix((sp_dv, sp_ix, sp_ip), shape=(m, m))
    return ids, k, S, trees, order


def _reorder(local, order: np.ndarray, ids: np.ndarray) -> None:
    """Put the node data of `local` in clone order (roots first)."""
    local.orig_ids = np.ascontiguousarray(local.orig_ids[order])
    X = local.features
    local.features = X[order] if sp.issparse(X) else np.ascontiguousarray(X[order])
    local.labels = np.ascontiguousarray(local.labels[order])
    local.masks = {key: np.ascontiguousarray(v[order]) for key, v in local.masks.items()}
    local.ids = ids


# -- the scheme ----------------------------------------------------------------------------


class VertexCut(RowScheme):
    name = "vertexcut"
    summary = (
        "DistGNN vertex cut (Libra): partial aggregates through per-vertex trees, cd-0/cd-R/0c"
    )
    default_partition = "libra"
    sweep_partitions = ("libra",)
    options = (
        SchemeOption(
            "delay",
            ("--delay",),
            "0",
            "Vertex cut: remote partial aggregates: 0 = every aggregation (cd-0, exact), "
            "R = one of R buckets per epoch, consumed R epochs later (cd-R), none = never (0c).",
            metavar="0|R|none",
        ),
    )

    def configure(self, size: int, values: dict) -> dict:
        delay = parse_delay(values.get("delay", "0"))
        return {"delay": NO_COMM if delay is None else delay}

    def sweep_options(self, size: int) -> list[dict]:
        """DistGNN's three modes: cd-0 (exact), cd-5 (its delayed default) and 0c."""
        return [{"delay": "0"}, {"delay": str(SWEEP_DELAY)}, {"delay": NO_COMM}]

    def is_exact(self, config: dict) -> bool:
        return config["delay"] == 0

    def check_training(self, config: dict, train) -> None:
        d = config["delay"]
        if d != NO_COMM and d >= 1 and d >= train.epochs:
            raise InputError(
                f"--delay {d} needs more than {d} epochs (delayed aggregates are consumed "
                f"{d} epochs after they are sent); --epochs is {train.epochs}"
            )

    @staticmethod
    def _delay(config: dict) -> int | None:
        d = config["delay"]
        return None if d == NO_COMM else int(d)

    def numbering(self, source, parts, spec, seed, col_parts=None, order="none"):
        # no --reorder: the vertex cut orders its rows by root part (its own numbering)
        return cut_numbering(source, parts, spec, seed)

    def layout(self, numbering, meta, size, config, model=None) -> CutLayout:
        return CutLayout(numbering, int(size), self._delay(config))

    def setup(self, world, layout: CutLayout, local, kind: str):
        layout.keep_offsets()
        ids, k, S, trees, order = local_support(world, layout, local, kind)
        _reorder(local, order, ids)
        return VertexCutOps(world, layout, k, S, trees, local.orig_ids)

    # -- exchange description ------------------------------------------------------------
    def overlaps(self, ctx, call) -> str:
        """Delayed (cd-R) training exchanges complete while later epochs compute; evaluation
        passes exchange exactly and blocking (`_sync`), overlapping nothing."""
        return OVERLAP_EPOCHS if ctx.layout.delay and call.phase.training else ""

    def price_key(self, ctx, call) -> tuple:
        """Aggregations are priced by pass (evaluation: exact) and, for cd-R, by the epoch's
        bucket and whether the roots' totals are already due."""
        if call.method not in ("aggregate", "aggregate_t"):
            return call.key
        ph, d = call.phase, ctx.layout.delay
        if not ph.training:
            return (*call.key, "exact")
        if not d:
            return (*call.key, "train")
        e = int(ph.epoch)
        return (*call.key, "delayed", e % d, e >= d)

    def _pairs(self, ctx, bucket: int | None = None):
        cut: EdgeCut = ctx.layout.cut
        d = ctx.layout.delay

        def make():
            return cut.leaf_pairs(d if d else None)

        src, dst, cnt = ctx.cached("vc_pairs", make)
        if bucket is None:
            return src, dst, (cnt.sum(axis=0) if cnt.ndim == 2 else cnt)
        return src, dst, cnt[bucket]

    def _agg_steps(self, ctx, call) -> list:
        lay: CutLayout = ctx.layout
        ph = call.phase
        row = call.shape(0)[1] * call.itemsize(0)
        P = ctx.P
        if not ph.training or lay.delay == 0:
            src, dst, cnt = self._pairs(ctx)
            return [Pairs(P, src, dst, cnt * row), Pairs(P, dst, src, cnt * row)]
        if lay.delay is None:
            return []
        e, r = int(ph.epoch), lay.delay
        src, dst, cnt = self._pairs(ctx, e % r)
        out = [Pairs(P, src, dst, cnt * row)]
        if e >= r:
            out.append(Pairs(P, dst, src, cnt * row))
        return out

    steps_aggregate = _agg_steps
    steps_aggregate_t = _agg_steps

    def setup_steps(self, ctx) -> list:
        """The leaves' ids to their roots (Alltoall of counts, Alltoallv of ids), then the
        partial degrees through the trees (two Alltoallv of one float64 per leaf)."""
        src, dst, cnt = self._pairs(ctx)
        P = ctx.P
        return [
            ("setup", Uniform(Groups.world(P), COUNT_BYTES)),
            ("setup", Pairs(P, src, dst, cnt * COUNT_BYTES)),
            ("setup", Pairs(P, src, dst, cnt * VALUE_BYTES)),
            ("setup", Pairs(P, dst, src, cnt * VALUE_BYTES)),
        ]

    # -- compute and memory --------------------------------------------------------------
    def replication_factor(self, ctx) -> float:
        return ctx.layout.cut.replication_factor()

    def _local_nnz(self, ctx) -> np.ndarray:
        """(P,) entries of every rank's local support (as `local_support` builds it): every
        off-diagonal entry of S on the part of its edge; a diagonal entry on the root's part,
        except GCN's over a stored self-loop, which sits on the loop's part (plus the
        identity's own entry on the root's part when that differs)."""

        def make():
            cut: EdgeCut = ctx.layout.cut
            S = ctx.support
            n = cut.n
            row = np.repeat(np.arange(n, dtype=np.int64), np.diff(S.indptr))
            col = S.indices.astype(np.int64)
            ck = cut.row * n + cut.col
            order = np.argsort(ck, kind="stable")
            ck, cp = ck[order], cut.part[order]
            keys = row * n + col
            pos = np.minimum(np.searchsorted(ck, keys), max(ck.size - 1, 0))
            found = (ck[pos] == keys) if ck.size else np.zeros(keys.size, dtype=bool)
            part = np.where(found, cp[pos] if ck.size else 0, -1)
            diag = row == col
            root = root_of(row, cut.offsets)
            loop_part = np.where(found & diag, part, -1)
            part = np.where(diag & ((ctx.kind != "gcn") | ~found), root, part)
            out = np.bincount(part, minlength=ctx.P).astype(np.int64)
            if ctx.kind == "gcn":  # the identity beside a self-loop stored off the root
                extra = diag & (loop_part >= 0) & (loop_part != root)
                out += np.bincount(root[extra], minlength=ctx.P).astype(np.int64)
            return out

        return ctx.cached("vc_local_nnz", make)

    def work_aggregate(self, ctx, call) -> np.ndarray:
        return spmm_work(self._local_nnz(ctx), call.shape(0)[1])

    work_aggregate_t = work_aggregate

    def work_matmul(self, ctx, call) -> np.ndarray:
        cut: EdgeCut = ctx.layout.cut

        def clone_feature_nnz():  # a CSR input: its clones' stored entries
            parts, verts = cut.replicas()
            weights = ctx.feature_nnz[verts].astype(np.float64)
            return np.bincount(parts, weights=weights, minlength=ctx.P).astype(np.int64)

        nnz = None
        if call.sparse(0) and ctx.feature_nnz is not None:
            nnz = ctx.cached("vc_clone_feature_nnz", clone_feature_nnz)
        return dense_rows_work(cut.clone_counts(), call, nnz)

    work_matmul_grads = work_matmul

    def footprint(self, ctx) -> dict:
        cut: EdgeCut = ctx.layout.cut
        src, dst, cnt = self._pairs(ctx)
        buf = np.bincount(src, weights=cnt, minlength=ctx.P) + np.bincount(
            dst, weights=cnt, minlength=ctx.P
        )
        if ctx.layout.delay:  # cd-R: every bucket's up and down exchange may be in flight
            buf = 2 * buf
        return {
            "rows": cut.clone_counts(),
            "adjacency": 2 * self._local_nnz(ctx),
            "buffer_rows": buf.astype(np.int64),
            "col_fraction": np.ones(ctx.P),
        }
