"""One rank of Plexus on a device (issue 37, docs/gpu.md): `PlexusDeviceOps`.

Every array of the training loop stays on the device of the run's backend.  The shards of S
(and their transposes) are made resident once per dtype, one resident matrix per block of
``--block-rows`` rows (the CPU path's windows of the row pointer), and every aggregation is
one device SpMM per block followed by the Allreduce of that block; the weight blocks are
Allgathered, the products formed by the backend's GEMM and Allreduced, the self-term moves
gather and place their rows on the device, and the logits' column chunks are joined on the
device for the softmax cross-entropy and the argmax.  Every communicator is the backend's
staged one (``backend.staged``: pinned host buffers around the counted communicator), so the
counters see the CPU run's messages and measured bytes equal the plan.  The index arrays of
the moves and the row ids of the dropout masks are copied to the device once.

On the host emulation each product is the CPU path's kernel on the same operands, so a run
equals the CPU run bit for bit; on a GPU the SpMM (cuSPARSE), the GEMM (cuBLAS) and the
column sums of the bias gradient add in other orders, so a run equals the CPU run to
rounding only.  The backend is duck-typed: this module imports no device code.
"""

from __future__ import annotations

import numpy as np

from gcntrain.model.compute import compute_for
from gcntrain.model.ops import ParamSpec
from gcntrain.model.phase import phase_key
from gcntrain.partition.basic import block_bounds
from gcntrain.schemes.plexus.layout import PlexusLayout
from gcntrain.schemes.plexus.ops import PlexusOps, assemble_weight, row_blocks
from gcntrain.schemes.plexus.placement import Place


class PlexusDeviceOps(PlexusOps):
    """`PlexusOps` whose arrays stay on the device of `backend` (module docstring).

    Parameters
    ----------
    world : the counted world communicator.
    layout : the run's `PlexusLayout`.
    axis_comms : grid axis -> the counted communicator of the ranks differing only there.
    shards : key -> this rank's shard of S (float64 CSR, host), as `PlexusOps`.
    backend : the run's device backend (`gcntrain.device.backend`).
    """

    def __init__(self, world, layout: PlexusLayout, axis_comms: dict, shards: dict, backend):
        staged = {ax: backend.staged(comm) for ax, comm in axis_comms.items()}
        super().__init__(backend.staged(world), layout, staged, shards)
        self.backend = backend
        self.compute = compute_for(backend)
        #: (shard key, transposed, dtype) -> [(lo, hi, resident block of rows lo..hi)]
        self._resident: dict = {}
        #: placement -> (rows sent, where the received rows go) as device index arrays
        self._device_moves: dict = {}
        #: placement -> original ids of its local rows (one host array each, so that the
        #: dropout masks copy them to the device once)
        self._place_rows: dict = {}

    # -- helpers -------------------------------------------------------------------------------
    def _contiguous(self, a):
        return self.compute.xp.ascontiguousarray(a)

    def _blocks(self, p: Place, transpose: bool, dtype) -> list:
        """The row blocks of the shard at p (or of its transpose) in `dtype`, each made
        resident once: the windows of the row pointer the CPU path multiplies."""
        key = self.layout.shard_key(p)
        k = (key, transpose, np.dtype(dtype).str)
        if k not in self._resident:
            M = self._matrix(key, transpose, dtype)
            self._typed.pop(k, None)  # the host copy in this dtype is not kept
            blocks = []
            for lo, hi in row_blocks(M.shape[0], self.layout.block_rows):
                a, b = int(M.indptr[lo]), int(M.indptr[hi])
                ip = np.ascontiguousarray(M.indptr[lo : hi + 1] - a)
                shape = (hi - lo, M.shape[1])
                blocks.append((lo, hi, self.backend.csr(ip, M.indices[a:b], M.data[a:b], shape)))
            self._resident[k] = blocks
        return self._resident[k]

    def _spmm(self, X, p: Place, transpose: bool, key: str):
        """As `PlexusOps._spmm`: one device SpMM per row block, each block's partial sum
        Allreduced (staged) into its rows of the output."""
        X = self._contiguous(X)
        blocks = self._blocks(p, transpose, X.dtype)
        comm = self.axis[p.rep if transpose else p.row]
        out = self.backend.empty((blocks[-1][1], X.shape[1]), X.dtype)
        for lo, hi, M in blocks:
            comm.allreduce(self.backend.spmm(M, X), key, out=out[lo:hi])
        return out

    def _move(self, X, p: Place, width: int, key: str):
        """As `PlexusOps._move`: the rows gathered and placed on the device."""
        local, order, counts = self._move_plan(p)
        dev = self._device_moves.get(p)
        if dev is None:
            dev = tuple(self.backend.to_device(np.ascontiguousarray(a)) for a in (local, order))
            self._device_moves[p] = dev
        c = self.compute
        X = self._contiguous(X.toarray() if hasattr(X, "toarray") else X)
        got = self.axis[p.row].allgatherv(c.gather_rows(X, dev[0]), counts, key)
        out = self.backend.empty((order.shape[0], X.shape[1]), X.dtype)
        c.scatter_rows(got, dev[1], out)
        return out

    def _weight(self, W, spec_shape, p: Place, key: str):
        r0, r1, c0, c1 = self.layout.weight_block(spec_shape, p, self.c)
        counts = block_bounds((r1 - r0) * (c1 - c0), self.layout.dims[p.row])
        flat = self.axis[p.row].allgatherv(self._contiguous(W), np.diff(counts), key)
        return flat.reshape(r1 - r0, c1 - c0)

    def _gather_cols(self, X, p: Place, width: int, key: str):
        """Whole rows of X at p: the column chunks Allgathered (staged) over the column
        axis and joined on the device (`gcntrain.schemes.two_d.gather_columns`)."""
        widths = np.diff(self.layout.fbounds(width, p.col))
        X = self._contiguous(X)
        m = X.shape[0]
        flat = self.axis[p.col].allgatherv(X.reshape(-1), widths * m, key)
        ends = np.cumsum(widths * m)
        parts = [flat[int(e - k * m) : int(e)].reshape(m, int(k)) for e, k in zip(ends, widths)]
        return self._contiguous(self.compute.xp.concatenate(parts, axis=1))

    def _rows_at(self, p: Place) -> np.ndarray:
        if p not in self._place_rows:
            self._place_rows[p] = self.layout.rows_of(p, self.rank)
        return self._place_rows[p]

    # -- protocol ------------------------------------------------------------------------------
    def shard_param(self, full, spec: ParamSpec, *, phase):
        return self.compute.param(super().shard_param(full, spec, phase=phase))

    def gather_param(self, local, spec: ParamSpec, *, phase):
        lay, key = self.layout, phase_key(phase)
        pl = lay.plans[spec.layer]
        if spec.is_bias:
            w = np.diff(lay.fbounds(spec.shape[0], pl.out.col))
            return self.axis[pl.out.col].allgatherv(self._contiguous(local), w, key)
        counts = lay.weight_chunks(spec.shape, pl.mm)
        flat = self.world.allgatherv(self._contiguous(local), counts, key)
        return assemble_weight(lay, spec.shape, pl.mm, self.compute.to_host(flat), local.dtype)

    def param_sum_sq(self, local, spec: ParamSpec, *, phase) -> float:
        """As `PlexusOps.param_sum_sq`; a bias is counted on one rank of its replicas
        only, the others send 0 without reading theirs (one scalar to the host)."""
        mine = 0.0
        out = self.layout.plans[spec.layer].out
        if not spec.is_bias or (self.c[out.row] == 0 and self.c[out.rep] == 0):
            mine = self.compute.sum_sq(local)
        return float(self.world.allreduce(np.array([mine]), phase_key(phase))[0])

    def dropout(self, H, key, rate, *, width, phase):
        if key is None or rate <= 0.0:
            return H
        p = self._plan(phase).inp
        lo = self._cols(p, width)[0]
        return self.compute.dropout_forward(H, self._rows_at(p), key[0], key[1], rate, lo)

    def dropout_backward(self, dH, key, rate, *, width, phase):
        if key is None or rate <= 0.0:
            return dH
        p = self._plan(phase).inp
        lo = self._cols(p, width)[0]
        return self.compute.dropout_backward(dH, self._rows_at(p), key[0], key[1], rate, lo)

    def matmul(self, H, W, *, phase):
        pl, key = self._plan(phase), phase_key(phase)
        spec_shape = self.layout.weight_shape(phase.layer)
        selfterm = phase.term == "self"
        if selfterm and pl.self_first:
            H = self._move(H, pl.inp, spec_shape[0], key)
        Wb = self._weight(W, spec_shape, pl.mm, key)
        Z = self.axis[pl.mm.col].allreduce(self._contiguous(self.compute.matmul(H, Wb)), key)
        if selfterm and not pl.self_first:
            Z = self._move(Z, pl.agg, spec_shape[1], key)
        return Z

    def matmul_grads(self, H, W, dZ, *, need_input_grad, phase):
        pl, key = self._plan(phase), phase_key(phase)
        spec_shape = self.layout.weight_shape(phase.layer)
        selfterm = phase.term == "self"
        c = self.compute
        if selfterm and pl.self_first:
            H = self._move(H, pl.inp, spec_shape[0], key)
        if selfterm and not pl.self_first:
            dZ = self._move(dZ, pl.out, spec_shape[1], key)
        dZ = self._contiguous(dZ)
        dW = self._contiguous(c.matmul_tn(H, dZ))
        dH = None
        if need_input_grad:
            Wb = self._weight(W, spec_shape, pl.mm, key)
            dH = self.axis[pl.mm.rep].allreduce(self._contiguous(c.matmul(dZ, Wb.T)), key)
            if selfterm and pl.self_first:
                dH = self._move(dH, pl.mm, spec_shape[0], key)
        return dH, dW

    def reduce_weight_grad(self, dW, spec: ParamSpec, *, phase):
        p = self.layout.plans[spec.layer].mm
        counts = np.diff(block_bounds(int(dW.size), self.layout.dims[p.row]))
        send = self._contiguous(dW).reshape(-1)
        return self.axis[p.row].reduce_scatterv(send, counts, phase_key(phase))

    def bias_grad(self, dZ, spec: ParamSpec, *, phase):
        out = self.layout.plans[spec.layer].out
        part = self._contiguous(dZ.sum(axis=0))
        return self.axis[out.row].allreduce(part, phase_key(phase))

    def xent(self, logits, labels, masks, *, width, grad_index=None, grad_divisor=1.0, phase):
        out = self.layout.output
        full = self._gather_cols(logits, out, width, phase_key(phase))
        sums, grad = self.compute.local_xent(full, labels, masks, grad_index, grad_divisor)
        if grad is not None:
            lo, hi = self._cols(out, width)
            grad = self._contiguous(grad[:, lo:hi])
        return self.node_sum(sums, phase=phase), grad

    def predict(self, logits, *, width, phase):
        full = self._gather_cols(logits, self.layout.output, width, phase_key(phase))
        if not full.size:
            return np.zeros(full.shape[0], dtype=np.int64)
        xp = self.compute.xp
        return xp.argmax(full, axis=1).astype(xp.int64)
