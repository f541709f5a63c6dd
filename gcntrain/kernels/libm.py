"""Element-wise ``exp`` and ``log`` of float64 arrays through libm, as the Numba kernels
compute them (``math.exp`` / ``math.log``).

NumPy's own SIMD ``exp`` and ``log`` differ from libm's in the last bit for a few per cent
of inputs, so code that must equal a Numba kernel bit for bit (the emulated device in the
tests, `gcntrain.device.emulated`) takes these instead.
"""

from __future__ import annotations

import math

from numba import njit, prange


@njit(parallel=True, nogil=True, cache=True)
def exp_into(x, out):  # pragma: no cover - jitted
    """out[i] = exp(x[i]) (1-D float64); returns out."""
    for i in prange(x.shape[0]):
        out[i] = math.exp(x[i])
    return out


@njit(parallel=True, nogil=True, cache=True)
def log_into(x, out):  # pragma: no cover - jitted
    """out[i] = log(x[i]) (1-D float64, x > 0); returns out."""
    for i in prange(x.shape[0]):
        out[i] = math.log(x[i])
    return out
