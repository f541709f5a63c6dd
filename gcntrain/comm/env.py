"""Launcher environment, read without initialising MPI (safe in every command)."""

from __future__ import annotations

import os

_RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK", "SLURM_PROCID")
_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE", "SLURM_NTASKS")


def _first_int(names: tuple[str, ...], default: int) -> int:
    for name in names:
        v = os.environ.get(name)
        if v is not None:
            try:
                return int(v)
            except ValueError:
                continue
    return default


def launcher_rank() -> int:
    """This process's rank as the launcher announced it (0 when not launched by mpiexec/srun)."""
    return _first_int(_RANK_VARS, 0)


def launcher_size() -> int:
    """Number of processes the launcher started (1 when run directly)."""
    return _first_int(_SIZE_VARS, 1)
