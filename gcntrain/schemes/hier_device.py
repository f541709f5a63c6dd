"""The hier (SuperGCN) products on a device (issue 37, docs/gpu.md): `HierDevice`, the
device half of `gcntrain.schemes.hier.HierDeviceOps`.

A mixin, so that this module needs nothing of `gcntrain.schemes.hier` (which chooses the
device Ops in its setup: importing it back would be a cycle); it reads what `HierOps`
sets (``_ex``: the `HierExchange` of S and S^T, ``bits``, ``group``, ``seed``, ``world``)
and calls its host-only helpers (``_quantized``, ``_stream``, ``_note``).

One product ``M @ X`` on the device, in the CPU path's steps and order:

1. the post-aggregated rows gathered (``compute.gather_rows``) and the partial sums of the
   pre-aggregated destinations computed (one device SpMM with ``send_pre``); each part
   posted as one non-blocking Alltoallv through the backend's staged communicator (pinned
   host buffers around the counted one: measured bytes equal the plan), quantized first on
   the device in training passes with ``--quant-bits`` (`DeviceQuant`: the host kernels'
   byte stream and stochastic rounding);
2. the local block multiplied while they travel (device SpMM, ``L = M_loc @ X``);
3. the received rows (dequantized on the device) and ``L`` joined into one kept operand
   ``[L; post rows; partial rows]`` and multiplied by ``[I | R_post | E_pre]`` (resident
   once per dtype; ``E_pre`` has a 1 at (destination, k) for the k-th partial row).  Per
   output row this sums ``L``, then the post rows' terms in storage order, then the partial
   rows in their order: the CPU path's ``spmm_csr_dense_add`` onto ``L`` followed by
   `scatter_add_rows`, bit for bit on the emulation (``0 + 1 * L = L`` exactly: a product
   row starts from +0 and is never -0).  A rank without remote entries returns ``L``.

Costs beyond the CPU path: one extra pass over the local rows (``L`` copied into the
operand and read once more) and the operand kept per width.  On a GPU cuSPARSE sums each
row in its own order, so a real GPU equals the CPU run to rounding only; the staged
Alltoallv copies its send buffer to the host when posted, so only the local SpMM overlaps
the transfer (as intended), not the quantization.  The split times in ``epoch_stats``
(``t_pre``, ``t_post``) read the wall clock without waiting for the device; the joined
product is counted in ``t_post``.
"""

from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter

import numpy as np
import scipy.sparse as sp

from gcntrain.kernels.quant import block_bytes
from gcntrain.model.compute import compute_for
from gcntrain.model.phase import Phase, phase_key
from gcntrain.schemes.hier_quant_device import DeviceQuant


@dataclass
class ResidentExchange:
    """One `HierExchange` in one dtype on the device: the matrices (``local``,
    ``send_pre``, ``remote`` = ``[I | R_post | E_pre]`` or None without remote entries),
    the gathered rows' indices (``post_idx``, int64) and the global ids of the rows sent
    (``post_ids``, ``pre_ids``, uint64: the rounding stream), and the operand's row split
    (``m`` local rows, ``k_post`` received post rows)."""

    local: object
    send_pre: object
    remote: object
    post_idx: object
    post_ids: object
    pre_ids: object
    m: int
    k_post: int


def remote_matrix(recv_post: sp.csr_matrix, pre_idx: np.ndarray, dtype) -> sp.csr_matrix:
    """``[I | R_post | E_pre]`` (m x (m + k_post + k_pre)), indices sorted: row i holds its
    identity entry, then its post entries in storage order, then a 1 for every received
    partial row k with ``pre_idx[k] == i``, in k order (module docstring)."""
    m = recv_post.shape[0]
    k = int(pre_idx.size)
    eye = sp.identity(m, dtype=dtype, format="csr")
    sel = sp.csr_matrix(
        (np.ones(k, dtype=dtype), (np.asarray(pre_idx, dtype=np.int64), np.arange(k))),
        shape=(m, k),
    )
    R = sp.hstack([eye, recv_post.astype(dtype), sel], format="csr")
    R.sort_indices()
    return R


class HierDevice:
    """Mixin of `gcntrain.schemes.hier.HierDeviceOps`: the products of `HierOps` with
    every array on the device (module docstring).  ``_on_device(backend)`` sets it up
    after `HierOps.__init__` (which ran on the staged communicator)."""

    def _on_device(self, backend) -> None:
        self.backend = backend
        self.compute = compute_for(backend)
        self.quant = DeviceQuant(self.compute)
        self._resident: dict = {}
        self._operands: dict = {}

    def _device(self, ex, dtype) -> ResidentExchange:
        """`ex` in `dtype` on the device (made once)."""
        key = (id(ex), np.dtype(dtype).str)
        hit = self._resident.get(key)
        if hit is None:
            be = self.backend
            local, recv_post, send_pre = ex.typed(dtype)
            has_remote = recv_post.shape[1] + ex.pre_idx.size > 0
            R = remote_matrix(recv_post, ex.pre_idx, dtype) if has_remote else None

            def csr(M):
                return be.csr(M.indptr, M.indices, M.data, M.shape)

            def ids(a):
                return be.to_device(np.ascontiguousarray(a, dtype=np.uint64))

            hit = self._resident[key] = ResidentExchange(
                csr(local),
                csr(send_pre),
                None if R is None else csr(R),
                be.to_device(np.ascontiguousarray(ex.post_idx, dtype=np.int64)),
                ids(ex.post_ids),
                ids(ex.pre_ids),
                int(local.shape[0]),
                int(recv_post.shape[1]),
            )
        return hit

    def _operand(self, d: ResidentExchange, rows: int, width: int, dtype):
        """The kept operand of the joined product (per exchange, width and dtype)."""
        key = (id(d), int(width), np.dtype(dtype).str)
        buf = self._operands.get(key)
        if buf is None:
            buf = self._operands[key] = self.backend.empty((int(rows), int(width)), dtype)
        return buf

    def _post_device(self, rows, ids, send, recv, phase: Phase, part: int, key: str):
        """Post one part's device rows: raw, or quantized on the device into one byte
        stream (`DeviceQuant.quantize_blocks`)."""
        if not self._quantized(phase):
            return self.world.ialltoallv(rows, send, recv, key)
        stream = self._stream(phase, part)
        buf, nbytes = self.quant.quantize_blocks(
            rows, ids, send, self.bits, self.group, self.seed, stream
        )
        vb, pb = block_bytes(recv, rows.shape[1], self.bits, self.group)
        return self.world.ialltoallv(buf, nbytes, vb + pb, key)

    def _received_device(self, pending, recv, width: int, dtype, phase: Phase, key: str):
        got = self.world.wait(pending, key)
        if not self._quantized(phase):
            return got
        return self.quant.dequantize_blocks(got, recv, width, self.bits, self.group, dtype)

    def _run(self, which: str, X, phase: Phase):
        ex = self._ex[which]
        key = phase_key(phase)
        d = self._device(ex, X.dtype)
        be, f = self.backend, X.shape[1]
        t0 = perf_counter()
        rows = self.compute.gather_rows(X, d.post_idx)
        post = self._post_device(rows, d.post_ids, ex.post_send, ex.post_recv, phase, 0, key)
        t_post = perf_counter() - t0
        t0 = perf_counter()
        sums = be.spmm(d.send_pre, X)
        pre = self._post_device(sums, d.pre_ids, ex.pre_send, ex.pre_recv, phase, 1, key)
        t_pre = perf_counter() - t0
        out = be.spmm(d.local, X)
        t0 = perf_counter()
        got_post = self._received_device(post, ex.post_recv, f, X.dtype, phase, key)
        t_post += perf_counter() - t0
        t0 = perf_counter()
        got_pre = self._received_device(pre, ex.pre_recv, f, X.dtype, phase, key)
        t_pre += perf_counter() - t0
        t0 = perf_counter()
        if d.remote is not None:
            m, k = d.m, d.m + d.k_post
            operand = self._operand(d, d.remote.shape[1], f, X.dtype)
            operand[:m] = out
            operand[m:k] = got_post
            operand[k:] = got_pre
            out = be.spmm(d.remote, operand)
        t_post += perf_counter() - t0
        self._note(phase, "post", ex.post_send, f, X.itemsize, t_post)
        self._note(phase, "pre", ex.pre_send, f, X.itemsize, t_pre)
        return out
