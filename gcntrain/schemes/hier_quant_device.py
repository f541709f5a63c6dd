"""Int2/4/8 message quantization on a device (issue 37, docs/gpu.md): `DeviceQuant`, the
array-module form of `gcntrain.kernels.quant.quantize_blocks` and `dequantize_blocks`.

Written against ``compute.xp`` (NumPy on the host emulation, CuPy on a GPU): no device code
is imported.  The byte stream is the host kernels' (`quantize_blocks`): per destination
block ``[packed rows | float32 zero points | float32 scales]``, so the messages, their
counted bytes and the values a receiver dequantizes are the CPU run's.  Each step follows
the Numba kernels' operations in their order:

* parameters: the row minimum and maximum in the values' dtype; per row (one row per
  group, the fused kernel `quantize_rows`) ``Z = float32(min)`` and ``S = float32((max -
  min) / top)`` with the division in float64; per group of rows (`quantize_rows_given`'s
  caller) the group's minimum and maximum, ``S = float32((max - float(Z)) / top)`` in the
  values' dtype;
* rounding: ``q = floor((float64(x) - float64(Z)) * inv + u)`` clipped to ``[0, top]``,
  ``inv = 1 / float64(S)`` (0 where S is 0), ``u`` the top 53 bits of the counter hash of
  (seed, stream, global row, column) times 2**-53 (`ArrayCompute._hash`, the dropout
  hash the kernels use);
* packing: column j of a row at bit ``(j % per) * bits`` of byte ``j // per``;
* dequantization: ``float64(q) * float64(S) + float64(Z)`` rounded once to the dtype (the
  kernel's int64 * float32 arithmetic is float64).

So on the emulation the device stream and the dequantized rows equal the host kernels'
bit for bit (`tests/test_hier_quant_device.py`).  A NaN in a message is not mirrored (the
kernel's ``v < lo`` skips it, the array minimum propagates it), nor is the sign of a zero
minimum (which only changes the sent zero point's bits, not a dequantized value).  On a GPU
the same operations are IEEE float64 and integer arithmetic, expected to match exactly too,
but that has never run (docs/gpu.md, "Never run on a GPU").

The layout of a stream (which source byte goes where) depends only on the block row
counts, the width, the bits and the group size, so it is computed once on the host
(`BlockPlan`) and its index arrays are copied to the device once; a stream is then one
gather (quantize) or one scatter (dequantize) of bytes.
"""

from __future__ import annotations

import numpy as np

from gcntrain.kernels.quant import BITS, block_bytes, block_groups, packed_width

#: 2**-53: the uniform of the top 53 bits of a 64-bit hash
_U53 = 1.0 / 9007199254740992.0


class BlockPlan:
    """Where each byte of a `quantize_blocks` stream of blocks of ``counts[d]`` rows of
    `ncols` values comes from (host arrays, pure).

    The device code builds a flat array ``[zero points (4 G bytes) | scales (4 G) | packed
    rows (n * pw)]`` (G parameter groups, n rows of pw bytes; float32 parameters first, so
    their views are aligned) and the stream is ``flat[perm]``.

    Attributes
    ----------
    n, pw, groups : rows, bytes per packed row, parameter groups.
    gid : int64 (n,), the parameter group of every row.
    perm : int64, the flat position of every stream byte (a permutation of the flat array).
    nbytes : int64 (P,), the bytes of each block (`block_bytes`).
    """

    def __init__(self, counts, ncols: int, bits: int, rows_per_group: int):
        counts = np.asarray(counts, dtype=np.int64)
        self.n = int(counts.sum())
        self.pw = packed_width(ncols, bits)
        ngroups = block_groups(counts, rows_per_group)
        G = self.groups = int(ngroups.sum())
        block = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
        start = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
        gstart = np.concatenate(([0], np.cumsum(ngroups)[:-1])).astype(np.int64)
        local = np.arange(self.n, dtype=np.int64) - start[block]
        step = local // int(rows_per_group) if rows_per_group > 0 else 0
        self.gid = (gstart[block] + step).astype(np.int64)
        pieces, row, g = [], 0, 0
        for c, k in zip(counts.tolist(), ngroups.tolist()):
            if c:
                pieces += [
                    8 * G + row * self.pw + np.arange(c * self.pw, dtype=np.int64),
                    4 * g + np.arange(4 * k, dtype=np.int64),
                    4 * G + 4 * g + np.arange(4 * k, dtype=np.int64),
                ]
            row += c
            g += k
        self.perm = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
        vb, pb = block_bytes(counts, ncols, bits, rows_per_group)
        self.nbytes = vb + pb


class DeviceQuant:
    """`quantize_blocks` / `dequantize_blocks` on the device of `compute` (an
    `gcntrain.model.compute.ArrayCompute`; module docstring).  Plans are kept per (block
    counts, width, bits, group size): their index arrays go to the device once."""

    def __init__(self, compute):
        self.compute = compute
        self.xp = compute.xp
        self.backend = compute.backend
        self._plans: dict = {}

    def plan(self, counts, ncols: int, bits: int, rows_per_group: int):
        """(`BlockPlan`, its perm on the device, its gid on the device), made once."""
        if bits not in BITS:
            raise ValueError(f"bits must be one of {BITS}, got {bits}")
        key = (tuple(np.asarray(counts).tolist()), int(ncols), int(bits), int(rows_per_group))
        hit = self._plans.get(key)
        if hit is None:
            p = BlockPlan(counts, ncols, bits, rows_per_group)
            hit = (p, self.backend.to_device(p.perm), self.backend.to_device(p.gid))
            self._plans[key] = hit
        return hit

    def _parameters(self, X, gid, groups: int, top: int, rows_per_group: int):
        """(zero points, scales) per group and per row, float32 device arrays."""
        xp = self.xp
        lo, hi = X.min(axis=1), X.max(axis=1)
        if rows_per_group == 1:  # the fused kernel: per row, (max - min) / top in float64
            z = lo.astype(xp.float32)
            s = ((hi - lo).astype(xp.float64) / float(top)).astype(xp.float32)
            return z, s, z, s
        zmin = xp.full(groups, xp.inf, dtype=X.dtype)
        xp.minimum.at(zmin, gid, lo)
        hmax = xp.full(groups, -xp.inf, dtype=X.dtype)
        xp.maximum.at(hmax, gid, hi)
        zg = zmin.astype(xp.float32)
        sg = ((hmax - zg.astype(hmax.dtype)) / hmax.dtype.type(top)).astype(xp.float32)
        return zg, sg, zg[gid], sg[gid]

    def quantize_blocks(self, X, rows, counts, bits: int, rows_per_group: int, seed, stream):
        """(uint8 device stream, int64 host bytes per block) of the device rows `X` (n x f,
        float32/float64, f >= 1) cut into blocks of ``counts[d]`` rows, as
        `gcntrain.kernels.quant.quantize_blocks` (`rows`: the rows' global ids, a uint64
        device array; `seed`, `stream`: the rounding stream)."""
        xp = self.xp
        n, f = X.shape
        plan, perm, gid = self.plan(counts, f, bits, rows_per_group)
        if n == 0:
            return xp.zeros(0, dtype=xp.uint8), plan.nbytes
        top = (1 << bits) - 1
        zg, sg, zr, sr = self._parameters(X, gid, plan.groups, top, rows_per_group)
        s64 = sr.astype(xp.float64)
        nz = s64 != 0
        inv = xp.where(nz, 1.0 / xp.where(nz, s64, 1.0), 0.0)
        cols = xp.arange(f, dtype=xp.uint64)
        h = self.compute._hash(rows[:, None], cols[None, :], int(seed), int(stream))
        u = (h >> xp.uint64(11)).astype(xp.float64) * _U53
        x = X.astype(xp.float64) - zr.astype(xp.float64)[:, None]
        q = xp.clip(xp.floor(x * inv[:, None] + u), 0, top).astype(xp.uint8)
        packed = self._pack(q, plan.pw, bits)
        flat = xp.concatenate([zg.view(xp.uint8), sg.view(xp.uint8), packed.reshape(-1)])
        return flat[perm], plan.nbytes

    def _pack(self, q, pw: int, bits: int):
        """(n, pw) uint8: ``8 // bits`` values per byte, the first at the lowest bits."""
        xp = self.xp
        per = 8 // bits
        if per == 1:
            return q
        n, f = q.shape
        if pw * per > f:
            q = xp.concatenate([q, xp.zeros((n, pw * per - f), dtype=xp.uint8)], axis=1)
        q = q.reshape(n, pw, per)
        packed = q[:, :, 0].copy()
        for k in range(1, per):
            packed |= q[:, :, k] << xp.uint8(k * bits)
        return packed

    def dequantize_blocks(self, buf, counts, ncols: int, bits: int, rows_per_group: int, dtype):
        """The (sum(counts), ncols) device rows of the device stream `buf`, as
        `gcntrain.kernels.quant.dequantize_blocks`."""
        xp = self.xp
        plan, perm, gid = self.plan(counts, ncols, bits, rows_per_group)
        n, G = plan.n, plan.groups
        if n == 0:
            return xp.zeros((0, int(ncols)), dtype=dtype)
        flat = xp.empty(perm.shape[0], dtype=xp.uint8)
        flat[perm] = buf
        zr = flat[: 4 * G].view(xp.float32)[gid].astype(xp.float64)
        sr = flat[4 * G : 8 * G].view(xp.float32)[gid].astype(xp.float64)
        packed = flat[8 * G :].reshape(n, plan.pw)
        per, top = 8 // bits, xp.uint8((1 << bits) - 1)
        parts = [(packed >> xp.uint8(k * bits)) & top for k in range(per)]
        q = xp.stack(parts, axis=2).reshape(n, plan.pw * per)[:, :ncols]
        return (q.astype(xp.float64) * sr[:, None] + zr[:, None]).astype(dtype)
