"""The array-module choice, made once per run: NumPy, CuPy, or a host emulation of a
device for the tests.

A `Backend` answers the few questions the device-independent code asks: which array module
(`xp`) computes, whether an array lives on the device, how to move an array between host
and device, and how to allocate pinned (page-locked) host memory for MPI staging.  Code
that is written against a `Backend` runs unchanged on all three; the `EmulatedBackend`
lets the ordinary tests prove that staging hands MPI host memory only
(`gcntrain.device.staging`).
"""

from __future__ import annotations

from types import ModuleType

import numpy as np


class Backend:
    """The host: NumPy arrays, nothing is on a device, no staging."""

    name = "cpu"
    #: the array module the run computes with
    xp: ModuleType = np

    def is_device(self, a) -> bool:
        """Whether `a` lives in device memory (MPI cannot read it without CUDA awareness)."""
        return False

    def empty(self, shape, dtype):
        """An uninitialised array on the compute device."""
        return self.xp.empty(shape, dtype=dtype)

    def to_device(self, host: np.ndarray, out=None):
        """`host` copied into `out` on the device (a new array without `out`)."""
        if out is None:
            return np.array(host, copy=True)
        out[...] = host
        return out

    def to_host(self, dev, out: np.ndarray) -> np.ndarray:
        """`dev` copied into the host array `out` (same shape); returns `out`."""
        out[...] = dev
        return out

    def pinned(self, nbytes: int) -> np.ndarray:
        """A host buffer of `nbytes` bytes (uint8) that the device copies to and from at
        full speed (page-locked memory on a GPU; ordinary memory here)."""
        return np.empty(int(nbytes), dtype=np.uint8)

    def synchronize(self) -> None:
        """Wait for the device's queued work (copies before MPI reads a host buffer)."""


class DeviceArray(np.ndarray):
    """An emulated device array: an ndarray subclass, so that a test can tell device from
    host memory at every boundary (`EmulatedBackend`)."""


class EmulatedBackend(Backend):
    """A device emulated on the host: its arrays are `DeviceArray`, its pinned buffers
    ordinary ndarrays remembered by address, so a test can check that each buffer MPI sees
    is host memory from the pinned pool.  Computes with NumPy."""

    name = "emulated"

    def __init__(self) -> None:
        self.pinned_buffers: list[np.ndarray] = []
        self.copies = {"to_device": 0, "to_host": 0}

    def is_device(self, a) -> bool:
        return isinstance(a, DeviceArray)

    def empty(self, shape, dtype):
        return np.empty(shape, dtype=dtype).view(DeviceArray)

    def to_device(self, host, out=None):
        self.copies["to_device"] += 1
        if out is None:
            return np.array(host, copy=True).view(DeviceArray)
        np.asarray(out)[...] = host
        return out

    def to_host(self, dev, out):
        self.copies["to_host"] += 1
        out[...] = np.asarray(dev).view(np.ndarray)
        return out

    def pinned(self, nbytes):
        buf = np.empty(int(nbytes), dtype=np.uint8)
        self.pinned_buffers.append(buf)
        return buf

    def is_pinned(self, a: np.ndarray) -> bool:
        """Whether `a` lies in one of the pinned buffers handed out."""
        return any(np.shares_memory(a, b) for b in self.pinned_buffers)


class CupyBackend(Backend):  # NEVER RUN on a GPU (docs/gpu.md)
    """CuPy arrays on the current device; pinned buffers from ``cupyx.empty_pinned``.

    NEVER RUN: written without a GPU; no test has executed these methods (docs/gpu.md).
    """

    name = "gpu"

    def __init__(self, device: int = 0) -> None:
        import cupy
        import cupyx

        self.cupy, self.cupyx = cupy, cupyx
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

    def pinned(self, nbytes):
        return self.cupyx.empty_pinned((int(nbytes),), dtype=np.uint8)

    def synchronize(self) -> None:
        self.cupy.cuda.get_current_stream().synchronize()


def select_backend(kind: str, device: int = 0) -> Backend:
    """The backend of a `gcntrain.device.choice.DeviceChoice` kind: ``"cpu"`` (NumPy),
    ``"gpu"`` (CuPy on GPU `device`) or ``"emulated"`` (tests)."""
    if kind == "cpu":
        return Backend()
    if kind == "emulated":
        return EmulatedBackend()
    if kind == "gpu":
        return CupyBackend(device)
    raise ValueError(f"unknown device kind {kind!r}")
