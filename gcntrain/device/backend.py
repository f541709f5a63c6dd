"""The array-module choice, made once per run: NumPy, CuPy, or a host emulation of a
device for the tests.

A backend answers the few questions the device-independent code asks: which array module
(``xp``) computes, whether an array lives on the device, how to move an array between host
and device (``to_device``, ``to_host``, ``fetch``), how to allocate pinned host memory for
MPI staging, and the products and functions whose device versions are library calls
(``csr``: a matrix made resident once; ``spmm``, ``spmm_t``, ``gemm``, ``gemm_tn``,
``exp``, ``log``).  `Backend` (`gcntrain.device.host`) is the host and has no products: the
CPU path never asks it (`gcntrain.model.compute.HostCompute` calls the Numba kernels
directly).  `EmulatedBackend` (`gcntrain.device.emulated`) runs the device code on NumPy in
the tests; `CupyBackend` (`gcntrain.device.cupy_backend`) is the GPU, never run.
"""

from __future__ import annotations

from gcntrain.device.cupy_backend import CupyBackend
from gcntrain.device.emulated import EmulatedBackend, StrictDeviceArray
from gcntrain.device.host import Backend, DeviceArray

__all__ = [
    "Backend",
    "CupyBackend",
    "DeviceArray",
    "EmulatedBackend",
    "StrictDeviceArray",
    "select_backend",
]


def select_backend(kind: str, device: int = 0) -> Backend:
    """The backend of a `gcntrain.device.choice.DeviceChoice` kind: ``"cpu"`` (NumPy),
    ``"gpu"`` (CuPy on GPU `device`) or ``"emulated"`` (tests)."""
    if kind == "cpu":
        return Backend()
    if kind == "emulated":
        return EmulatedBackend()
    if kind == "gpu":  # pragma: no cover - NEVER RUN on a GPU
        return CupyBackend(device)
    raise ValueError(f"unknown device kind {kind!r}")
