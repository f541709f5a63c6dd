"""A device emulated on the host, for the ordinary tests: device arrays are NumPy arrays of
a marker subclass, and every copy between host and device is counted.

`DeviceArray` marks device memory.  `StrictDeviceArray` also behaves as CuPy does at the
host boundary, so that a test of the training loop catches what would fail or silently
synchronise on a GPU:

- a NumPy function or ufunc on device arrays returns device arrays (CuPy's dispatch of
  ``np.*`` through ``__array_function__`` / ``__array_ufunc__``), a full reduction
  included (a 0-d device array, not a host scalar);
- a host array (other than a 0-d one) mixed into a ufunc with a device array is a
  `TypeError`, as CuPy refuses NumPy operands;
- ``float()``, ``int()``, ``bool()``, ``item()`` and ``tolist()`` of a device array raise
  `HostTransferError`: every transfer to the host goes through `EmulatedBackend.fetch`
  (or ``to_host``), which counts it.

Gaps, said plainly: ``np.asarray(dev)`` and ``np.array(dev)`` return host copies or views
without passing through the backend (NumPy does not ask a subclass), and a Numba kernel
accepts a device array as it would any ndarray.  The bit-for-bit comparison with the CPU
run and the transfer counts in ``tests/test_device_loop.py`` are what cover those.

The emulated products compute with the host kernels the CPU path calls (Numba SpMM, the
row-chunked GEMM, SciPy for CSR features, libm ``exp``/``log``), on plain views of the
device arrays, so an emulated run equals the CPU run bit for bit while the code around
them is the device code.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from gcntrain.device.host import Backend, DeviceArray


class HostTransferError(TypeError):
    """A device array converted to a host value without going through the backend."""


def _plain(a):
    return a.view(np.ndarray) if isinstance(a, np.ndarray) else a


def _wrap(a, cls):
    if isinstance(a, np.ndarray):
        return a.view(cls)
    if isinstance(a, np.generic):  # a full reduction: a 0-d device array, as CuPy gives
        return np.asarray(a).view(cls)
    if isinstance(a, tuple):
        return tuple(_wrap(x, cls) for x in a)
    if isinstance(a, list):
        return [_wrap(x, cls) for x in a]
    return a


class StrictDeviceArray(DeviceArray):
    """A `DeviceArray` that refuses host operands and implicit host conversions (see the
    module docstring)."""

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        for x in inputs:
            if type(x) is np.ndarray and x.ndim > 0:
                raise TypeError(
                    f"{ufunc.__name__}: a host array {x.shape} mixed with a device array"
                )
        args = [_plain(x) for x in inputs]
        if out is not None:
            kwargs["out"] = tuple(_plain(o) for o in out)
        result = getattr(ufunc, method)(*args, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _wrap(result, StrictDeviceArray)

    def __array_function__(self, func, types, args, kwargs):
        def unwrap(a):
            if isinstance(a, (list, tuple)):
                return type(a)(unwrap(x) for x in a)
            return _plain(a)

        result = func(*unwrap(args), **{k: unwrap(v) for k, v in kwargs.items()})
        return _wrap(result, StrictDeviceArray)

    def _refuse(self, *args, **kwargs):
        raise HostTransferError(
            f"a device array {self.shape} converted to a host value outside the backend"
        )

    __float__ = __int__ = __bool__ = __index__ = __complex__ = _refuse
    item = tolist = _refuse


class EmulatedXp:
    """NumPy as the emulated device's array module: its constructors (``zeros``,
    ``arange``...) make device arrays, as ``cupy.zeros`` does; everything else is NumPy's
    (which returns device arrays for device operands)."""

    def __init__(self, cls) -> None:
        self._cls = cls

    def __getattr__(self, name: str):
        return getattr(np, name)

    def zeros(self, *args, **kwargs):
        return np.zeros(*args, **kwargs).view(self._cls)

    def ones(self, *args, **kwargs):
        return np.ones(*args, **kwargs).view(self._cls)

    def empty(self, *args, **kwargs):
        return np.empty(*args, **kwargs).view(self._cls)

    def full(self, *args, **kwargs):
        return np.full(*args, **kwargs).view(self._cls)

    def arange(self, *args, **kwargs):
        return np.arange(*args, **kwargs).view(self._cls)

    def ascontiguousarray(self, a, dtype=None):
        """A C-ordered device array of the device array `a` (a host array here would be an
        implicit copy to the device: refused)."""
        if not isinstance(a, DeviceArray):
            raise TypeError(f"ascontiguousarray of a host {type(a).__name__} on the device")
        return np.ascontiguousarray(_plain(a), dtype=dtype).view(type(a))


@dataclass
class EmulatedCsr:
    """A CSR matrix resident on the emulated device: the host matrix (for the host
    kernels) and device views of its arrays."""

    host: sp.csr_matrix
    data: np.ndarray
    indices: np.ndarray
    entry_rows: np.ndarray
    shape: tuple[int, int]

    @property
    def dtype(self):
        return self.host.dtype

    def with_data(self, data) -> EmulatedCsr:
        """The same structure with the values `data` (a device array), built on the device."""
        h = self.host
        host = sp.csr_matrix((_plain(data), h.indices, h.indptr), shape=h.shape)
        return EmulatedCsr(host, data, self.indices, self.entry_rows, self.shape)

    def toarray(self):
        return self.host.toarray().view(type(self.data))


class EmulatedBackend(Backend):
    """A device emulated on the host: its arrays are `DeviceArray` (`StrictDeviceArray`
    with ``strict=True``), its pinned buffers ordinary ndarrays remembered by address, so a
    test can check that each buffer MPI sees is host memory from the pinned pool.

    Every copy is counted: ``copies`` (``to_device`` / ``to_host`` calls) and
    ``transfers`` (direction and shape of each), ``calls`` counts the device products
    (``spmm``, ``spmm_t``, ``gemm``, ``gemm_tn``) and ``syncs`` the `synchronize` calls
    (staging, direct MPI calls, the timers).  Computes with NumPy and the host kernels
    (module docstring).  ``direct=True`` emulates a CUDA-aware MPI library: its arrays
    go to MPI unstaged."""

    name = "emulated"

    def __init__(self, strict: bool = False, direct: bool = False) -> None:
        self.direct = bool(direct)
        self.syncs = 0
        self.pinned_buffers: list[np.ndarray] = []
        self.copies = {"to_device": 0, "to_host": 0}
        self.transfers: list[tuple[str, tuple]] = []
        self.calls = {"spmm": 0, "spmm_t": 0, "gemm": 0, "gemm_tn": 0}
        self.array_type = StrictDeviceArray if strict else DeviceArray
        self.xp = EmulatedXp(self.array_type)

    # -- memory ----------------------------------------------------------------------------
    def is_device(self, a) -> bool:
        return isinstance(a, DeviceArray)

    def empty(self, shape, dtype):
        return np.empty(shape, dtype=dtype).view(self.array_type)

    def to_device(self, host, out=None):
        self.copies["to_device"] += 1
        self.transfers.append(("to_device", tuple(np.shape(host))))
        if out is None:
            return np.array(_plain(host), copy=True).view(self.array_type)
        _plain(out)[...] = _plain(host)
        return out

    def to_host(self, dev, out):
        self.copies["to_host"] += 1
        self.transfers.append(("to_host", tuple(np.shape(dev))))
        out[...] = _plain(dev)
        return out

    def fetch(self, dev) -> np.ndarray:
        """A host copy of the device array `dev` (counted)."""
        return self.to_host(dev, np.empty(np.shape(dev), dtype=dev.dtype))

    def synchronize(self) -> None:
        """Nothing is queued on the emulated device; counted."""
        self.syncs += 1

    def pinned(self, nbytes):
        buf = np.empty(int(nbytes), dtype=np.uint8)
        self.pinned_buffers.append(buf)
        return buf

    def is_pinned(self, a: np.ndarray) -> bool:
        """Whether `a` lies in one of the pinned buffers handed out."""
        return any(np.shares_memory(a, b) for b in self.pinned_buffers)

    # -- products and transcendental functions ----------------------------------------------
    def csr(self, indptr, indices, data, shape) -> EmulatedCsr:
        """A CSR matrix made resident (one copy of each array to the device)."""
        host = sp.csr_matrix((data, indices, indptr), shape=shape)
        rows = np.repeat(np.arange(shape[0], dtype=np.int64), np.diff(host.indptr))
        dev = [self.to_device(a) for a in (host.data, host.indices, rows)]
        host = sp.csr_matrix((_plain(dev[0]), _plain(dev[1]), host.indptr), shape=shape)
        return EmulatedCsr(host, dev[0], dev[1], dev[2], (int(shape[0]), int(shape[1])))

    def spmm(self, M: EmulatedCsr, X):
        """``M @ X`` for the support matrix (the Numba kernel of the CPU path)."""
        from gcntrain.kernels.spmm import spmm_csr_dense

        self.calls["spmm"] += 1
        X = np.ascontiguousarray(_plain(X))
        out = np.empty((M.shape[0], X.shape[1]), dtype=X.dtype)
        h = M.host
        return spmm_csr_dense(h.indptr, h.indices, h.data, X, out).view(self.array_type)

    def spmm_t(self, M: EmulatedCsr, X):
        """``M.T @ X`` for CSR features (SciPy, as the CPU path)."""
        self.calls["spmm_t"] += 1
        return np.asarray(M.host.T @ _plain(X)).view(self.array_type)

    def gemm(self, A, B):
        """``A @ B``: the row-chunked GEMM of the CPU path, or SciPy for CSR features."""
        from gcntrain.kernels import dense

        self.calls["gemm"] += 1
        if isinstance(A, EmulatedCsr):
            return np.asarray(dense.matmul(A.host, _plain(B))).view(self.array_type)
        return dense.matmul(_plain(A), _plain(B)).view(self.array_type)

    def gemm_tn(self, A, B):
        """``A.T @ B`` (per-chunk partials summed in order, as the CPU path)."""
        from gcntrain.kernels import dense

        if isinstance(A, EmulatedCsr):
            return self.spmm_t(A, B)
        self.calls["gemm_tn"] += 1
        return dense.matmul_tn(_plain(A), _plain(B)).view(self.array_type)

    def exp(self, x):
        """Element-wise ``exp`` of float64 `x` (libm, as the Numba kernels compute it)."""
        from gcntrain.kernels.libm import exp_into

        x = np.ascontiguousarray(_plain(x))
        return exp_into(x.ravel(), np.empty(x.size)).reshape(x.shape).view(self.array_type)

    def log(self, x):
        """Element-wise ``log`` of float64 `x` (libm)."""
        from gcntrain.kernels.libm import log_into

        x = np.ascontiguousarray(_plain(x))
        return log_into(x.ravel(), np.empty(x.size)).reshape(x.shape).view(self.array_type)
