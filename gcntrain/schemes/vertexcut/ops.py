"""The runtime of one rank of the vertex cut (`VertexCutOps`): local aggregation, then the
split vertices' exchange, exact (cd-0), delayed by buckets (cd-R) or skipped (0c).
"""

from __future__ import annotations

from collections import deque
from time import perf_counter

import numpy as np
import scipy.sparse as sp

from gcntrain.comm.communicator import Pending
from gcntrain.kernels.rows import scatter_add_rows, scatter_rows
from gcntrain.model.phase import Phase, phase_key
from gcntrain.schemes.base import RowOps, as_dtype, csr_apply
from gcntrain.schemes.vertexcut.layout import CutLayout
from gcntrain.schemes.vertexcut.trees import _gather, tree_sync

# -- runtime -------------------------------------------------------------------------------


class VertexCutOps(RowOps):
    """One rank of the vertex-cut scheme (see `gcntrain.schemes.vertexcut`)."""

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
        self._drained: dict = {}
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

    # the rows of the delayed exchange (the device Ops override these four)
    def _bucket(self, b: int):
        """Bucket `b`'s (leaf rows, leaf counts, root rows, root counts) (`Trees.buckets`)."""
        return self.trees.buckets[b]

    def _gather_rows(self, X, idx):
        """The rows `idx` of X (a new array)."""
        return _gather(X, idx)

    def _add_rows(self, got, idx, X) -> None:
        """``X[idx[k]] += got[k]`` in order of k, in place."""
        scatter_add_rows(got, idx, X)

    def _put_rows(self, got, idx, X) -> None:
        """``X[idx] = got`` in place."""
        scatter_rows(got, idx, X)

    def _delayed(self, X: np.ndarray, phase: Phase, direction: str) -> None:
        """cd-R in place (Algorithm 4): post bucket e mod R's leaf partials; add those posted
        R epochs ago at the roots and post the roots' totals; write the totals posted R epochs
        ago at the leaves."""
        r, e = self.delay, int(phase.epoch)
        key = phase_key(phase)
        leaf_idx, leaf_counts, root_idx, root_counts = self._bucket(e % r)
        qkey = (phase.layer, phase.term, direction)
        waiting = self._queues.get(qkey, deque())
        old = sorted((it for it in waiting if it[0] == e - r), key=lambda it: it[1])
        q = deque(it for it in waiting if it[0] != e - r)
        self._queues[qkey] = q
        t = perf_counter()
        buf = self._gather_rows(X, leaf_idx)
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
                self._add_rows(got, root_idx, X)
                buf2 = self._gather_rows(X, root_idx)
                self._timed("t_remote_post", t, phase)
                t = perf_counter()
                down = self.world.ialltoallv(buf2, root_counts, leaf_counts, key)
                self._timed("t_remote_comm", t, phase)
                q.append((e, 2, down))
            else:
                self._put_rows(got, leaf_idx, X)
                self._timed("t_remote_post", t, phase)
        q.append((e, 1, up))

    def _drain(self, phase: Phase) -> None:
        """Complete every exchange still in flight (before the final evaluation); what they
        received is kept aside (`_drained`) for the drift pass (`_training_view`)."""
        key = phase_key(phase)
        for qkey, q in self._queues.items():
            while q:
                e, stage, pending = q.popleft()
                got = self.world.wait(pending, key)
                self._drained.setdefault(qkey, []).append((e, stage, Pending(None, got, got)))

    def _training_view(self):
        """Context for the drift pass (`gcntrain.job.drift`): the exchanges the final
        evaluation completed are put back in flight, so that a pass of the next epoch with
        ``training=True`` aggregates as that epoch would; afterwards every exchange is
        completed and dropped (its traffic is after the run's counters)."""
        from contextlib import contextmanager

        @contextmanager
        def view():
            for qkey, items in self._drained.items():
                self._queues.setdefault(qkey, deque()).extend(items)
            self._drained = {}
            try:
                yield self
            finally:
                self._drain(Phase("control", training=False))
                self._drained = {}

        return view()

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
