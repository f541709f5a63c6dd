"""`gcntrain info`: versions, MPI library and vendor, Numba threads, CPU, GPUs (CuPy),
CUDA-aware MPI and this host's cached ``--machine local`` profile."""

from __future__ import annotations

import os
import platform
import sys

import click

from gcntrain import __version__
from gcntrain.cli.display import count, emit
from gcntrain.cli.options import json_option


def _version(mod: str) -> str | None:
    """The installed version of module `mod` (its distribution's, else its ``__version__``;
    None when it does not import)."""
    try:
        m = __import__(mod)
    except Exception:
        return None
    try:
        from importlib.metadata import version

        return version(mod)
    except Exception:
        return getattr(m, "__version__", "unknown")


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") or line.startswith("CPU part"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _metis_backend() -> str:
    """The partitioner behind ``--partition metis`` (pymetis, or the Mt-KaHyPar fallback)."""
    try:
        from gcntrain.partition.metis import metis_backend

        return metis_backend()
    except Exception as e:  # pragma: no cover
        return f"unavailable ({e})"


def collect_info() -> dict:
    """Everything `gcntrain info` reports, as a dict (MPI errors are reported, not raised)."""
    from gcntrain.comm.launch import library, srun_mpi_type
    from gcntrain.comm.mpi import MPIUnavailableError, load_mpi

    out: dict = {
        "gcntrain": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
    }
    for mod in (
        "numpy",
        "scipy",
        "numba",
        "h5py",
        "mpi4py",
        "pymetis",
        "networkx",
        "click",
        "mtkahypar",
    ):
        out[mod] = _version(mod)
    out["metis_backend"] = _metis_backend()
    try:
        import numba

        out["numba_threads"] = numba.get_num_threads()
        out["numba_threading_layer_config"] = numba.config.THREADING_LAYER
    except Exception as e:  # pragma: no cover
        out["numba_threads"] = f"unavailable ({e})"
    out["thread_pools"] = _thread_pools()
    MPI = None
    try:
        MPI = load_mpi()
        lib = library(MPI)
        out["mpi_vendor"] = lib.name
        out["mpi_library"] = lib.line
        out["mpi_standard"] = "{}.{}".format(*MPI.Get_version())
        out["mpi_world_size"] = MPI.COMM_WORLD.Get_size()
        out["srun_mpi"] = srun_mpi_type(lib.vendor)
    except MPIUnavailableError as e:
        out["mpi_library"] = None
        out["srun_mpi"] = None
        out["mpi_error"] = str(e)
    out.update(device_info(MPI))
    out["local_profile"] = local_profile()
    return out


def local_profile() -> dict:
    """This host's cached ``--machine local`` profile: its path, state and when and by what
    gcntrain it was measured (`gcntrain.simulate.local.cache_state`); never measures."""
    from gcntrain.simulate.local import cache_state

    try:
        return cache_state()
    except Exception as e:  # pragma: no cover - info reports, it does not fail
        return {"state": f"unavailable ({e})"}


def device_info(MPI=None, probe=None) -> dict:
    """The GPU side (docs/gpu.md): CuPy's version (None: not installed), the GPUs it sees
    with their compute capabilities, why none is usable, and whether the MPI library of the
    `mpi4py.MPI` module `MPI` is CUDA-aware (yes / no / unknown, and how that was found).
    `probe`: a `gcntrain.device.detect.GpuProbe` (default: probe now)."""
    from gcntrain.device import detect
    from gcntrain.device.mpi import cuda_aware

    p = detect.probe() if probe is None else probe
    aware, how = cuda_aware(MPI)
    return {
        "cupy": p.cupy_version,
        "gpus": p.devices,
        "gpu_devices": [
            f"{name or 'GPU'} (compute capability {cc})"
            for name, cc in zip(p.names or ("",) * len(p.capabilities), p.capabilities)
        ],
        "gpu_available": p.usable,
        "gpu_error": p.error,
        "cuda_aware_mpi": aware,
        "cuda_aware_mpi_how": how,
    }


def _thread_pools() -> str:
    """Every native thread pool of the process as a training run sets it (`set_threads`):
    Numba's threads parallelise the kernels and the dense products, BLAS runs one thread per
    call; per library its API, version, file and threads, joined by "; "."""
    try:
        from threadpoolctl import threadpool_info

        from gcntrain.kernels.threads import set_threads

        set_threads(None)
        pools = sorted(threadpool_info(), key=lambda p: (p["user_api"], p["filepath"]))
        return "; ".join(
            " ".join(str(x) for x in (p["user_api"], p["internal_api"], p.get("version")) if x)
            + f" ({os.path.basename(p['filepath'])}): {count(p['num_threads'], 'thread')}"
            for p in pools
        )
    except Exception as e:  # pragma: no cover
        return f"unavailable ({e})"


@click.command("info", context_settings={"help_option_names": ["-h", "--help"]})
@json_option
def info(as_json: bool) -> None:
    """Show versions, the MPI library and vendor, Numba threads, the CPU, the GPUs CuPy sees,
    whether MPI is CUDA-aware, and this host's cached `--machine local` profile (its path and
    when it was measured)."""
    emit(collect_info(), as_json)
