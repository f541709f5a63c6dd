"""The `VertexCut` scheme: its ``--delay`` option (`parse_delay`), set-up, and what the
simulator prices (exchange steps, work, memory).
"""

from __future__ import annotations

import numpy as np

from gcntrain.comm.exchange import Groups, Pairs, Uniform
from gcntrain.errors import InputError
from gcntrain.partition.cut_layout import EdgeCut, root_of
from gcntrain.schemes.base import (
    COUNT_BYTES,
    VALUE_BYTES,
    RowScheme,
    dense_rows_work,
    spmm_work,
)
from gcntrain.schemes.protocol import OVERLAP_EPOCHS, SchemeOption
from gcntrain.schemes.vertexcut.device import VertexCutDeviceOps
from gcntrain.schemes.vertexcut.layout import CutLayout, cut_numbering
from gcntrain.schemes.vertexcut.ops import VertexCutOps
from gcntrain.schemes.vertexcut.trees import _reorder, local_support

#: `--delay` values: a non-negative integer R, or "none" (0c)
NO_COMM = "none"
#: the delay ``simulate --sweep`` plans besides 0 and none (DistGNN's cd-5)
SWEEP_DELAY = 5


def parse_delay(value, size: int = 0, scheme=None) -> int | None:
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


def show_delay(delay: int | None):
    """The printed ``--delay``: R, or "none" for 0c."""
    return NO_COMM if delay is None else delay


# -- the scheme ----------------------------------------------------------------------------


class VertexCut(RowScheme):
    name = "vertexcut"
    plan_cost = 4.5  # measured: 133 ms (its bound forms the replica tables)
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
            parse=parse_delay,
            show=show_delay,
        ),
    )

    def sweep_options(self, size: int) -> list[dict]:
        """DistGNN's three modes: cd-0 (exact), cd-5 (its delayed default) and 0c."""
        return [{"delay": "0"}, {"delay": str(SWEEP_DELAY)}, {"delay": NO_COMM}]

    def is_exact(self, config) -> bool:
        return config.delay == 0

    def training_view(self, ops: VertexCutOps):
        """The drift pass's context (`gcntrain.job.drift`): passes with ``training=True``
        aggregate as training does (0c: local partial aggregates; cd-R: the next epoch's
        bucket with the delayed aggregates in flight)."""
        return ops._training_view()

    def check_training(self, config, train):
        d = config.delay
        if d is not None and d >= 1 and d >= train.epochs:
            raise InputError(
                f"--delay {d} needs more than {d} epochs (delayed aggregates are consumed "
                f"{d} epochs after they are sent); --epochs is {train.epochs}"
            )
        return config

    def numbering(self, source, parts, spec, seed, col_parts=None, order="none"):
        # no --reorder: the vertex cut orders its rows by root part (its own numbering)
        return cut_numbering(source, parts, spec, seed)

    def layout(self, numbering, meta, size, config, model=None) -> CutLayout:
        return CutLayout(numbering, int(size), config.delay)

    def setup(self, world, layout: CutLayout, local, kind: str, backend=None):
        """The local support and the trees, then `VertexCutOps` on the host (`backend` None
        or the host's) or `VertexCutDeviceOps` (every ``--delay``) on the device of
        `backend`."""
        layout.keep_offsets()
        ids, k, S, trees, order = local_support(world, layout, local, kind)
        _reorder(local, order, ids)
        if backend is None or getattr(backend, "name", "cpu") == "cpu":
            return VertexCutOps(world, layout, k, S, trees, local.orig_ids)
        return VertexCutDeviceOps(world, layout, k, S, trees, local.orig_ids, backend)

    def device_unsupported(self, config) -> list[str]:
        """What of `config` does not run on a device (`gcntrain.job.device_run`): nothing,
        every mode (cd-0, cd-R, 0c) does (`VertexCutDeviceOps`)."""
        return []

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

    def output_rows(self, ctx) -> np.ndarray:
        """Each part's clones (roots and replicas)."""
        return ctx.layout.cut.clone_counts()

    def footprint(self, ctx) -> dict:
        src, dst, cnt = self._pairs(ctx)
        buf = np.bincount(src, weights=cnt, minlength=ctx.P) + np.bincount(
            dst, weights=cnt, minlength=ctx.P
        )
        if ctx.layout.delay:  # cd-R: every bucket's up and down exchange may be in flight
            buf = 2 * buf
        return {
            "rows": self.output_rows(ctx),
            "adjacency": 2 * self._local_nnz(ctx),
            "buffer_rows": buf.astype(np.int64),
            "col_fraction": np.ones(ctx.P),
        }
