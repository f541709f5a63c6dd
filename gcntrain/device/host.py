"""The host backend (NumPy, no device) and the marker of device arrays: the base of every
backend (`gcntrain.device.backend` makes the choice).

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
    #: hand device arrays to MPI as they are (every rank's library CUDA-aware: set once per
    #: run by `gcntrain.job.device_run.backend_for`); else staged through pinned buffers
    direct: bool = False

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

    @property
    def mpi_buffers(self) -> str:
        """How this backend's arrays reach MPI: ``"host"`` (no device), ``"direct"`` (device
        buffers handed to a CUDA-aware library) or ``"staged"`` (through pinned host
        buffers); the summary's ``mpi_buffers``."""
        if self.name == "cpu":
            return "host"
        return "direct" if self.direct else "staged"

    def staged(self, comm):
        """`comm` (a counted communicator) made to accept this backend's arrays: a
        `gcntrain.device.staging.StagedComm`, direct where `direct` is set, else through
        pinned host buffers (the host backend: `comm` itself)."""
        if self.name == "cpu":
            return comm
        from gcntrain.device.staging import StagedComm

        return StagedComm(comm, self, direct=self.direct)


class DeviceArray(np.ndarray):
    """An emulated device array: an ndarray subclass, so that a test can tell device from
    host memory at every boundary (`EmulatedBackend`)."""
