"""One rank of the 2D / split-3D scheme on a device (issue 37, docs/gpu.md):
`TwoDDeviceOps` and its SUMMA product, `DeviceSumma`.

Every communicator is the backend's staged one (``backend.staged``: device arrays go
through pinned host buffers around the counted communicator, so the counters see a host
run's messages and measured bytes equal the plan).  The node-wise work (the products with
W, the row gathers and Reduce-scatters along the process rows, softmax cross-entropy, the
sums down the process columns) is `TwoDOps`'s own code over ``self.compute``; only the
SUMMA product with S differs, because the CPU path's stage-by-stage accumulation
(``out += piece @ X_piece`` with the Numba kernel) has no device library call.

A product keeps the CPU path's broadcasts, in its order: at each stage of this rank's layer
the piece of X goes down the layer's process column and the piece of S along the process
row.  On the device they land in kept buffers: the X pieces side by side in one operand
(stage rows x width, per width and dtype), the S pieces' wire bytes side by side in one
buffer (per product kind and dtype; this rank's own pieces are copied in once).  Then one
device SpMM with the process row's pieces joined in stage order (resident once per kind
and dtype, built from the first product's pieces) sums every row's entries in the CPU's
order: stage by stage, each piece's entries in storage order, from zero, which is what
the accumulating kernel does, so the emulation equals the CPU run bit for bit.  Each
product writes the values it received into the joined matrix (one gather through a kept
permutation), so the broadcast pieces are what is multiplied.  On a GPU, cuSPARSE sums in
its own order: equal to rounding only.

Costs beside the CPU path: every rank keeps its process row's whole block row of S (the
pieces of every column part of its layer: Pc times its own share) as the joined matrix,
its wire bytes and an int64 permutation, and the X operand holds the rows of every stage
of its layer at once (the CPU path one stage at a time).  An accumulating device SpMM
(cuSPARSE's ``beta = 1``) per stage would avoid both; the backend has none yet.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from gcntrain.model.compute import compute_for
from gcntrain.schemes.two_d.layout import ENTRY_ID_BYTES, Layout2D
from gcntrain.schemes.two_d.ops import StagePieces, TwoDOps


class _Joined:
    """The process row's pieces of one product kind and dtype on the device: the wire
    buffer, the joined matrix (resident) and the permutation from wire values to its
    entries."""

    def __init__(self, wires, slots):
        self.wires = wires  # device uint8: every live stage's wire, in stage order
        self.slots = slots  # (position in the stage list, byte offset, entries) per live stage
        self.matrix = None
        self.perm = None


class DeviceSumma:
    """The SUMMA product (`TwoDOps._summa`) of one rank on the device (module docstring).

    Parameters
    ----------
    ops : the rank's `TwoDDeviceOps` (its layout, coordinates, stage tables, pieces and
        staged communicators).
    backend : the run's device backend.
    """

    def __init__(self, ops: TwoDOps, backend):
        self.ops = ops
        self.backend = backend
        self.xp = ops.compute.xp
        lay: Layout2D = ops.layout
        a, b = lay.stages[0], lay.stages[1]
        self.mine = lay.stages_of_layer(ops.k)
        rows = (b - a)[self.mine]
        #: start of each stage of the layer in the operand (stage order)
        self.start = np.concatenate(([0], np.cumsum(rows))).astype(np.int64)
        self._operands: dict = {}
        self._joined: dict = {}

    def _operand(self, w: int, dtype):
        key = (w, np.dtype(dtype).str)
        got = self._operands.get(key)
        if got is None:
            got = self._operands[key] = self.backend.empty((int(self.start[-1]), w), dtype)
        return got

    def _pieces(self, which: str, dtype, A) -> _Joined:
        """The wire buffer of `which` in `dtype` (made once, this rank's pieces copied in)."""
        key = (which, np.dtype(dtype).str)
        got = self._joined.get(key)
        if got is not None:
            return got
        ops = self.ops
        entries = [int(A.nbytes[ka]) for ka in A.stages_of(ops.I)]  # tables count entries
        item = ENTRY_ID_BYTES + np.dtype(dtype).itemsize
        slots, off = [], 0
        for idx, k in enumerate(entries):
            if k:
                slots.append((idx, off, k))
                off += k * item
        host = np.zeros(off, dtype=np.uint8)
        pieces = ops.pieces[which]
        for idx, at, k in slots:
            s = int(self.mine[idx])
            if s in pieces.own:
                host[at : at + k * item] = pieces.get(s, dtype)[1]
        got = self._joined[key] = _Joined(self.backend.to_device(host), slots)
        return got

    def _build(self, J: _Joined, dtype) -> None:
        """The joined matrix and the permutation, from the pieces of the first product
        (one copy of the wire bytes to the host, once per kind and dtype)."""
        ops, dt = self.ops, np.dtype(dtype)
        wire = self.backend.fetch(J.wires)
        item = ENTRY_ID_BYTES + dt.itemsize
        rows, cols, pos = [], [], []
        a, b = ops.layout.stages[0], ops.layout.stages[1]
        for idx, at, k in J.slots:
            s = int(self.mine[idx])
            buf = wire[at : at + k * item]
            StagePieces.unpack(buf, k, ops.ma, int(b[s] - a[s]), dt)  # checks the row order
            rows.append(buf[: 4 * k].view(np.int32).astype(np.int64))
            cols.append(buf[4 * k : 8 * k].view(np.int32).astype(np.int64) + self.start[idx])
            pos.append((at + 8 * k) // dt.itemsize + np.arange(k, dtype=np.int64))
        empty = np.zeros(0, dtype=np.int64)
        r = np.concatenate(rows) if rows else empty
        order = np.argsort(r, kind="stable")  # rows, then stage order, then storage order
        indptr = np.zeros(ops.ma + 1, dtype=np.int64)
        np.cumsum(np.bincount(r, minlength=ops.ma), out=indptr[1:])
        perm = (np.concatenate(pos) if pos else empty)[order]
        indices = (np.concatenate(cols) if cols else empty)[order]
        data = wire.view(dt)[perm]
        shape = (ops.ma, int(self.start[-1]))
        J.matrix = self.backend.csr(indptr, indices, data, shape)
        J.perm = self.backend.to_device(perm)

    def product(self, which: str, X, key: str):
        """This rank's block of ``S @ X`` ("f") or ``S^T @ X`` ("t") (slice I of the row
        part in split-3D, after the fiber's Reduce-scatter)."""
        ops, lay = self.ops, self.ops.layout
        w, dt = int(X.shape[1]), X.dtype
        a, b = lay.stages[0], lay.stages[1]
        A, Xs = ops._stages(which, w)
        J = self._pieces(which, dt, A)
        operand = self._operand(w, dt)
        slot = {idx: (at, k) for idx, at, k in J.slots}
        item = ENTRY_ID_BYTES + dt.itemsize
        group_x = ops.k * lay.pc + ops.j
        base = int(lay.node_offsets[ops.I])
        stages = zip(self.mine, A.stages_of(ops.I), Xs.stages_of(group_x))
        for idx, (s, ka, kx) in enumerate(stages):
            lo, hi = int(a[s]), int(b[s])
            r, c = int(Xs.root[kx]), int(A.root[ka])
            block = operand[int(self.start[idx]) : int(self.start[idx + 1])]
            if ops.i == r:
                block[...] = X[lo - base : hi - base]
            if Xs.nbytes[kx] > 0:
                ops.lcol.bcast(block, r, key)
            if int(A.nbytes[ka]) == 0:
                continue
            at, k = slot[idx]
            ops.grid.row.bcast(J.wires[at : at + k * item], c, key)
        if J.matrix is None:
            self._build(J, dt)
        else:  # the values just received are the ones multiplied
            J.matrix.data[...] = J.wires.view(dt)[J.perm]
        if w:
            out = self.backend.spmm(J.matrix, operand)
        else:
            out = self.xp.zeros((ops.ma, 0), dtype=dt)
        if ops.fiber is None:
            return out
        counts = lay.node_sizes[ops.i * lay.pz : (ops.i + 1) * lay.pz] * w
        got = ops.fiber.reduce_scatterv(out.reshape(-1), counts, key)
        return got.reshape(ops.m, w)


class TwoDDeviceOps(TwoDOps):
    """`TwoDOps` whose arrays stay on the device of `backend` (module docstring).
    Parameters as `TwoDOps`, plus the run's device `backend`."""

    def __init__(self, world, grid, layout, pieces, nnz, rows, lcol, fiber, backend):
        staged = backend.staged
        g = SimpleNamespace(i=grid.i, j=grid.j, row=staged(grid.row), col=staged(grid.col))
        super().__init__(
            staged(world),
            g,
            layout,
            pieces,
            nnz,
            rows,
            g.col if lcol is grid.col else staged(lcol),
            None if fiber is None else staged(fiber),
        )
        self.backend = backend
        self.compute = compute_for(backend)
        self.summa = DeviceSumma(self, backend)

    def _contig(self, a):
        if self.backend.is_device(a):
            return self.compute.xp.ascontiguousarray(a)
        return np.ascontiguousarray(a)

    def _dense(self, a):
        return a

    def _summa(self, which: str, X, key: str):
        return self.summa.product(which, self._contig(X), key)
