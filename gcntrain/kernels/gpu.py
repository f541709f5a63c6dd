"""The K1 product ``Y = S @ X`` on a GPU through cuSPARSE's generic SpMM
(``cupyx.cusparse.spmm``), with the matrix resident: `CsrOnDevice` (``pip install
gcntrain[gpu]``).

NEVER RUN ON A GPU.  No machine with a GPU was available when this was written: the
CuPy-specific lines (`CupyEngine`, `available`'s CuPy branch) have never executed;
docs/gpu.md lists them.  What is not CuPy-specific runs in the ordinary tests on NumPy
through `HostEngine`, an engine that keeps ``cupyx.cusparse.spmm``'s documented contract
(``b`` and ``c`` Fortran-ordered, ``c`` written in place): the 32-bit index conversion and
its checks, the operand layout, the build-once matrix and the preallocated outputs.

Why not the old one-shot function: ``cupyx.scipy.sparse``'s ``csr @ dense`` measured
20.1 ms where ``torch.sparse.mm`` took 2.1 ms (1M x 1M, 16 per row, width 64, float32, H100;
issue 37), and rebuilding the matrix every call 48.2 ms.  `spmm_csr_dense_gpu` remains as
a one-shot convenience over `CsrOnDevice`.

CuPy is imported lazily inside `CupyEngine`, so this module imports without it, and the
package never imports this module at import time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

#: the largest row count, column count and stored-entry count of 32-bit CSR indices
INT32_LIMIT = 2**31 - 1

#: how a row-major (C-ordered) X meets cuSPARSE's Fortran-ordered ``b``:
#: ``transb``: X's transpose *is* a Fortran-ordered array, passed with ``transb=True`` (no
#: copy); ``copy``: X copied into a preallocated Fortran-ordered buffer (one copy per call)
LAYOUTS = ("transb", "copy")


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


def csr_int32(indptr, indices, data, n_cols: int, dtype) -> tuple[np.ndarray, ...]:
    """The host CSR arrays as cuSPARSE takes them: int32 indptr and indices, values in
    `dtype`, checked.

    Parameters
    ----------
    indptr, indices, data : array-like
        CSR arrays of S (n rows, nnz stored entries, any integer type).
    n_cols : int
        Columns of S (rows of X).
    dtype : float32 or float64, the computation's type.

    Returns
    -------
    (indptr int32, indices int32, data dtype), C-contiguous.

    Raises
    ------
    ValueError
        Sizes that 32-bit indices cannot hold, a malformed CSR (indptr not starting at 0,
        decreasing or not ending at nnz; a column outside ``0..n_cols-1``), a non-float
        `dtype`.
    """
    dtype = np.dtype(dtype)
    if dtype not in (np.float32, np.float64):
        raise ValueError(f"cuSPARSE SpMM here takes float32 or float64, not {dtype}")
    indptr = np.asarray(indptr)
    indices = np.asarray(indices)
    n, nnz = int(indptr.shape[0]) - 1, int(indices.shape[0])
    if n < 0:
        raise ValueError("indptr must hold at least one entry")
    if max(n, int(n_cols), nnz) > INT32_LIMIT:
        raise ValueError(
            f"32-bit CSR indices cannot hold {n} rows, {n_cols} columns, {nnz} entries"
        )
    if int(indptr[0]) != 0 or int(indptr[-1]) != nnz or np.any(np.diff(indptr) < 0):
        raise ValueError("malformed CSR: indptr must rise from 0 to the number of entries")
    if nnz and (int(indices.min()) < 0 or int(indices.max()) >= int(n_cols)):
        raise ValueError(f"malformed CSR: a column index outside 0..{int(n_cols) - 1}")
    if np.asarray(data).shape[0] != nnz:
        raise ValueError("malformed CSR: data and indices differ in length")
    return (
        np.ascontiguousarray(indptr, dtype=np.int32),
        np.ascontiguousarray(indices, dtype=np.int32),
        np.ascontiguousarray(data, dtype=dtype),
    )


class HostEngine:
    """``cupyx.cusparse.spmm``'s contract on the host (NumPy/SciPy), for the tests: the
    same operand checks, ``c`` written in place.  `builds` and `calls` count matrices
    built and products run."""

    xp = np

    def __init__(self) -> None:
        self.builds = 0
        self.calls = 0

    def asarray(self, a):
        return np.asarray(a)

    def matrix(self, indptr, indices, data, shape):
        import scipy.sparse as sp

        self.builds += 1
        m = sp.csr_matrix((data, indices, indptr), shape=shape)
        if not m.has_canonical_format:  # as cupyx.cusparse.spmm requires
            m = m.copy()  # summed in a copy: the caller's arrays stay as they are
            m.sum_duplicates()
        return m

    def empty_f(self, shape, dtype):
        return np.empty(shape, dtype=dtype, order="F")

    def spmm(self, a, b, c, transb: bool) -> None:
        if not b.flags.f_contiguous or not c.flags.f_contiguous:
            raise ValueError("expected F-contiguous b and c (cupyx.cusparse.spmm)")
        self.calls += 1
        c[...] = a @ (b.T if transb else b)


class CupyEngine:  # NEVER RUN on a GPU (docs/gpu.md)
    """The GPU: a ``cupyx.scipy.sparse.csr_matrix`` with int32 indices, products through
    ``cupyx.cusparse.spmm`` (cuSPARSE generic SpMM).  NEVER RUN (docs/gpu.md)."""

    def __init__(self) -> None:
        if not available():
            raise RuntimeError("no usable GPU: install cupy (gcntrain[gpu]) on a machine with CUDA")
        import cupy
        import cupyx.cusparse
        import cupyx.scipy.sparse

        if not cupyx.cusparse.check_availability("spmm"):
            raise RuntimeError("this CuPy / CUDA has no cuSPARSE generic SpMM")
        self.cupy, self.cusparse, self.sparse = cupy, cupyx.cusparse, cupyx.scipy.sparse
        self.xp = cupy

    def asarray(self, a):
        return self.cupy.asarray(a)

    def matrix(self, indptr, indices, data, shape):
        cp = self.cupy
        m = self.sparse.csr_matrix(
            (cp.asarray(data), cp.asarray(indices), cp.asarray(indptr)), shape=shape
        )
        if not m.has_canonical_format:  # spmm refuses unsorted or duplicate columns
            m.sum_duplicates()
        return m

    def empty_f(self, shape, dtype):
        return self.cupy.empty(shape, dtype=dtype, order="F")

    def spmm(self, a, b, c, transb: bool) -> None:
        self.cusparse.spmm(a, b, c=c, alpha=1, beta=0, transb=transb)


class CsrOnDevice:
    """S resident on the device, built once (int32 indices, `csr_int32`), and ``S @ X``
    into output buffers allocated once per width.

    Parameters
    ----------
    indptr, indices, data : CSR arrays of S (host arrays).
    n_cols : columns of S.
    dtype : float32 or float64.
    engine : `CupyEngine` (default; NEVER RUN) or `HostEngine` (tests).
    layout : one of `LAYOUTS` (the GPU session measures which is faster).

    Notes
    -----
    The result is Fortran-ordered (cuSPARSE writes ``c`` column-major); it is the same
    buffer for every product of the same width, overwritten by the next one: copy it to
    keep it.
    """

    def __init__(self, indptr, indices, data, n_cols: int, dtype, engine=None, layout="transb"):
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
        self.engine = CupyEngine() if engine is None else engine
        self.dtype = np.dtype(dtype)
        ip, ix, dv = csr_int32(indptr, indices, data, n_cols, self.dtype)
        self.shape = (int(ip.shape[0]) - 1, int(n_cols))
        self.nnz = int(ix.shape[0])
        self.layout = layout
        self.matrix = self.engine.matrix(ip, ix, dv, self.shape)
        self._out: dict[int, Any] = {}
        self._staging: dict[int, Any] = {}

    def output(self, width: int):
        """The preallocated (Fortran-ordered) output of width `width`."""
        out = self._out.get(width)
        if out is None:
            out = self._out[width] = self.engine.empty_f((self.shape[0], width), self.dtype)
        return out

    def operand(self, X):
        """(b, transb): `X` as ``cupyx.cusparse.spmm`` takes it, without a copy where the
        layout allows (a C-ordered X is its transpose Fortran-ordered)."""
        if X.ndim != 2 or X.shape[0] != self.shape[1]:
            raise ValueError(f"X must be {self.shape[1]} x f, got shape {tuple(X.shape)}")
        if X.dtype != self.dtype:
            raise ValueError(f"X must be {self.dtype}, got {X.dtype}")
        if X.flags.f_contiguous:
            return X, False
        if self.layout == "transb" and X.flags.c_contiguous:
            return X.T, True
        width = int(X.shape[1])
        buf = self._staging.get(width)
        if buf is None:
            buf = self._staging[width] = self.engine.empty_f(X.shape, self.dtype)
        buf[...] = X
        return buf, False

    def __matmul__(self, X):
        """``S @ X`` (X on the device, `dtype`), into `output`; returns that buffer."""
        b, transb = self.operand(X)
        c = self.output(int(X.shape[1]))
        if self.nnz == 0 or self.shape[0] == 0:
            c[...] = 0
            return c
        self.engine.spmm(self.matrix, b, c, transb)
        return c


def spmm_csr_dense_gpu(indptr: Any, indices: Any, data: Any, X: Any) -> Any:
    """One-shot ``A @ X`` on the GPU (builds the matrix, so slow when repeated: keep a
    `CsrOnDevice` instead).  NEVER RUN past the availability check (docs/gpu.md).

    Parameters
    ----------
    indptr, indices, data : numpy.ndarray or cupy.ndarray
        CSR arrays of A (n rows); ``data`` is cast to X's dtype.
    X : numpy.ndarray or cupy.ndarray
        Dense m x f (float32 or float64); A has m columns.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        n x f result, a NumPy array when X is a NumPy array, else a C-ordered CuPy array.

    Raises
    ------
    RuntimeError
        When no GPU is usable (see `available`).
    """
    engine = CupyEngine()
    on_host = isinstance(X, np.ndarray)
    Xd = engine.asarray(X)
    host = engine.cupy.asnumpy  # the CSR arrays may be given on either side
    A = CsrOnDevice(host(indptr), host(indices), host(data), Xd.shape[0], Xd.dtype, engine)
    Y = A @ Xd
    return engine.cupy.asnumpy(Y) if on_host else engine.cupy.ascontiguousarray(Y)
