"""Launcher environment, read without initialising MPI (safe in every command)."""

from __future__ import annotations

import os

_RANK_VARS = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "MV2_COMM_WORLD_RANK")
_LOCAL_SIZE_VARS = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE")
# Slurm: only inside a job step started by srun (a batch script also has SLURM_NTASKS, but
# a plain `gcntrain` there is one process; measured on slurm-wlm 22.05)
_SLURM_STEP = "SLURM_STEP_NUM_TASKS"

#: variables a launcher sets in every task it starts, holding how many tasks it started,
#: with the launchers that set them; the innermost launcher first (MPICH's mpiexec inside
#: a Slurm job starts one proxy per node with srun, so there SLURM_STEP_NUM_TASKS counts
#: nodes and PMI_SIZE the ranks).  PMIx (srun --mpi=pmix, Open MPI 5's prterun) exports no
#: size of its own: srun's variable or Open MPI's covers it.
TASK_COUNT_VARS: dict[str, str] = {
    "PMI_SIZE": "PMI: mpiexec of MPICH or Intel MPI, srun --mpi=pmi2",
    "OMPI_COMM_WORLD_SIZE": "mpiexec of Open MPI or Fujitsu MPI (PJM)",
    "MV2_COMM_WORLD_SIZE": "mpirun_rsh of MVAPICH",
    _SLURM_STEP: "srun",
}


def _first_int(names: tuple[str, ...], default: int) -> int:
    for name in names:
        v = os.environ.get(name)
        if v is not None:
            try:
                return int(v)
            except ValueError:
                continue
    return default


def _in_srun_step() -> bool:
    return _SLURM_STEP in os.environ


def launcher_rank() -> int:
    """This process's rank as the launcher announced it (0 when not launched by mpiexec/srun)."""
    names = _RANK_VARS + (("SLURM_PROCID",) if _in_srun_step() else ())
    return _first_int(names, 0)


def launch_counts(environ=None) -> list[tuple[str, int]]:
    """(variable, count) of every launcher variable set (`TASK_COUNT_VARS`, in order)."""
    environ = os.environ if environ is None else environ
    found = []
    for name in TASK_COUNT_VARS:
        v = environ.get(name, "").strip()
        if v.isdigit() and int(v) >= 1:
            found.append((name, int(v)))
    return found


def launched_tasks(environ=None) -> tuple[str, int] | None:
    """(variable, count) of the innermost launcher that says how many tasks it started
    (the first of `launch_counts`), or None when no launcher started this process."""
    found = launch_counts(environ)
    return found[0] if found else None


def launcher_local_size() -> int:
    """Ranks the launcher placed on this node (1 when unknown)."""
    names = _LOCAL_SIZE_VARS + (("SLURM_STEP_TASKS_PER_NODE",) if _in_srun_step() else ())
    for name in names:  # Slurm writes e.g. "4(x2)": the leading count is ours
        v = os.environ.get(name, "").split("(")[0].split(",")[0]
        if v.isdigit():
            return int(v)
    return 1


def node_cores() -> int:
    """Cores of this node (not only those this process is bound to)."""
    return os.cpu_count() or 1


def available_cores() -> int:
    """Cores this process may run on (its affinity mask)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return node_cores()


def is_bound() -> bool:
    """Whether the launcher bound this process to a subset of the node's cores."""
    return available_cores() < node_cores()


#: MPICH settings for oversubscribed nodes: after 10 empty progress polls a waiting rank
#: sleeps (usleep(1)) instead of spinning, so the rank that has work gets the core.  Measured
#: on 2 cores, Cora, 1d scheme, -n 4: 436 ms per epoch spinning, 18 ms throttled.
OVERSUBSCRIBED_MPICH = {
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "1",
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT": "10",
}


def tune_for_oversubscription(environ=os.environ) -> bool:
    """Before MPI_Init: throttle MPICH's progress polling when ranks outnumber cores.

    Leaves any value the user set alone; returns whether the node is oversubscribed.
    """
    over = launcher_local_size() > node_cores()
    if over:
        for k, v in OVERSUBSCRIBED_MPICH.items():
            environ.setdefault(k, v)
    return over


def host_cores() -> int:
    """Cores of this host as a machine profile counts them: those this process may run on,
    or, inside an MPI job (whose launcher may have bound this rank to a few of them), all of
    the node's."""
    return node_cores() if launcher_local_size() > 1 else available_cores()


#: environment variables an MPI launcher sets for its ranks: a nested ``mpiexec`` must not
#: inherit them (it would take itself for a part of the calling job)
LAUNCHER_PREFIXES = (
    "PMI_",
    "PMIX_",
    "PRTE_",
    "HYDRA_",
    "MPI_LOCALNRANKS",
    "MPI_LOCALRANKID",
    "OMPI_COMM_WORLD_",
    "OMPI_MCA_ess",
    "OMPI_MCA_orte",
    "OMPI_MCA_pmix",
    "OMPI_FILE_LOCATION",
    "OMPI_UNIVERSE_SIZE",
    "OMPI_APP_CTX",
    "OMPI_FIRST_RANKS",
    "OMPI_NUM_APP_CTX",
    "OMPI_ARGV",
    "MV2_COMM_WORLD_",
    "SLURM_",
    *TASK_COUNT_VARS,  # every count the launch check reads, whatever its prefix
)


def launcher_free_env() -> dict:
    """This process's environment without an MPI launcher's variables (and without the
    MPICH progress throttle this package sets for an oversubscribed job,
    `gcntrain.comm.env.OVERSUBSCRIBED_MPICH`, where it holds our values), so that an
    ``mpiexec`` started from inside an MPI job (``train --scheme auto`` calibrating the
    machine) starts a job of its own and measures the machine as it is."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_PREFIXES)}
    for k, v in OVERSUBSCRIBED_MPICH.items():
        if env.get(k) == v:
            del env[k]
    return env


def own_mpiexec() -> str | None:
    """The mpiexec installed beside this Python (the PyPI MPI wheels put it there)."""
    import sys
    from pathlib import Path

    here = Path(sys.executable).parent / "mpiexec"
    return str(here) if here.exists() else None
