"""What this process can see of CuPy and the GPUs, probed once, never raising."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType


@dataclass(frozen=True)
class GpuProbe:
    """What a probe found.

    Attributes
    ----------
    cupy_version : CuPy's version, None where CuPy does not import.
    devices : GPUs CuPy sees (0 without CuPy or without a driver).
    capabilities : compute capability of each device, e.g. ``"9.0"``.
    names : name of each device (may be empty where the runtime does not say).
    error : why no GPU is usable, one line (None where one is).
    """

    cupy_version: str | None = None
    devices: int = 0
    capabilities: tuple[str, ...] = field(default_factory=tuple)
    names: tuple[str, ...] = field(default_factory=tuple)
    error: str | None = None

    @property
    def cupy_found(self) -> bool:
        """Whether CuPy imports."""
        return self.cupy_version is not None

    @property
    def usable(self) -> bool:
        """Whether at least one GPU can run CuPy arrays."""
        return self.devices > 0 and self.error is None


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")


def _capability(cupy: ModuleType, i: int) -> str:
    """Compute capability of device `i` as ``"major.minor"`` (CuPy gives e.g. ``"90"``)."""
    cc = str(cupy.cuda.Device(i).compute_capability)
    return f"{cc[:-1]}.{cc[-1]}" if len(cc) >= 2 and cc.isdigit() else cc


def _name(cupy: ModuleType, i: int) -> str:
    try:
        props = cupy.cuda.runtime.getDeviceProperties(i)
        name = props.get("name", b"")
        return name.decode(errors="replace") if isinstance(name, bytes) else str(name)
    except Exception:
        return ""


def probe(importer: Callable[[str], ModuleType] = importlib.import_module) -> GpuProbe:
    """Import CuPy and count its devices; every failure is reported in `GpuProbe.error`.

    Parameters
    ----------
    importer : how to import a module by name (tests pass a fake CuPy).

    Returns
    -------
    GpuProbe
    """
    try:
        cupy = importer("cupy")
    except ModuleNotFoundError as e:
        if e.name == "cupy":
            return GpuProbe(error="CuPy is not installed")
        return GpuProbe(error=f"CuPy does not import ({_one_line(e)})")
    except Exception as e:
        return GpuProbe(error=f"CuPy does not import ({_one_line(e)})")
    version = str(getattr(cupy, "__version__", "unknown"))
    try:
        n = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as e:
        return GpuProbe(version, error=f"CuPy finds no CUDA device ({_one_line(e)})")
    if n < 1:
        return GpuProbe(version, error="CuPy finds no CUDA device")
    try:
        caps = tuple(_capability(cupy, i) for i in range(n))
        names = tuple(_name(cupy, i) for i in range(n))
        # a driver may list devices that cannot run a kernel: allocate one element on each
        for i in range(n):
            with cupy.cuda.Device(i):
                cupy.zeros(1, dtype=cupy.float32).sum()
    except Exception as e:
        return GpuProbe(version, n, error=f"a CUDA device is not usable ({_one_line(e)})")
    return GpuProbe(version, n, caps, names)
