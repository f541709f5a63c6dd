"""MPI setup of Plexus (section 5.4): the axis communicators, whole degrees from the load
grid's blocks, and the Alltoallv routing of every adjacency entry to its shards' holders
and of the feature rows, labels and masks to the input and output blocks' holders."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from gcntrain.model.normalize import DEGREE_OFFSET, degrees, support_rows
from gcntrain.schemes.plexus.device import PlexusDeviceOps
from gcntrain.schemes.plexus.layout import (
    PlexusLayout,
    _copies_to_holders,
    _first_in_block_row,
    entry_destinations,
)
from gcntrain.schemes.plexus.ops import PlexusOps
from gcntrain.schemes.plexus.placement import INPUT

#: wire bytes of one routed adjacency entry: int64 shard, row, column and the float64 value
ENTRY_BYTES = 32
#: wire bytes of one routed label row: int64 original id, label, mask bits, spare
LABEL_BYTES = 32


class PlexusSetup:
    """`Scheme.setup` of Plexus (mixed into `Plexus`)."""

    def setup(self, world, layout: PlexusLayout, local, kind: str, backend=None) -> PlexusOps:
        """The axis communicators, the shards and the node data routed (module docstring),
        then `PlexusOps` on the host (`backend` None or the host's) or `PlexusDeviceOps` on
        the device of `backend` (`gcntrain.device.backend`)."""
        rank = world.rank
        comms = {}
        for ax in range(3):
            G = layout.groups(ax)
            comms[ax] = world.split(color=int(G.gid[rank]), key=int(G.pos[rank]))
        # ids and whole degrees of every node, in the loading numbering: the first rank of
        # each block row of the load grid contributes its block row
        bi, bj = layout.load_block(rank)
        lead = _first_in_block_row(layout)
        ids = local.new_ids
        orig_local = np.ascontiguousarray(local.orig_ids, dtype=np.int64)
        mine = slice(None) if bj == 0 else slice(0, 0)
        load_orig = world.allgatherv(orig_local[mine], lead, "setup")
        deg = degrees(local.indptr, local.indices, local.data, kind, rows=ids, partial=True)
        row = world.split(color=bi, key=bj)
        deg = row.allreduce(np.ascontiguousarray(deg), "setup") + DEGREE_OFFSET[kind]
        deg_all = world.allgatherv(np.ascontiguousarray(deg[mine]), lead, "setup")
        cols = (
            None
            if layout.load_cols is None
            else tuple(int(v) for v in layout.load_cols[bj : bj + 2])
        )
        ip, ix, dv = support_rows(local.indptr, local.indices, local.data, ids, deg_all, kind, cols)
        orow = np.repeat(orig_local, np.diff(ip))
        ocol = load_orig[np.asarray(ix, dtype=np.int64)]
        shards = self._route_entries(world, layout, orow, ocol, np.asarray(dv, np.float64))
        if backend is None or getattr(backend, "name", "cpu") == "cpu":
            ops = PlexusOps(world, layout, comms, shards)
        else:
            ops = PlexusDeviceOps(world, layout, comms, shards, backend)
        self._route_node_data(world, layout, local, ops)
        return ops

    @staticmethod
    def _route_entries(world, layout: PlexusLayout, orow, ocol, vals) -> dict:
        parts = entry_destinations(layout, orow, ocol)
        dst = np.concatenate([d for _, _, d, _, _ in parts]) if parts else np.zeros(0, np.int64)
        rec = (
            np.concatenate(
                [
                    np.stack(
                        [np.full(idx.shape[0], s), lr, lc, vals[idx].view(np.int64)], axis=1
                    ).astype(np.int64)
                    for s, idx, _, lr, lc in parts
                ]
            )
            if parts
            else np.zeros((0, 4), np.int64)
        )
        (got,), _, _, _ = world.route(dst, [rec], "setup")
        c = layout.coords(world.rank)
        shards = {}
        for s, key in enumerate(layout.shard_keys):
            _, q, r = key
            bq, br = layout.bounds(q), layout.bounds(r)
            shape = (int(bq[c[q] + 1] - bq[c[q]]), int(br[c[r] + 1] - br[c[r]]))
            sel = got[got[:, 0] == s]
            M = sp.csr_matrix(
                (sel[:, 3].copy().view(np.float64), (sel[:, 1], sel[:, 2])), shape=shape
            )
            M.sum_duplicates()
            M.sort_indices()
            shards[key] = M
        return shards

    @staticmethod
    def _route_node_data(world, layout: PlexusLayout, local, ops: PlexusOps) -> None:
        """Send the feature rows (their column chunks) to the holders of the input block and
        the labels and masks to the holders of the output block; `local` then describes the
        rank's node data (features: `ops.input_rows`; labels, masks, ids: `ops.rows`)."""
        P = world.size
        c = layout.coords(world.rank)
        # the first rank of each load block row sends its block row's node data
        keep = slice(None) if layout.load_block(world.rank)[1] == 0 else slice(0, 0)
        orig = np.asarray(local.orig_ids, dtype=np.int64)[keep]
        X = local.features
        X = (X.toarray() if sp.issparse(X) else np.asarray(X))[keep]
        f = layout.num_features
        # features: ids, then the column chunk of each destination
        dst, row = _copies_to_holders(layout, INPUT, orig)
        (got_ids,), order, send, recv = world.route(dst, [orig[row]], "setup")
        row = row[order]
        fb = layout.fbounds(f, INPUT.col)
        ycol = layout.coords_all[:, INPUT.col]
        ptr = np.concatenate(([0], np.cumsum(send)))
        pieces, elems = [], np.zeros(P, dtype=np.int64)
        for d in np.flatnonzero(send):
            lo, hi = int(fb[ycol[d]]), int(fb[ycol[d] + 1])
            blk = X[row[ptr[d] : ptr[d + 1]], lo:hi]
            pieces.append(blk.reshape(-1))
            elems[d] = blk.size
        flat = np.concatenate(pieces) if pieces else np.zeros(0, dtype=X.dtype)
        lo, hi = int(fb[c[INPUT.col]]), int(fb[c[INPUT.col] + 1])
        got = world.alltoallv(
            np.ascontiguousarray(flat, dtype=X.dtype), elems, recv * (hi - lo), "setup"
        )
        b = layout.bounds(INPUT.row)
        at = layout.position(layout.num(INPUT.num), got_ids) - b[c[INPUT.row]]
        Xin = np.zeros((int(b[c[INPUT.row] + 1] - b[c[INPUT.row]]), hi - lo), dtype=X.dtype)
        Xin[at] = got.reshape(at.shape[0], hi - lo)
        # labels and masks
        out = layout.output
        names = [m for m in ("train", "val", "test") if local.masks.get(m) is not None]
        bits = np.zeros(orig.shape[0], dtype=np.int64)
        for i, m in enumerate(names):
            bits |= np.asarray(local.masks[m], dtype=np.int64)[keep] << i
        rec = np.stack(
            [orig, np.asarray(local.labels, np.int64)[keep], bits, np.zeros_like(orig)], axis=1
        )
        dst, row = _copies_to_holders(layout, out, orig)
        (got,), _, _, _ = world.route(dst, [rec[row]], "setup")
        b = layout.bounds(out.row)
        at = layout.position(layout.num(out.num), got[:, 0]) - b[c[out.row]]
        m = int(b[c[out.row] + 1] - b[c[out.row]])
        labels = np.full(m, -1, dtype=np.int64)
        labels[at] = got[:, 1]
        masks = {}
        for name in ("train", "val", "test"):
            if name in names:
                mk = np.zeros(m, dtype=bool)
                mk[at] = (got[:, 2] >> names.index(name)) & 1 == 1
                masks[name] = mk
            else:
                masks[name] = None
        local.features = Xin
        local.labels = labels
        local.masks = masks
        local.orig_ids = ops.rows
        local.node_rows = None
