"""Integer quantization of message rows with stochastic rounding (SuperGCN section 6).

A row of a node-wise matrix is cut into groups of `group` columns (the whole row: per-row
parameters); each group gets a zero point ``Z = min`` and a scale ``S = (max - min) /
(2**bits - 1)`` (float32), and every value becomes ``q = floor((x - Z) / S + u)`` clipped to
``[0, 2**bits - 1]``, with ``u`` uniform in [0, 1) drawn from the counter-based hash of
(seed, stream, GLOBAL row id, GLOBAL column) of `gcntrain.kernels.dropout`: unbiased
(E[q S + Z] = x inside the range), reproducible for a seed, and independent of how rows are
distributed or messages are packed.  A group whose values are all equal has S = 0 and
dequantizes to Z exactly.

Values are packed little-end first: ``8 // bits`` values per byte (four 2-bit values), column
j of a row in byte ``j // (8 // bits)`` at bit ``(j % (8 // bits)) * bits``; a row takes
``packed_width(ncols, bits)`` bytes.  Dequantization is ``q * S + Z``.

Quantizing computes each row's parameters and its packed bytes in one pass over the row
(the row stays in cache: SuperGCN's fused kernel, section 7.3 (2)).  Row-parallel; callers
preallocate.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from gcntrain.kernels.dropout import _GAMMA, _mix, _row_key

#: bit widths supported (32 = no quantization, handled by callers)
BITS = (2, 4, 8)
_U53 = 1.0 / 9007199254740992.0  # 2**-53
_S11 = np.uint64(11)


def packed_width(ncols: int, bits: int) -> int:
    """Bytes of one packed row of `ncols` values."""
    per = 8 // int(bits)
    return -(-int(ncols) // per)


def num_groups(ncols: int, group: int) -> int:
    """Parameter groups of a row (`group` <= 0: one group per row)."""
    if group <= 0 or group >= ncols:
        return 1 if ncols else 0
    return -(-int(ncols) // int(group))


@njit(parallel=True, nogil=True, cache=True)
def quantize_rows(X, rows, bits, group, seed, stream, col0, zero, scale, out):  # pragma: no cover
    """Quantize and pack every row of X (float32/float64, n x f).

    Parameters
    ----------
    X : (n, f) values
    rows : int64 (n,) global row ids (the rounding stream)
    bits : 2, 4 or 8
    group : columns per parameter group (f: per row)
    seed, stream : uint64 key of the rounding stream
    col0 : global id of X's first column
    zero, scale : float32 (n, groups) outputs: zero points and scales
    out : uint8 (n, packed_width(f, bits)) output
    """
    n, f = X.shape
    per = 8 // bits
    top = (1 << bits) - 1
    for i in prange(n):
        key = _row_key(seed, stream, np.uint64(rows[i]))
        for b in range(out.shape[1]):
            out[i, b] = 0
        g = 0
        for start in range(0, f, group):
            stop = min(start + group, f)
            lo = X[i, start]
            hi = X[i, start]
            for j in range(start + 1, stop):
                v = X[i, j]
                if v < lo:
                    lo = v
                if v > hi:
                    hi = v
            z = np.float32(lo)
            s = np.float32((hi - lo) / top)
            zero[i, g] = z
            scale[i, g] = s
            inv = 0.0 if s == 0 else 1.0 / np.float64(s)
            for j in range(start, stop):
                h = _mix(key + np.uint64(col0 + j) * _GAMMA)
                u = np.float64(h >> _S11) * _U53
                q = int(np.floor((np.float64(X[i, j]) - np.float64(z)) * inv + u))
                if q < 0:
                    q = 0
                elif q > top:
                    q = top
                out[i, j // per] |= np.uint8(q << ((j % per) * bits))
            g += 1
    return out


@njit(parallel=True, nogil=True, cache=True)
def dequantize_rows(packed, bits, group, zero, scale, out):  # pragma: no cover - jitted
    """out[i, j] = q[i, j] * scale[i, g] + zero[i, g] for the packed rows (out: n x f)."""
    n, f = out.shape
    per = 8 // bits
    top = (1 << bits) - 1
    for i in prange(n):
        for j in range(f):
            g = j // group
            q = (packed[i, j // per] >> ((j % per) * bits)) & top
            out[i, j] = q * scale[i, g] + zero[i, g]
    return out


def quantize(
    X: np.ndarray,
    rows: np.ndarray,
    bits: int,
    group: int = 0,
    *,
    seed: int = 0,
    stream: int = 0,
    col0: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(packed uint8 (n, packed_width), zero float32 (n, g), scale float32 (n, g)) of X's rows;
    `group` <= 0: one parameter group per row."""
    if bits not in BITS:
        raise ValueError(f"bits must be one of {BITS}, got {bits}")
    X = np.ascontiguousarray(X)
    n, f = X.shape
    grp = f if group <= 0 or group >= f else int(group)
    ng = num_groups(f, group)
    zero = np.empty((n, ng), dtype=np.float32)
    scale = np.empty((n, ng), dtype=np.float32)
    out = np.empty((n, packed_width(f, bits)), dtype=np.uint8)
    if n and f:
        quantize_rows(
            X,
            np.ascontiguousarray(rows, dtype=np.int64),
            int(bits),
            max(grp, 1),
            np.uint64(seed),
            np.uint64(stream),
            int(col0),
            zero,
            scale,
            out,
        )
    return out, zero, scale


def dequantize(
    packed: np.ndarray,
    zero: np.ndarray,
    scale: np.ndarray,
    bits: int,
    ncols: int,
    group: int = 0,
    dtype=np.float32,
) -> np.ndarray:
    """The (n, ncols) values of packed rows (the inverse map of `quantize`, up to rounding)."""
    if bits not in BITS:
        raise ValueError(f"bits must be one of {BITS}, got {bits}")
    n = packed.shape[0]
    grp = ncols if group <= 0 or group >= ncols else int(group)
    out = np.empty((n, ncols), dtype=dtype)
    if n and ncols:
        dequantize_rows(packed, int(bits), max(grp, 1), zero, scale, out)
    return out
