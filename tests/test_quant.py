"""Quantize / dequantize kernels (`gcntrain.kernels.quant`): a NumPy reference bit for bit,
error bounds, unbiased stochastic rounding, reproducibility, packing, degenerate groups."""

from __future__ import annotations

import numpy as np
import pytest

from gcntrain.kernels.dropout import dropout_hash_rows
from gcntrain.kernels.quant import dequantize, num_groups, packed_width, quantize


def reference(X, rows, bits, group, seed, stream, col0=0):
    """Quantization written out in NumPy (float64 arithmetic as the kernel's)."""
    n, f = X.shape
    grp = f if group <= 0 or group >= f else group
    top = (1 << bits) - 1
    h = np.empty((n, f), dtype=np.uint64)
    dropout_hash_rows(rows, f, np.uint64(seed), np.uint64(stream), h, col0)
    u = (h >> np.uint64(11)).astype(np.float64) * 2.0**-53
    q = np.empty((n, f), dtype=np.int64)
    zs, ss = [], []
    for start in range(0, f, grp):
        blk = X[:, start : start + grp]
        z = blk.min(axis=1).astype(np.float32)
        s = ((blk.max(axis=1) - blk.min(axis=1)) / top).astype(np.float32)
        inv = np.where(s == 0, 0.0, 1.0 / np.where(s == 0, 1, s).astype(np.float64))
        t = (blk.astype(np.float64) - z[:, None].astype(np.float64)) * inv[:, None]
        q[:, start : start + grp] = np.clip(np.floor(t + u[:, start : start + grp]), 0, top)
        zs.append(z)
        ss.append(s)
    per = 8 // bits
    packed = np.zeros((n, packed_width(f, bits)), dtype=np.uint8)
    for j in range(f):
        packed[:, j // per] |= (q[:, j] << ((j % per) * bits)).astype(np.uint8)
    return packed, np.stack(zs, 1), np.stack(ss, 1), q


@pytest.mark.parametrize("bits", [2, 4, 8])
@pytest.mark.parametrize("group", [0, 3, 5])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_equals_numpy_reference_and_error_is_within_one_step(bits, group, dtype):
    rng = np.random.default_rng(bits * 10 + group)
    X = (rng.standard_normal((37, 11)) * rng.uniform(0.1, 10, (37, 1))).astype(dtype)
    rows = rng.permutation(1000)[:37].astype(np.int64)
    packed, zero, scale = quantize(X, rows, bits, group, seed=7, stream=3, col0=5)
    rp, rz, rs, _ = reference(X, rows, bits, group, 7, 3, col0=5)
    assert packed.shape == (37, packed_width(11, bits)) and zero.shape == (
        37,
        num_groups(11, group),
    )
    assert np.array_equal(packed, rp) and np.array_equal(zero, rz) and np.array_equal(scale, rs)
    Y = dequantize(packed, zero, scale, bits, 11, group, dtype=np.float64)
    step = np.repeat(scale, group if 0 < group < 11 else 11, axis=1)[:, :11]
    assert np.all(np.abs(Y - X) <= step * (1 + 1e-5) + 1e-6 * np.abs(X))


@pytest.mark.parametrize("bits", [2, 4, 8])
def test_stochastic_rounding_is_unbiased_and_reproducible(bits):
    rng = np.random.default_rng(1)
    X = rng.standard_normal((4, 64))
    rows = np.arange(4, dtype=np.int64)
    draws = np.stack(
        [
            dequantize(*quantize(X, rows, bits, seed=11, stream=s), bits, 64, dtype=np.float64)
            for s in range(400)
        ]
    )
    _, _, scale = quantize(X, rows, bits)
    # per element: mean of 400 draws within 5 standard errors (variance <= S^2 / 4)
    se = scale / 2 / np.sqrt(400)
    assert np.all(np.abs(draws.mean(0) - X) <= 5 * se + 1e-6)
    a = quantize(X, rows, bits, seed=11, stream=2)[0]
    assert np.array_equal(a, quantize(X, rows, bits, seed=11, stream=2)[0])
    assert not np.array_equal(a, quantize(X, rows, bits, seed=12, stream=2)[0])


def test_grid_values_and_constant_groups_are_exact_and_rows_independent():
    bits = 4
    X = np.array([[0.0, 1.5, 3.0, 22.5], [2.0, 2.0, 2.0, 2.0]], dtype=np.float32)
    rows = np.array([5, 9], dtype=np.int64)
    packed, zero, scale = quantize(X, rows, bits, seed=3)
    assert np.array_equal(dequantize(packed, zero, scale, bits, 4), X)
    assert scale[1, 0] == 0 and zero[1, 0] == 2
    # a row's bytes depend on its global id, not on which other rows share the message
    alone = quantize(X[1:], rows[1:], bits, seed=3)[0]
    assert np.array_equal(alone[0], packed[1])


def test_packing_layout_two_bit():
    X = np.array([[0.0, 1.0, 2.0, 3.0, 3.0]])
    packed, _, _ = quantize(X, np.array([0]), 2)
    # q = 0, 1, 2, 3 in byte 0 (low bits first), q = 3 in byte 1
    assert packed.tolist() == [[0b11100100, 0b11]]


def test_bad_bit_width():
    with pytest.raises(ValueError, match="bits"):
        quantize(np.zeros((1, 2)), np.zeros(1, np.int64), 3)


def _group_scale(X, counts, group, bits):
    """Per-row scale of its (block, row group) from the definition."""
    out, start = np.empty(X.shape[0]), 0
    for c in counts:
        size = c if group <= 0 else group
        for a in range(start, start + c, max(size, 1)):
            b = min(a + size, start + c)
            out[a:b] = (X[a:b].max() - X[a:b].min()) / ((1 << bits) - 1)
        start += c
    return out


@pytest.mark.parametrize("bits", [2, 4, 8])
@pytest.mark.parametrize("group", [1, 3, 0])
def test_blocks_stream_layout_step_bound_and_unbiased(bits, group):
    """Blocks of rows per destination in one byte stream (rows of a group share a zero point
    and scale; 0: one pair per block): byte counts as `block_bytes`, every value within one
    step of its group, the mean error over many seeded draws within 3 standard errors of 0;
    per-row groups equal `quantize` bit for bit."""
    from gcntrain.kernels.quant import block_bytes, dequantize_blocks, quantize_blocks

    rng = np.random.default_rng(bits + group)
    X = rng.standard_normal((23, 13)) * rng.uniform(0.1, 5.0, (23, 1))
    rows = np.arange(100, 123, dtype=np.int64)
    counts = np.array([5, 0, 10, 8])
    vb, pb = block_bytes(counts, 13, bits, group)
    step = _group_scale(X, counts, group, bits)
    draws = []
    for stream in range(200):
        buf, nbytes = quantize_blocks(X, rows, counts, bits, group, seed=3, stream=stream)
        assert buf.size == nbytes.sum() and np.array_equal(nbytes, vb + pb)
        Y = dequantize_blocks(buf, counts, 13, bits, group, np.float64)
        assert np.all(np.abs(Y - X) <= step[:, None] * (1 + 1e-6) + 1e-6)
        draws.append(Y - X)
    err = np.stack(draws)
    # the mean error over every draw and element within 3 standard errors of 0; per element
    # within 5 of its largest possible standard error (variance <= step^2 / 4)
    assert abs(err.mean()) <= 3 * err.std() / np.sqrt(err.size)
    bound = 5 * step[:, None] / 2 / np.sqrt(err.shape[0])
    assert np.all(np.abs(err.mean(axis=0)) <= bound + 1e-6)
    if group == 1:
        packed, zero, scale = quantize(X, rows, bits, 0, seed=3, stream=7)
        buf, _ = quantize_blocks(X, rows, counts, bits, 1, seed=3, stream=7)
        Y = dequantize_blocks(buf, counts, 13, bits, 1, np.float64)
        assert np.array_equal(Y, dequantize(packed, zero, scale, bits, 13, 0, np.float64))
