"""The hier scheme's device pieces on the strict host emulation (issue 37): the array-module
Int2/4/8 quantization (`gcntrain.schemes.hier_quant_device`) equals the host kernels
(`gcntrain.kernels.quant`) byte for byte, and the joined remote product
(`gcntrain.schemes.hier_device.remote_matrix`) sums in the CPU path's order.  The MPI runs
of every hier configuration on the emulated device are in tests/test_device_schemes.py."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from gcntrain.device.emulated import EmulatedBackend
from gcntrain.kernels.quant import dequantize_blocks, quantize_blocks
from gcntrain.kernels.rows import scatter_add_rows
from gcntrain.model.compute import ArrayCompute
from gcntrain.schemes.base import csr_apply
from gcntrain.schemes.hier_device import remote_matrix
from gcntrain.schemes.hier_quant_device import DeviceQuant


def _rows(rng, counts, width, dtype):
    X = (rng.standard_normal((int(np.sum(counts)), width)) * 3).astype(dtype)
    X[1] = 0.75  # a constant row: scale 0
    X[-1, ::2] = 1e-30  # a tiny range next to large ones
    return X


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bits", [2, 4, 8])
@pytest.mark.parametrize("group", [1, 0, 3])
def test_device_quantization_equals_the_host_kernels(dtype, bits, group):
    be = EmulatedBackend(strict=True)
    quant = DeviceQuant(ArrayCompute(be))
    rng = np.random.default_rng(bits * 10 + group)
    counts = np.array([4, 0, 7, 1, 5], dtype=np.int64)
    for width in (1, 5, 16):
        X = _rows(rng, counts, width, dtype)
        ids = rng.integers(0, 1 << 40, X.shape[0])
        buf, nbytes = quantize_blocks(X, ids, counts, bits, group, seed=11, stream=70001)
        dev_ids = be.to_device(ids.astype(np.uint64))
        got, got_bytes = quant.quantize_blocks(
            be.to_device(X), dev_ids, counts, bits, group, 11, 70001
        )
        assert be.is_device(got)
        assert np.array_equal(be.fetch(got), buf), (width, "stream")
        assert np.array_equal(got_bytes, nbytes)
        host = dequantize_blocks(buf, counts, width, bits, group, dtype)
        back = quant.dequantize_blocks(be.to_device(buf), counts, width, bits, group, dtype)
        back = be.fetch(back)
        assert back.dtype == host.dtype
        assert np.array_equal(back.view(np.uint8), host.view(np.uint8)), (width, "values")
    # another stream rounds differently (the stream is used)
    other, _ = quant.quantize_blocks(be.to_device(X), dev_ids, counts, bits, group, 11, 70002)
    assert not np.array_equal(be.fetch(other), buf)


def test_device_quantization_of_no_rows():
    be = EmulatedBackend(strict=True)
    quant = DeviceQuant(ArrayCompute(be))
    counts = np.zeros(3, dtype=np.int64)
    buf, nbytes = quant.quantize_blocks(
        be.to_device(np.zeros((0, 4), np.float32)),
        be.to_device(np.zeros(0, np.uint64)),
        counts,
        2,
        1,
        0,
        0,
    )
    assert be.fetch(buf).shape == (0,) and not nbytes.any()
    out = quant.dequantize_blocks(buf, counts, 4, 2, 1, np.float32)
    assert be.is_device(out) and out.shape == (0, 4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_joined_remote_product_sums_in_the_cpu_order(dtype):
    """``[I | R_post | E_pre] @ [L; post; partial]`` equals the CPU path's
    ``L += R_post @ post`` then ``scatter_add_rows(partial)`` bit for bit (repeated
    destinations, empty rows, values of mixed magnitude)."""
    rng = np.random.default_rng(5)
    m, kpost, kpre, f = 9, 6, 7, 5
    R = sp.random(m, kpost, density=0.4, random_state=3, format="csr", dtype=np.float64)
    R.data = rng.standard_normal(R.nnz) * 10.0 ** rng.integers(-6, 6, R.nnz)
    R = R.astype(dtype)
    R.sort_indices()
    pre_idx = np.array([0, 3, 3, 8, 0, 3, 5], dtype=np.int64)
    L = (rng.standard_normal((m, f)) * 1e4).astype(dtype)
    post = (rng.standard_normal((kpost, f)) * 1e-3).astype(dtype)
    part = (rng.standard_normal((kpre, f)) * 1e3).astype(dtype)
    cpu = L.copy()
    csr_apply(R, post, cpu, accumulate=True)
    scatter_add_rows(part, pre_idx, cpu)
    J = remote_matrix(R, pre_idx, dtype)
    got = csr_apply(J, np.vstack([L, post, part]))
    assert np.array_equal(got, cpu)
    # the remote terms summed first, then added: another order, other bits here
    E = sp.csr_matrix((np.ones(kpre, dtype), (pre_idx, np.arange(kpre))), shape=(m, kpre))
    assert not np.array_equal(got, L + (R @ post + E @ part))
