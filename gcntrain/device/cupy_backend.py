"""The GPU backend: CuPy arrays on one device, pinned host buffers from CuPy, the support
matrix resident for cuSPARSE's generic SpMM (``pip install gcntrain[gpu]``).

NEVER RUN ON A GPU.  No machine with a GPU was available when this was written: no line of
this module has executed against CuPy or CUDA (docs/gpu.md lists them; they are marked
``# pragma: no cover``).  The device code that is not CuPy-specific (the model's dropout
hash, softmax cross-entropy, Adam, ReLU, in `gcntrain.model.compute`) runs on NumPy in the
ordinary tests through `gcntrain.device.emulated.EmulatedBackend`, which offers the same
methods as this class.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from gcntrain.device.host import Backend


@dataclass
class CupyCsr:  # pragma: no cover - NEVER RUN on a GPU
    """A CSR matrix resident on the GPU: the cuSPARSE-ready matrix (int32 indices, built
    once, `gcntrain.kernels.gpu.CsrOnDevice`) and its device arrays."""

    dev: Any
    data: Any
    indices: Any
    entry_rows: Any
    shape: tuple[int, int]

    @property
    def dtype(self):
        return self.data.dtype

    def with_data(self, data) -> CupyCsr:
        """The same structure with the values `data` (a device array): a new cupyx matrix
        over the same index arrays, no host copy."""
        m = self.dev.matrix
        mat = type(m)((data, m.indices, m.indptr), shape=m.shape)
        dev = _Resident(mat)
        return CupyCsr(dev, data, self.indices, self.entry_rows, self.shape)

    def toarray(self):
        return self.dev.matrix.toarray()


@dataclass
class _Resident:  # pragma: no cover - NEVER RUN on a GPU
    matrix: Any


class CupyBackend(Backend):  # pragma: no cover - NEVER RUN on a GPU (docs/gpu.md)
    """CuPy arrays on the current device; pinned buffers from ``cupyx.empty_pinned``;
    products through cuSPARSE generic SpMM and cuBLAS.

    NEVER RUN: written without a GPU; no test has executed these methods (docs/gpu.md).
    """

    name = "gpu"

    def __init__(self, device: int = 0) -> None:
        import cupy
        import cupyx
        import cupyx.cusparse

        self.cupy, self.cupyx, self.cusparse = cupy, cupyx, cupyx.cusparse
        self.xp = cupy
        self.device = int(device)
        cupy.cuda.Device(self.device).use()

    def is_device(self, a) -> bool:
        return isinstance(a, self.cupy.ndarray)

    def to_device(self, host, out=None):
        # synchronous copies: a staged host buffer is reused by the next MPI call
        if out is None:
            out = self.cupy.empty(host.shape, dtype=host.dtype)
        out.set(np.ascontiguousarray(host))
        self.synchronize()
        return out

    def to_host(self, dev, out):
        dev.get(out=out)
        self.synchronize()
        return out

    def fetch(self, dev) -> np.ndarray:
        """A host copy of `dev` (synchronous)."""
        return self.cupy.asnumpy(dev)

    def pinned(self, nbytes):
        return self.cupyx.empty_pinned((int(nbytes),), dtype=np.uint8)

    def synchronize(self) -> None:
        self.cupy.cuda.get_current_stream().synchronize()

    def csr(self, indptr, indices, data, shape) -> CupyCsr:
        """S resident: int32 indices, canonical, built once (`CsrOnDevice`)."""
        from gcntrain.kernels.gpu import CsrOnDevice, CupyEngine

        dev = CsrOnDevice(indptr, indices, data, shape[1], np.asarray(data).dtype, CupyEngine())
        m = dev.matrix
        rows = self.cupy.repeat(
            self.cupy.arange(shape[0], dtype=self.cupy.int64), self.cupy.diff(m.indptr)
        )
        return CupyCsr(dev, m.data, m.indices, rows, (int(shape[0]), int(shape[1])))

    def spmm(self, M: CupyCsr, X):
        """``M @ X`` through ``cupyx.cusparse.spmm``, copied out of the kept buffer (the
        caller keeps the result) into a C-ordered array."""
        return self.cupy.ascontiguousarray(M.dev @ X)

    def spmm_t(self, M: CupyCsr, X):
        """``M.T @ X`` (cuSPARSE with ``transa``)."""
        out = self.cusparse.spmm(M.dev.matrix, self.cupy.asfortranarray(X), transa=True)
        return self.cupy.ascontiguousarray(out)

    def gemm(self, A, B):
        """``A @ B`` through cuBLAS (or cuSPARSE for CSR features)."""
        if isinstance(A, CupyCsr):
            return self.cupy.ascontiguousarray(
                self.cusparse.spmm(A.dev.matrix, self.cupy.asfortranarray(B))
            )
        return A @ B

    def gemm_tn(self, A, B):
        """``A.T @ B`` through cuBLAS (or cuSPARSE for CSR features)."""
        if isinstance(A, CupyCsr):
            return self.spmm_t(A, B)
        return A.T @ B

    def exp(self, x):
        return self.cupy.exp(x)

    def log(self, x):
        return self.cupy.log(x)
