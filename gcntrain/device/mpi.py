"""Whether the MPI library reads device memory itself (CUDA-aware), answered without ever
raising: ``"yes"``, ``"no"`` or ``"unknown"``, with how the answer was found.

What is relied on, in this order:

1. ``GCNTRAIN_CUDA_AWARE_MPI=0|1``: the user's word (a site where the query below is wrong).
2. ``MPI.Query_cuda_support()`` where mpi4py exposes it (mpi4py 4.1.2 does not).
3. The C function ``MPIX_Query_cuda_support()`` of the MPI library loaded in this process,
   found through ctypes: MPICH exports it since 4.0 (it answers whether MPICH's GPU support
   is on at run time; the PyPI ``mpich`` 5.0 wheel exports it and answers 0), Open MPI
   since 2.0 (its CUDA extension).
4. Cray MPICH's convention: ``MPICH_GPU_SUPPORT_ENABLED=1`` turns GPU support on (only
   read where the library's vendor string names Cray).
5. Otherwise ``"unknown"``: device buffers are then staged through host memory.

A run takes the verdict once on every rank (`gcntrain.job.device_run.backend_for`): its
device buffers go to MPI directly only where every rank answers ``"yes"``.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping

from gcntrain.errors import InputError

#: the user's override of the detection
OVERRIDE_VAR = "GCNTRAIN_CUDA_AWARE_MPI"


def verdict(
    override: str | None, mpi4py_answer, library_answer, cray: bool, cray_env: str | None
) -> tuple[str, str]:
    """(``"yes"``/``"no"``/``"unknown"``, how) from the facts gathered (module docstring
    order); pure.

    Parameters
    ----------
    override : ``GCNTRAIN_CUDA_AWARE_MPI``'s value (None: unset).
    mpi4py_answer : ``MPI.Query_cuda_support()``'s result (None: not exposed).
    library_answer : ``MPIX_Query_cuda_support()``'s result (None: not found).
    cray : whether the library is Cray MPICH.
    cray_env : ``MPICH_GPU_SUPPORT_ENABLED``'s value (None: unset).
    """
    if override is not None and override.strip():
        if override.strip() not in ("0", "1"):
            raise InputError(
                f"{OVERRIDE_VAR} must be 0 (MPI gets host buffers: staged) or 1 (device "
                f"buffers: direct), got {override!r}"
            )
        return ("yes" if override.strip() == "1" else "no"), f"{OVERRIDE_VAR}={override.strip()}"
    if mpi4py_answer is not None:
        return ("yes" if mpi4py_answer else "no"), "mpi4py MPI.Query_cuda_support()"
    if library_answer is not None:
        return ("yes" if library_answer else "no"), "MPIX_Query_cuda_support() of the library"
    if cray:
        on = (cray_env or "").strip() == "1"
        return ("yes" if on else "no"), f"Cray MPICH, MPICH_GPU_SUPPORT_ENABLED={cray_env or ''}"
    return "unknown", "no query available"


def _loaded_libraries() -> list[str]:
    """Paths of the shared libraries named ``libmpi*`` mapped into this process (Linux)."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if "/libmpi" in line}
    except OSError:
        return []
    return sorted(p for p in paths if os.path.basename(p).startswith("libmpi"))


def library_query() -> int | None:
    """``MPIX_Query_cuda_support()`` of a loaded MPI library (call after MPI is
    initialised), None where no loaded library has it."""
    for path in _loaded_libraries():
        try:
            fn = ctypes.CDLL(path).MPIX_Query_cuda_support
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_int
        fn.argtypes = []
        try:
            return int(fn())
        except Exception:
            return None
    return None


def check_override(env: Mapping[str, str] = os.environ) -> None:
    """Refuse (`InputError`) a ``GCNTRAIN_CUDA_AWARE_MPI`` other than 0 or 1 on every run,
    a CPU run too, where it would otherwise go unread."""
    verdict(env.get(OVERRIDE_VAR), None, None, False, None)


def cuda_aware(MPI=None, env: Mapping[str, str] = os.environ) -> tuple[str, str]:
    """Whether the MPI library of the `mpi4py.MPI` module `MPI` is CUDA-aware (None: the
    library is not loaded; only the override can answer); raises `InputError` only for an
    override other than 0 or 1."""
    override = env.get(OVERRIDE_VAR)
    mpi4py_answer = library_answer = None
    cray = False
    if MPI is not None:
        try:
            query = getattr(MPI, "Query_cuda_support", None)
            mpi4py_answer = None if query is None else bool(query())
        except Exception:
            mpi4py_answer = None
        library_answer = library_query()
        try:
            cray = "cray" in MPI.Get_library_version().lower()
        except Exception:
            cray = False
    return verdict(
        override, mpi4py_answer, library_answer, cray, env.get("MPICH_GPU_SUPPORT_ENABLED")
    )
