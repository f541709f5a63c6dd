"""Optional CuPy twin of the SpMM kernel (``pip install gcntrain[gpu]``).

Never imported by the package at import time; CuPy itself is imported lazily inside the
functions, so this module imports without CuPy.  `available` is the only safe probe: without a
GPU ``import cupy`` may succeed while the first array operation fails.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def available() -> bool:
    """True when CuPy imports AND ``cupy.is_available()`` reports a usable GPU; never raises."""
    try:
        import cupy
    except Exception:
        return False
    try:
        return bool(cupy.is_available())
    except Exception:
        return False


def spmm_csr_dense_gpu(indptr: Any, indices: Any, data: Any, X: Any) -> Any:
    """``A @ X`` on the GPU through ``cupyx.scipy.sparse`` (cuSPARSE).

    Parameters
    ----------
    indptr, indices, data : numpy.ndarray or cupy.ndarray
        CSR arrays of A (n rows); ``data`` is cast to X's dtype.
    X : numpy.ndarray or cupy.ndarray
        Dense m x f (float32 or float64); A has m columns.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        n x f result, a NumPy array when X is a NumPy array, else a CuPy array.

    Raises
    ------
    RuntimeError
        When no GPU is usable (see `available`).
    """
    if not available():
        raise RuntimeError("no usable GPU: install cupy (gcntrain[gpu]) on a machine with CUDA")
    import cupy
    import cupyx.scipy.sparse as csp

    on_host = isinstance(X, np.ndarray)
    Xd = cupy.ascontiguousarray(cupy.asarray(X))
    n = int(indptr.shape[0]) - 1
    nnz = int(indices.shape[0])
    if nnz >= 2**31 or n >= 2**31 or Xd.shape[0] >= 2**31:
        raise ValueError("cupyx.scipy.sparse needs 32-bit indices: matrix too large")
    # cuSPARSE through cupyx uses 32-bit index arrays
    A = csp.csr_matrix(
        (
            cupy.asarray(data).astype(Xd.dtype, copy=False),
            cupy.asarray(indices).astype(cupy.int32, copy=False),
            cupy.asarray(indptr).astype(cupy.int32, copy=False),
        ),
        shape=(n, int(Xd.shape[0])),
    )
    Y = A @ Xd
    return cupy.asnumpy(Y) if on_host else Y
