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


@njit(nogil=True, cache=True)
def _round_pack(X, i, start, stop, key, z, s, bits, col0, out):  # pragma: no cover - jitted
    """Stochastic rounding of ``X[i, start:stop]`` with zero point z and scale s (float32),
    packed into row i of out (the caller zeroed it); the uniform of column j comes from the
    row's `key` and the global column ``col0 + j``."""
    per = 8 // bits
    top = (1 << bits) - 1
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
            _round_pack(X, i, start, stop, key, z, s, bits, col0, out)
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


@njit(parallel=True, nogil=True, cache=True)
def quantize_rows_given(X, rows, bits, seed, stream, col0, zero, scale, out):  # pragma: no cover
    """Quantize and pack every row of X with given per-row parameters (zero, scale: float32
    (n,)), the stochastic rounding of `quantize_rows`."""
    n, f = X.shape
    for i in prange(n):
        key = _row_key(seed, stream, np.uint64(rows[i]))
        for b in range(out.shape[1]):
            out[i, b] = 0
        _round_pack(X, i, 0, f, key, zero[i], scale[i], bits, col0, out)
    return out


def block_groups(counts: np.ndarray, rows_per_group: int) -> np.ndarray:
    """Parameter groups of each block of `counts` rows: ``ceil(rows / rows_per_group)``, or
    one per non-empty block when `rows_per_group` <= 0."""
    counts = np.asarray(counts, dtype=np.int64)
    if rows_per_group <= 0:
        return (counts > 0).astype(np.int64)
    return -(-counts // int(rows_per_group))


def block_bytes(counts: np.ndarray, ncols: int, bits: int, rows_per_group: int):
    """(value bytes, parameter bytes) of each block of `counts` rows of `ncols` values in the
    layout of `quantize_blocks`."""
    counts = np.asarray(counts, dtype=np.int64)
    return (
        counts * packed_width(ncols, bits),
        block_groups(counts, rows_per_group) * 2 * 4,
    )


def quantize_blocks(
    X: np.ndarray,
    rows: np.ndarray,
    counts: np.ndarray,
    bits: int,
    rows_per_group: int = 1,
    *,
    seed: int = 0,
    stream: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Quantize the rows of X, cut into consecutive blocks of ``counts[d]`` rows (one per
    destination), into one byte stream.

    Each block is ``[packed rows | zero points | scales]``: its rows in groups of
    `rows_per_group` (<= 0: the whole block) share a float32 zero point (their minimum) and
    scale ((max - min) / (2**bits - 1)); rounding as `quantize` (global row ids `rows`).
    Returns (uint8 stream, bytes per block).
    """
    if bits not in BITS:
        raise ValueError(f"bits must be one of {BITS}, got {bits}")
    X = np.ascontiguousarray(X)
    counts = np.asarray(counts, dtype=np.int64)
    n, f = X.shape
    pw = packed_width(f, bits)
    ngroups = block_groups(counts, rows_per_group)
    packed = np.empty((n, pw), dtype=np.uint8)
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    if rows_per_group == 1:  # fused: each row's parameters and bytes in one pass
        zg = np.empty((n, 1), dtype=np.float32)
        sg = np.empty((n, 1), dtype=np.float32)
        if n and f:
            quantize_rows(X, rows, bits, f, np.uint64(seed), np.uint64(stream), 0, zg, sg, packed)
        zg, sg = zg[:, 0], sg[:, 0]
    else:
        block = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
        start = np.concatenate(([0], np.cumsum(counts)[:-1]))
        gstart = np.concatenate(([0], np.cumsum(ngroups)[:-1]))
        local = np.arange(n, dtype=np.int64) - start[block]
        gid = gstart[block] + (local // rows_per_group if rows_per_group > 0 else 0)
        lo = X.min(axis=1) if f else np.zeros(n, X.dtype)
        hi = X.max(axis=1) if f else np.zeros(n, X.dtype)
        first = np.flatnonzero(np.r_[True, gid[1:] != gid[:-1]]) if n else np.zeros(0, np.int64)
        zg = np.minimum.reduceat(lo, first).astype(np.float32) if n else np.zeros(0, np.float32)
        hg = np.maximum.reduceat(hi, first) if n else np.zeros(0, X.dtype)
        top = (1 << bits) - 1
        sg = ((hg - zg.astype(hg.dtype)) / top).astype(np.float32)
        if n and f:
            quantize_rows_given(
                X, rows, bits, np.uint64(seed), np.uint64(stream), 0, zg[gid], sg[gid], packed
            )
    out, pos, gpos = [], 0, 0
    for c, g in zip(counts.tolist(), ngroups.tolist()):
        if c:
            out += [
                packed[pos : pos + c].reshape(-1),
                zg[gpos : gpos + g].view(np.uint8),
                sg[gpos : gpos + g].view(np.uint8),
            ]
        pos += c
        gpos += g
    stream_ = np.concatenate(out) if out else np.zeros(0, dtype=np.uint8)
    vb, pb = block_bytes(counts, f, bits, rows_per_group)
    return stream_, vb + pb


def dequantize_blocks(
    buf: np.ndarray,
    counts: np.ndarray,
    ncols: int,
    bits: int,
    rows_per_group: int = 1,
    dtype=np.float32,
) -> np.ndarray:
    """The (sum(counts), ncols) rows of a `quantize_blocks` stream of blocks of ``counts[d]``
    rows."""
    counts = np.asarray(counts, dtype=np.int64)
    pw = packed_width(ncols, bits)
    ngroups = block_groups(counts, rows_per_group)
    n = int(counts.sum())
    packed = np.empty((n, pw), dtype=np.uint8)
    zero = np.empty((n, 1), dtype=np.float32)
    scale = np.empty((n, 1), dtype=np.float32)
    pos = row = 0
    for c, g in zip(counts.tolist(), ngroups.tolist()):
        if not c:
            continue
        packed[row : row + c] = buf[pos : pos + c * pw].reshape(c, pw)
        pos += c * pw
        z = buf[pos : pos + 4 * g].copy().view(np.float32)
        s = buf[pos + 4 * g : pos + 8 * g].copy().view(np.float32)
        pos += 8 * g
        k = np.arange(c) // rows_per_group if rows_per_group > 0 else np.zeros(c, np.int64)
        zero[row : row + c, 0] = z[k]
        scale[row : row + c, 0] = s[k]
        row += c
    out = np.empty((n, ncols), dtype=dtype)
    if n and ncols:
        dequantize_rows(packed, int(bits), max(int(ncols), 1), zero, scale, out)
    return out
