"""Memory-bandwidth probe: the STREAM triad over all of Numba's threads."""

from __future__ import annotations

from numba import njit, prange


@njit(parallel=True, nogil=True, cache=True)
def triad_parallel(a, b, c, s):  # pragma: no cover - jitted
    """``a = b + s * c`` over all threads (3 x 8 bytes moved per float64 element, the
    write-allocate of `a` not counted)."""
    for i in prange(a.shape[0]):
        a[i] = b[i] + s * c[i]
