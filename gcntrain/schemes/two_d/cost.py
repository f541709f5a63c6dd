"""What the simulator prices for the 2D / split-3D scheme: the exchange steps of setup and
of every call, the compute work, the memory passes, the held memory and the footprint (one
mixin, `TwoDCost`, that the `TwoD` scheme inherits)."""

from __future__ import annotations

import numpy as np

from gcntrain.comm.exchange import Allgatherv, Allreduce, Groups, Pairs, ReduceScatterv, Uniform
from gcntrain.partition.unique import unique_ints
from gcntrain.schemes.base import spmm_work
from gcntrain.schemes.entries import entry_chunks, merge_counts
from gcntrain.schemes.labeltables import label_counts
from gcntrain.schemes.layout import owner_of
from gcntrain.schemes.two_d.layout import (
    ENTRY_ID_BYTES,
    Layout2D,
    chunk_offsets,
    fiber_step,
    stage_counts,
    summa_stages,
    transpose_pairs,
    use_gather,
)


class TwoDCost:
    """The 2D scheme's pricing (`steps_*`, `work_*`, `setup_steps`, `stream_bytes`,
    `held_estimate`, `footprint`): a mixin of `gcntrain.schemes.two_d.TwoD`."""

    # -- exchange description ----------------------------------------------------------------
    def stage_nnz(self, ctx, which: str) -> np.ndarray:
        """(Pr, S) entries of S_i (or S^T_i) in each stage."""
        lay: Layout2D = ctx.layout
        key = "stage_nnz_f" if which == "f" or ctx.symmetric else "stage_nnz_t"

        def make():
            M = ctx.support if which == "f" else ctx.transpose()
            rows, stages = self._stage_labels(ctx)
            return label_counts(M, rows, stages, (lay.pr, lay.stages[0].shape[0]))

        return ctx.cached(key, make)

    def _stage_labels(self, ctx) -> tuple[np.ndarray, np.ndarray]:
        """(n,) the row part of every row and (n,) the SUMMA stage of every inner index:
        the labels the stage tables count entries by (kept in the plan's cache: the layout
        holds what a rank holds)."""
        lay: Layout2D = ctx.layout

        def make():
            ids = np.arange(int(lay.offsets[-1]), dtype=np.int64)
            stage = np.searchsorted(lay.stages[0], ids, side="right") - 1
            return owner_of(ids, lay.offsets), stage

        return ctx.cached("stage_labels", make)

    def _summa_steps(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        which = "f" if call.method == "aggregate" else "t"
        f, isz = call.shape(0)[1], call.itemsize(0)
        widths = np.diff(chunk_offsets(f, lay.pc))
        A, X = summa_stages(lay, self.stage_nnz(ctx, which), ENTRY_ID_BYTES + isz, widths, isz)
        return [A, X, *fiber_step(lay, widths * isz)]

    steps_aggregate = _summa_steps
    steps_aggregate_t = _summa_steps

    def _row_chunks(self, lay: Layout2D, width: int, itemsize: int) -> np.ndarray:
        """(P,) bytes of each rank's chunk of its rows of a width-`width` matrix."""
        w = np.diff(chunk_offsets(width, lay.pc))
        return lay.node_sizes[lay.ranks_I()] * w[lay.ranks_j()] * itemsize

    def steps_matmul(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        f_in, f_out = call.shape(1)
        isz = call.itemsize(1)
        if use_gather(call.sparse(0), f_in, f_out):
            return [Allgatherv(lay.rows, self._row_chunks(lay, f_in, isz))]
        return [ReduceScatterv(lay.rows, self._row_chunks(lay, f_out, isz))]

    def steps_matmul_grads(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        f_out = call.shape(2)[1]
        return [Allgatherv(lay.rows, self._row_chunks(lay, f_out, call.itemsize(2)))]

    def steps_reduce_weight_grad(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        f_in, f_out = call.args[1][2]
        isz = call.itemsize(0)
        w = np.diff(chunk_offsets(f_in, lay.pc))
        return [
            Allreduce(lay.cols, w * f_out, isz),
            Allgatherv(lay.rows, w[lay.ranks_j()] * f_out * isz),
        ]

    def steps_bias_grad(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        w = np.diff(chunk_offsets(call.shape(0)[1], lay.pc))
        return [Allreduce(lay.cols, w, call.itemsize(0))]

    def steps_column_sum(self, ctx, call) -> list:
        """BatchNorm's column sums: each process column Allreduces its chunk's (k, f/Pc)
        block (the ranks holding those columns, one copy of every row)."""
        lay: Layout2D = ctx.layout
        w = np.diff(chunk_offsets(call.kw("width"), lay.pc))
        return [Allreduce(lay.cols, call.shape(0)[0] * w, call.itemsize(0))]

    def steps_node_sum(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        m = int(np.prod(call.shape(0)))
        return [Allreduce(lay.cols, np.full(lay.pc, m), call.itemsize(0))]

    def steps_element_sum(self, ctx, call) -> list:
        return [Allreduce(Groups.world(ctx.P), np.array([int(np.prod(call.shape(0)))]), 8)]

    def steps_row_normalize(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        return [Allreduce(lay.rows, lay.node_sizes, 8)]

    def steps_predict(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        C = call.kw("width")
        return [Allgatherv(lay.rows, self._row_chunks(lay, C, call.itemsize(0)))]

    def steps_xent(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        k = call.args[2][1]
        return self.steps_predict(ctx, call) + [Allreduce(lay.cols, np.full(lay.pc, 2 * k), 8)]

    def steps_gather_param(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        shape = call.args[1][2]
        if len(shape) != 1:
            return []
        w = np.diff(chunk_offsets(shape[0], lay.pc))
        return [Allgatherv(lay.rows, w[lay.ranks_j()] * call.itemsize(0))]

    def steps_param_sum_sq(self, ctx, call) -> list:
        lay: Layout2D = ctx.layout
        if len(call.args[1][2]) != 1:
            return []
        return [Allreduce(lay.rows, np.ones(lay.vr, dtype=np.int64), 8)]

    def setup_steps(self, ctx) -> list:
        """Degrees (row Allreduce, column Allgatherv), the transposition (Alltoall of counts,
        Alltoallv of (row, col) pairs and of values), the symmetry Allreduce, and each
        product's per-stage entry counts (row Allgatherv)."""
        lay: Layout2D = ctx.layout
        P = lay.size
        keys, cnts = [], []
        for rows, cols in entry_chunks(ctx.support):
            src, dst = transpose_pairs(lay, rows, cols)
            k, c = unique_ints(src * P + dst, return_counts=True, overwrite=True)
            keys.append(k)
            cnts.append(c)
        key, cnt = merge_counts(keys, cnts)
        ps, pd = key // P, key % P
        counts = stage_counts(lay)[lay.ranks_I() % lay.pz, lay.ranks_j()] * 8
        out = [
            ("setup", Allreduce(lay.rows, lay.row_sizes[np.arange(lay.vr) // lay.pz], 8)),
            ("setup", Allgatherv(lay.layer_cols, lay.row_sizes[lay.ranks_i()] * 8)),
            ("setup", Uniform(Groups.world(P), 8)),
            ("setup", Pairs(P, ps, pd, cnt * 16)),
            ("setup", Pairs(P, ps, pd, cnt * 8)),
            ("setup", Allreduce(Groups.world(P), np.array([1]), 8)),
            ("setup", Allgatherv(lay.rows, counts)),
        ]
        if not ctx.symmetric:
            out.append(("setup", Allgatherv(lay.rows, counts)))
        return out

    # -- compute and memory ------------------------------------------------------------------
    def work_aggregate(self, ctx, call) -> np.ndarray:
        lay: Layout2D = ctx.layout
        which = "f" if call.method == "aggregate" else "t"
        layer = lay.stages[4]
        tab = self.stage_nnz(ctx, which)  # (Pr, S)
        per_layer = np.stack([tab[:, layer == k].sum(axis=1) for k in range(lay.pz)], axis=1)
        mine = per_layer.reshape(-1)[lay.ranks_I()]  # entries of row part i in layer k
        w = np.diff(chunk_offsets(call.shape(0)[1], lay.pc))
        out = spmm_work(mine, 1)
        out[:, 1] = 2 * mine * w[lay.ranks_j()]
        return out

    work_aggregate_t = work_aggregate

    def stream_bytes(self, ctx, call) -> np.ndarray:
        """A SUMMA product's passes over memory besides its SpMMs: each stage with entries
        adds its partial product into the rank's output block in place, reading back the rows
        it accumulates into (rows x width chunk, an upper bound: the kernel skips rows without
        entries; the write is inside the calibrated SpMM rate), and a piece received from
        another process column is unpacked (its row ids read, its row pointers written;
        columns and values are used in place)."""
        lay: Layout2D = ctx.layout
        if call.method in ("matmul", "matmul_grads"):
            return self._whole_row_bytes(ctx, call)
        if call.method not in ("aggregate", "aggregate_t"):
            return super().stream_bytes(ctx, call)
        nnz = self._rank_stage_nnz(ctx, call)  # (P, S)
        j = lay.ranks_j()
        remote = lay.stages[3][None, :] != j[:, None]  # (P, S): pieces from another column
        received = (nnz * remote).sum(axis=1)
        pieces = ((nnz > 0) & remote).sum(axis=1)
        isz = call.itemsize(0)
        ma = lay.row_sizes[lay.ranks_I() // lay.pz].astype(np.int64)
        w = np.diff(chunk_offsets(call.shape(0)[1], lay.pc))[j]
        acc = self.spmm_rows(ctx, call) * w * isz
        unpack = received * (ENTRY_ID_BYTES // 2) + pieces * (ma + 1) * 8
        return (acc + unpack).astype(np.int64)

    def spmm_rows(self, ctx, call) -> np.ndarray:
        """A SUMMA product runs one kernel per stage with entries, each sweeping all the
        rank's rows of its block (an upper bound, as for the accumulation: the kernel skips
        rows without entries after reading their pointers)."""
        if call.method not in ("aggregate", "aggregate_t"):
            return super().spmm_rows(ctx, call)
        lay: Layout2D = ctx.layout
        active = (self._rank_stage_nnz(ctx, call) > 0).sum(axis=1)
        return (active * lay.row_sizes[lay.ranks_I() // lay.pz]).astype(np.int64)

    def _rank_stage_nnz(self, ctx, call) -> np.ndarray:
        """(P, S) entries of each SUMMA stage a rank's product multiplies (`stage_nnz` of
        its row part, zero outside its layer slice)."""
        lay: Layout2D = ctx.layout
        tab = self.stage_nnz(ctx, "f" if call.method == "aggregate" else "t")  # (Pr, S)
        I = lay.ranks_I()
        i, k = I // lay.pz, I % lay.pz
        return tab[i] * (lay.stages[4][None, :] == k[:, None])

    def _whole_row_bytes(self, ctx, call) -> np.ndarray:
        """Products with W on split columns copy whole rows once (read and write): the
        gathered chunks stacked side by side (``H`` forward, ``dZ`` backward), or the
        partial product's chunks laid out for the Reduce-scatter."""
        lay: Layout2D = ctx.layout
        if lay.pc == 1:
            return np.zeros(lay.size, dtype=np.int64)
        f_in, f_out = call.shape(1)
        rows = lay.node_sizes[lay.ranks_I()].astype(np.int64)
        if call.method == "matmul":
            gather = use_gather(call.sparse(0), f_in, f_out)
            width = f_in if gather else f_out
        else:
            width = f_out
        return 2 * rows * width * call.itemsize(0)

    def work_matmul(self, ctx, call) -> np.ndarray:
        """``H @ W``: whole rows times W's chunk (gather) or the chunk times W's rows
        (Reduce-scatter); backward: the slab ``H_ij^T dZ_i`` and ``dZ_i W[chunk]^T``.  A CSR
        H's products are sparse: SpMM work over its stored nonzeros (the row part's, or
        their share in the column chunk)."""
        lay: Layout2D = ctx.layout
        f_in, f_out = call.shape(1)
        i, j = lay.ranks_I(), lay.ranks_j()
        rows = lay.node_sizes[i]
        fin_j = np.diff(chunk_offsets(f_in, lay.pc))[j]
        fout_j = np.diff(chunk_offsets(f_out, lay.pc))[j]
        out = np.zeros((lay.size, 4), dtype=np.int64)
        sparse = call.sparse(0) and ctx.feature_nnz is not None
        if sparse:
            csum = np.concatenate(([0], np.cumsum(ctx.feature_nnz)))
            nnz_i = (csum[lay.node_offsets[1:]] - csum[lay.node_offsets[:-1]])[i]
            nnz_ij = nnz_i * fin_j // max(f_in, 1)
        if call.method == "matmul":
            gather = use_gather(call.sparse(0), f_in, f_out)
            if sparse:
                nnz, width = (nnz_i, fout_j) if gather else (nnz_ij, f_out)
                out[:, 0], out[:, 1] = nnz, 2 * nnz * width
            else:
                out[:, 2] = 2 * rows * f_in * fout_j if gather else 2 * rows * fin_j * f_out
                out[:, 3] = rows
        else:
            grad = call.kw("need_input_grad")
            dense = 2 * rows * f_out * fin_j if grad else 0
            if sparse:
                out[:, 0], out[:, 1] = nnz_ij, 2 * nnz_ij * f_out
                out[:, 2] = dense
                out[:, 3] = rows if grad else 0
            else:
                out[:, 2] = 2 * rows * fin_j * f_out + dense
                out[:, 3] = rows * (2 if grad else 1)
        return out

    work_matmul_grads = work_matmul

    def held_estimate(self, ctx, itemsize: int) -> np.ndarray:
        """Per rank: the owned stage pieces of S (and S^T) as float64 CSR (int32 indices),
        their copies in the run's dtype and packed for the wire (ids + value), the stage
        entry counts, the node data of its slice (features chunk, int64 labels and ids, bool
        masks) and the layout's arrays."""
        lay: Layout2D = ctx.layout
        from gcntrain.schemes.held import layout_bytes

        I, i, j = lay.ranks_I(), lay.ranks_i(), lay.ranks_j()
        k = I % lay.pz
        _, _, _, c_own, layer = lay.stages
        owned = (c_own[None, :] == j[:, None]) & (layer[None, :] == k[:, None])  # (P, S)
        ma = lay.row_sizes[i]
        total = np.zeros(lay.size, dtype=np.int64)
        for which in ("f",) if ctx.symmetric else ("f", "t"):
            nnz = self.stage_nnz(ctx, which)[i]  # (P, S)
            mine = np.where(owned, nnz, 0).sum(axis=1)
            stages = owned.sum(axis=1)
            total += mine * (8 + 4) + stages * (ma + 1) * 4  # pieces (float64, int32)
            total += mine * itemsize + mine * (ENTRY_ID_BYTES + itemsize)  # typed + wire
            total += (layer[None, :] == k[:, None]).sum(axis=1) * 8  # entry counts
        m = lay.node_sizes[I]
        fcols = np.diff(chunk_offsets(lay.num_features, lay.pc))[j]
        total += m * fcols * ctx.feature_itemsize + m * (8 + 8 + ctx.masks)
        return total + layout_bytes(ctx)

    def _block_nnz(self, ctx) -> np.ndarray:
        """(P,) entries of S in each rank's block (`block_of`), from the stage table: a
        stage lies inside one layer slice and one column part."""
        lay: Layout2D = ctx.layout
        _, _, _, c_own, layer = lay.stages
        tab = self.stage_nnz(ctx, "f")  # (Pr, S)
        per = np.zeros((lay.pr, lay.pz * lay.pc), dtype=np.int64)
        np.add.at(per.T, layer * lay.pc + c_own, tab.T)
        return per.reshape(-1)  # rank = (i * Pz + k) * Pc + j

    def footprint(self, ctx) -> dict:
        lay: Layout2D = ctx.layout
        rows = lay.node_sizes[lay.ranks_I()]
        adj = self._block_nnz(ctx)
        if not ctx.symmetric:
            adj = 2 * adj
        a, b = lay.stages[0], lay.stages[1]
        f = max(lay.num_features, 1)
        frac = np.diff(chunk_offsets(f, lay.pc))[lay.ranks_j()] / f
        return {
            "rows": rows,
            "adjacency": adj + self.stage_nnz(ctx, "f").max(axis=1)[lay.ranks_i()],
            "buffer_rows": int((b - a).max(initial=0)) + lay.row_sizes[lay.ranks_i()],
            "col_fraction": frac,
        }
