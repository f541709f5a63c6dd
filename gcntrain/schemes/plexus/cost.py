"""What the simulator prices for Plexus: the exchange steps of setup and of every call,
the compute work, the held memory and the footprint (one mixin, `PlexusCost`, and the step
builders it shares)."""

from __future__ import annotations

import numpy as np

from gcntrain.comm.exchange import Allgatherv, Allreduce, Groups, Pairs, ReduceScatterv, Uniform
from gcntrain.model.ops import on_input_columns
from gcntrain.partition.unique import unique_ints
from gcntrain.schemes.base import spmm_work
from gcntrain.schemes.entries import entry_chunks, merge_counts
from gcntrain.schemes.labeltables import label_counts
from gcntrain.schemes.layout import owner_of
from gcntrain.schemes.plexus.layout import (
    PlexusLayout,
    _first_in_block_row,
    _sources,
    holder_pairs,
)
from gcntrain.schemes.plexus.placement import INPUT, LayerPlan, Place, agg_out, mm_out
from gcntrain.schemes.plexus.setup import ENTRY_BYTES, LABEL_BYTES


def _entries(ctx):
    """Yield (row, column, loading rank) of the entries of the support (positions of the
    loading numbering), a range of rows at a time (`gcntrain.schemes.entries.entry_chunks`)."""
    lay: PlexusLayout = ctx.layout
    for rows, cols in entry_chunks(ctx.support):
        src = owner_of(rows, lay.numbering.offsets) * lay.load_grid[1]
        if lay.load_cols is not None:
            src = src + owner_of(cols, lay.load_cols)
        yield rows, cols, src


def _load_orig(lay: PlexusLayout) -> np.ndarray:
    """(n,) original id of every position of the loading numbering."""
    perm = lay.numbering.perm
    return np.arange(lay.n, dtype=np.int64) if perm is None else np.asarray(perm, np.int64)


def _chunks(ctx, u: int, axis: int) -> np.ndarray:
    """(n,) the chunk along `axis`, in numbering `u`, of the node at every position of the
    loading numbering: the shard coordinate of an entry's row (u = 1 - the key's u) or
    column (`PlexusLayout.shard_coords`), looked up once per node, numbering and chunk
    count (kept in the plan's cache: the layout holds what a rank holds)."""
    lay: PlexusLayout = ctx.layout
    u = int(u) if lay.orders is not None else 0
    g = lay.dims[axis]

    def make():
        orig = ctx.cached("plexus_load_orig", lambda: _load_orig(lay))
        return owner_of(lay.position(u, orig), lay.bounds(axis))

    return ctx.cached(f"plexus_chunks_{u}_{g}", make)


def _group_elems(lay: PlexusLayout, axis: int, per_rank: np.ndarray) -> np.ndarray:
    """(groups,) elements of an Allreduce whose members all reduce `per_rank[member]`."""
    G = lay.groups(axis)
    out = np.zeros(int(G.gid.max(initial=-1)) + 1, dtype=np.int64)
    out[G.gid] = per_rank
    return out


def _allreduce(lay: PlexusLayout, axis: int, per_rank: np.ndarray, itemsize: int) -> Allreduce:
    return Allreduce(lay.groups(axis), _group_elems(lay, axis, per_rank), itemsize)


def move_step(lay: PlexusLayout, p: Place, width: int, itemsize: int) -> Allgatherv:
    """The self-term move of a width-`width` matrix from p to ``agg_out(p)``."""
    tgt = agg_out(p)
    c = lay.coords_all
    rows = lay.move_counts(p)[c[:, tgt.row], c[:, p.row]]
    return Allgatherv(lay.groups(p.row), rows * lay.col_counts(p, width) * itemsize)


def weight_step(lay: PlexusLayout, shape, p: Place, itemsize: int) -> Allgatherv:
    return Allgatherv(lay.groups(p.row), lay.weight_chunks(shape, p) * itemsize)


def spmm_steps(lay: PlexusLayout, p: Place, transpose: bool, width: int, itemsize: int) -> list:
    """The Allreduce of every row block of ``S @ X`` (X at p) or ``S^T @ X``."""
    out = p if transpose else agg_out(p)
    rows = lay.row_counts(out)
    cols = lay.col_counts(p, width)
    axis = p.rep if transpose else p.row
    B = lay.block_rows
    if B <= 0:
        return [_allreduce(lay, axis, rows * cols, itemsize)]
    nb = max(int(-(-rows.max(initial=0) // B)), 1)
    return [_allreduce(lay, axis, np.clip(rows - b * B, 0, B) * cols, itemsize) for b in range(nb)]


def _pair_sum(P: int, src, dst, cnt):
    key = src * P + dst
    u, inv = unique_ints(key, return_inverse=True)
    tot = np.bincount(inv, weights=cnt, minlength=u.shape[0]).astype(np.int64)
    return u // P, u % P, tot


class PlexusCost:
    """The pricing methods of Plexus (mixed into `Plexus`): ``setup_steps``,
    ``steps_<method>``, ``work_<method>``, ``held_estimate`` and ``footprint``."""

    def setup_steps(self, ctx) -> list:
        lay: PlexusLayout = ctx.layout
        P = lay.size
        world = Groups.world(P)
        lead = _first_in_block_row(lay)
        R, C = lay.load_grid
        block_rows = np.diff(lay.numbering.offsets)
        out = [
            ("setup", Allgatherv(world, lead * 8)),
            ("setup", Allreduce(Groups.axis((R, C), 1), block_rows, 8)),
            ("setup", Allgatherv(world, lead * 8)),
            ("setup", Uniform(world, 8)),
        ]
        # per key: the entries' (loading rank, shard) codes, counted per range of rows
        codes = {key: ([], []) for key in lay.shard_keys}
        for rows, cols, src in _entries(ctx):
            for key in lay.shard_keys:
                u, q, r = key
                qi, ri = _chunks(ctx, 1 - u, q)[rows], _chunks(ctx, u, r)[cols]
                code = (src * lay.dims[q] + qi) * lay.dims[r] + ri
                code, cnt = unique_ints(code, return_counts=True)
                codes[key][0].append(code)
                codes[key][1].append(cnt)
        srcs, dsts, cnts = [], [], []
        for key in lay.shard_keys:
            _, q, r = key
            code, cnt = merge_counts(*codes.pop(key))
            s_, rest = np.divmod(code, lay.dims[q] * lay.dims[r])
            qq, rr = np.divmod(rest, lay.dims[r])
            d = lay.shard_ranks(key, qq, rr)
            srcs.append(np.repeat(s_, d.shape[1]))
            dsts.append(d.reshape(-1))
            cnts.append(np.repeat(cnt, d.shape[1]))
        ps, pd, pc = _pair_sum(P, np.concatenate(srcs), np.concatenate(dsts), np.concatenate(cnts))
        out.append(("setup", Pairs(P, ps, pd, pc * ENTRY_BYTES)))
        # node data: ids and feature chunks to the input holders, labels to the output holders
        orig = _load_orig(lay)
        load = _sources(lay)
        ps, pd, pc = holder_pairs(lay, INPUT, orig, load)
        width = lay.col_counts(INPUT, lay.num_features)
        out += [
            ("setup", Uniform(world, 8)),
            ("setup", Pairs(P, ps, pd, pc * 8)),
            ("setup", Pairs(P, ps, pd, pc * width[pd] * ctx.feature_itemsize)),
        ]
        ps, pd, pc = holder_pairs(lay, lay.output, orig, load)
        out += [("setup", Uniform(world, 8)), ("setup", Pairs(P, ps, pd, pc * LABEL_BYTES))]
        return out

    def _plan_of(self, ctx, call) -> LayerPlan:
        return ctx.layout.plans[int(call.phase.layer)]

    def steps_aggregate(self, ctx, call) -> list:
        p = self._plan_of(ctx, call).agg
        return spmm_steps(ctx.layout, p, False, call.shape(0)[1], call.itemsize(0))

    def steps_aggregate_t(self, ctx, call) -> list:
        p = self._plan_of(ctx, call).agg
        return spmm_steps(ctx.layout, p, True, call.shape(0)[1], call.itemsize(0))

    def steps_matmul(self, ctx, call) -> list:
        lay: PlexusLayout = ctx.layout
        pl = self._plan_of(ctx, call)
        f_in, f_out = ctx.layout.weight_shape(call.phase.layer)
        isz, wsz = call.itemsize(0), call.itemsize(1)
        selfterm = call.phase.term == "self"
        out = []
        if selfterm and pl.self_first:
            out.append(move_step(lay, pl.inp, f_in, isz))
        out.append(weight_step(lay, (f_in, f_out), pl.mm, wsz))
        rows = lay.row_counts(pl.mm)
        out.append(_allreduce(lay, pl.mm.col, rows * lay.col_counts(mm_out(pl.mm), f_out), isz))
        if selfterm and not pl.self_first:
            out.append(move_step(lay, pl.agg, f_out, isz))
        return out

    def steps_matmul_grads(self, ctx, call) -> list:
        lay: PlexusLayout = ctx.layout
        pl = self._plan_of(ctx, call)
        f_in, f_out = ctx.layout.weight_shape(call.phase.layer)
        isz, wsz, gsz = call.itemsize(0), call.itemsize(1), call.itemsize(2)
        selfterm = call.phase.term == "self"
        out = []
        if selfterm and pl.self_first:
            out.append(move_step(lay, pl.inp, f_in, isz))
        if selfterm and not pl.self_first:
            out.append(move_step(lay, pl.out, f_out, gsz))
        if call.kw("need_input_grad"):
            out.append(weight_step(lay, (f_in, f_out), pl.mm, wsz))
            rows = lay.row_counts(pl.mm)
            out.append(_allreduce(lay, pl.mm.rep, rows * lay.col_counts(pl.mm, f_in), gsz))
            if selfterm and pl.self_first:
                out.append(move_step(lay, pl.mm, f_in, gsz))
        return out

    def steps_reduce_weight_grad(self, ctx, call) -> list:
        lay: PlexusLayout = ctx.layout
        shape = call.args[1][2]
        p = self._plan_of(ctx, call).mm
        return [ReduceScatterv(lay.groups(p.row), lay.weight_chunks(shape, p) * call.itemsize(0))]

    def steps_bias_grad(self, ctx, call) -> list:
        lay: PlexusLayout = ctx.layout
        out = self._plan_of(ctx, call).out
        width = call.args[1][2][0]
        return [_allreduce(lay, out.row, lay.col_counts(out, width), call.itemsize(0))]

    def steps_column_sum(self, ctx, call) -> list:
        """BatchNorm's column sums of a layer's input: an Allreduce of (k, its column
        chunk) over the input's row axis."""
        lay: PlexusLayout = ctx.layout
        p = self._plan_of(ctx, call).inp
        cols = lay.col_counts(p, call.kw("width"))
        return [_allreduce(lay, p.row, call.shape(0)[0] * cols, call.itemsize(0))]

    def steps_node_sum(self, ctx, call) -> list:
        lay: PlexusLayout = ctx.layout
        m = int(np.prod(call.shape(0)))
        return [_allreduce(lay, lay.output.row, np.full(lay.size, m), call.itemsize(0))]

    def steps_element_sum(self, ctx, call) -> list:
        return [Allreduce(Groups.world(ctx.P), np.array([int(np.prod(call.shape(0)))]), 8)]

    def steps_row_normalize(self, ctx, call) -> list:
        lay: PlexusLayout = ctx.layout
        return [_allreduce(lay, INPUT.col, lay.row_counts(INPUT), 8)]

    def steps_predict(self, ctx, call) -> list:
        lay: PlexusLayout = ctx.layout
        out, C = lay.output, call.kw("width")
        nbytes = lay.row_counts(out) * lay.col_counts(out, C) * call.itemsize(0)
        return [Allgatherv(lay.groups(out.col), nbytes)]

    def steps_xent(self, ctx, call) -> list:
        lay: PlexusLayout = ctx.layout
        k = call.args[2][1]
        return self.steps_predict(ctx, call) + [
            _allreduce(lay, lay.output.row, np.full(lay.size, 2 * k), 8)
        ]

    def steps_gather_param(self, ctx, call) -> list:
        lay: PlexusLayout = ctx.layout
        shape = call.args[1][2]
        pl = self._plan_of(ctx, call)
        if len(shape) == 1:
            p = pl.inp if on_input_columns(call.args[1][1]) else pl.out
            nbytes = lay.col_counts(p, shape[0]) * call.itemsize(0)
            return [Allgatherv(lay.groups(p.col), nbytes)]
        return [
            Allgatherv(Groups.world(lay.size), lay.weight_chunks(shape, pl.mm) * call.itemsize(0))
        ]

    def steps_param_sum_sq(self, ctx, call) -> list:
        return [Allreduce(Groups.world(ctx.P), np.array([1]), 8)]

    # -- compute and memory --------------------------------------------------------------------
    def shard_nnz(self, ctx) -> np.ndarray:
        """(keys, P) stored entries of every shard on every rank."""
        lay: PlexusLayout = ctx.layout

        def make():
            out = np.zeros((len(lay.shard_keys), lay.size), dtype=np.int64)
            c = lay.coords_all
            for s, key in enumerate(lay.shard_keys):
                u, q, r = key
                rows = _chunks(ctx, 1 - u, q)
                cols = _chunks(ctx, u, r)
                tab = label_counts(ctx.support, rows, cols, (lay.dims[q], lay.dims[r]))
                out[s] = tab[c[:, q], c[:, r]]
            return out

        return ctx.cached("plexus_shard_nnz", make)

    def work_aggregate(self, ctx, call) -> np.ndarray:
        lay: PlexusLayout = ctx.layout
        p = self._plan_of(ctx, call).agg
        nnz = self.shard_nnz(ctx)[lay.shard_keys.index(lay.shard_key(p))]
        out = spmm_work(nnz, 1)
        out[:, 1] = 2 * nnz * lay.col_counts(p, call.shape(0)[1])
        return out

    work_aggregate_t = work_aggregate

    def work_matmul(self, ctx, call) -> np.ndarray:
        lay: PlexusLayout = ctx.layout
        pl = self._plan_of(ctx, call)
        f_in, f_out = ctx.layout.weight_shape(call.phase.layer)
        rows = lay.row_counts(pl.mm)
        fin = lay.col_counts(pl.mm, f_in)
        fout = lay.col_counts(mm_out(pl.mm), f_out)
        out = np.zeros((lay.size, 4), dtype=np.int64)
        one = 2 * rows * fin * fout
        products = 1 if call.method == "matmul" or not call.kw("need_input_grad") else 2
        if call.sparse(0) and ctx.feature_nnz is not None:
            # the trainer hands a sparse input over as CSR: its product with W (or dW's
            # H^T dZ) is sparse, over the block's expected stored entries
            nnz = np.round(rows * fin * ctx.feature_density(f_in)).astype(np.int64)
            out[:, 0], out[:, 1] = nnz, 2 * nnz * fout
            products -= 1
        out[:, 2] = one * products
        out[:, 3] = rows * products
        return out

    work_matmul_grads = work_matmul

    def held_estimate(self, ctx, itemsize: int) -> np.ndarray:
        """Per rank: every shard (float64 CSR, int32 indices), its copy in the run's dtype
        and its transposed copy where a layer multiplies by S^T, the self-term move maps, the
        node data (input block of features; int64 labels, ids; bool masks) and the layout."""
        from gcntrain.schemes.held import layout_bytes

        lay: PlexusLayout = ctx.layout
        c = lay.coords_all
        nnz = self.shard_nnz(ctx)
        total = np.zeros(lay.size, dtype=np.int64)
        transposed = set()
        for layer, (pl, m) in enumerate(zip(lay.plans, lay.model)):
            if m["order"] == "mm_first" or layer > 0:
                transposed.add(lay.shard_key(pl.agg))
        for s, key in enumerate(lay.shard_keys):
            _, q, r = key
            mq = np.diff(lay.bounds(q))[c[:, q]]
            mr = np.diff(lay.bounds(r))[c[:, r]]
            total += nnz[s] * (8 + 4) + (mq + 1) * 4
            if itemsize != 8:
                total += nnz[s] * (itemsize + 4) + (mq + 1) * 4
            if key in transposed:
                total += nnz[s] * (itemsize + 4) + (mr + 1) * 4
        moves = set()
        for layer, pl in enumerate(lay.plans):
            if pl.self_first is None:
                continue
            used = (pl.inp, pl.mm) if pl.self_first else (pl.agg, pl.out)
            moves.update(used if layer > 0 or not pl.self_first else used[:1])
        for p in moves:
            tgt = agg_out(p)
            mine = lay.move_counts(p)[c[:, tgt.row], c[:, p.row]]
            total += 8 * (mine + lay.row_counts(tgt) + lay.dims[p.row])
        m_in, m_out = lay.row_counts(INPUT), lay.row_counts(lay.output)
        f_in = lay.col_counts(INPUT, lay.num_features)
        total += m_in * f_in * ctx.feature_itemsize + 8 * m_in
        total += m_out * (8 + 8 + ctx.masks)
        return total + layout_bytes(ctx)

    def footprint(self, ctx) -> dict:
        lay: PlexusLayout = ctx.layout
        f = max(lay.num_features, 1)
        adj = self.shard_nnz(ctx).sum(axis=0)
        if not ctx.symmetric:
            adj = 2 * adj
        return {
            "rows": lay.row_counts(INPUT),
            "adjacency": adj,
            "buffer_rows": np.zeros(lay.size, dtype=np.int64),
            "col_fraction": lay.col_counts(INPUT, f) / f,
        }
