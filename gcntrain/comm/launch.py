"""What the launcher started against what MPI made of it.

A launcher that starts N tasks without the process-management interface (PMI) their MPI
library needs (Slurm's ``srun --mpi=none`` with MPICH, another MPI's ``mpiexec``) leaves
each task alone in a 1-rank MPI world: N independent runs writing the same output.  These
checks refuse that before anything is read: `check_mpi_world` for a command that runs on
all the ranks of the world (``train``), `check_one_process` for one that must run as one
process (every command that writes an output).  Both name the mismatch and the fix in one
line (`gcntrain.errors.InputError`, exit status 2 on every task).

`SRUN_MPI` maps an MPI library to the ``srun --mpi`` plugin it needs (`srun_mpi_type`), the
default of ``gcntrain jobscript --mpi``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from gcntrain.comm.env import TASK_COUNT_VARS, launch_counts, launched_tasks, own_mpiexec
from gcntrain.errors import InputError

#: the ``srun --mpi`` plugin each MPI library (mpi4py's vendor name) needs under Slurm:
#: MPICH and its derivatives speak PMI-2 (the PyPI MPICH 5.0 wheel has no PMIx: "unsupported
#: PMI version PMIx"), Open MPI 5 only PMIx (under pmi2 its ranks start as singletons); both
#: measured on slurm-wlm 22.05
SRUN_MPI: dict[str, str] = {
    "MPICH": "pmi2",
    "Intel MPI": "pmi2",
    "MVAPICH": "pmi2",
    "MVAPICH2": "pmi2",
    "Open MPI": "pmix",
}


@dataclass(frozen=True)
class Library:
    """The MPI library mpi4py loaded: its vendor (``MPICH``, ``Open MPI``), version and
    first line of `MPI_Get_library_version`."""

    vendor: str
    version: str
    line: str

    @property
    def name(self) -> str:
        return f"{self.vendor} {self.version}".strip()


def library(MPI) -> Library:
    """The `Library` of the `mpi4py.MPI` module `MPI`."""
    vendor, ver = MPI.get_vendor()
    line = MPI.Get_library_version().splitlines()[0].strip()
    return Library(str(vendor), ".".join(map(str, ver)), line)


def srun_mpi_type(vendor: str) -> str | None:
    """The ``srun --mpi`` plugin the MPI library `vendor` needs (None: unknown)."""
    return SRUN_MPI.get(vendor)


def _fix(lib: Library | None, environ=None) -> str:
    """How to launch so that the tasks form one MPI job."""
    environ = os.environ if environ is None else environ
    if "PJM_JOBID" in environ:  # Fugaku: Fujitsu MPI's mpiexec is the launcher
        return "launch it with Fujitsu MPI's mpiexec, with mpi4py built on Fujitsu MPI"
    if lib is None:
        return "launch it with the mpiexec of the MPI library mpi4py loads"
    plugin = srun_mpi_type(lib.vendor)
    srun = f"`srun --mpi={plugin}`" if plugin else "srun with the --mpi plugin of that library"
    mpiexec = own_mpiexec()
    where = f" ({mpiexec})" if mpiexec else ""
    return f"launch it with {srun} or with the mpiexec of {lib.name}{where}"


def check_mpi_world(world_size: int, lib: Library | None, environ=None) -> None:
    """Raise `InputError` when no launcher variable that is set counts the `world_size`
    ranks of MPI's world (`lib`: the MPI library, for the fix).  Any one agreeing is
    enough: an outer launcher's count may linger in a nested one's environment (a pmi2
    shell's ``PMI_SIZE=1`` around Open MPI's ``mpirun -n 4``)."""
    counts = launch_counts(environ)
    if not counts or any(n == world_size for _, n in counts):
        return
    var, n = counts[0]
    who = TASK_COUNT_VARS[var].split(":")[0]
    if world_size == 1:
        made = "MPI made each task a 1-rank job of its own"
    else:
        made = f"MPI's world has {world_size} ranks"
    library_name = f" ({lib.name})" if lib is not None else ""
    said = ", ".join(f"{v}={c}" for v, c in counts)
    raise InputError(
        f"the launcher ({who}) started {n} tasks ({said}) but {made}{library_name}, so "
        f"they would not train together: {_fix(lib, environ)}"
    )


def check_one_process(command: str, environ=None) -> None:
    """Raise `InputError` when a launcher started `command`, which runs as one process, as
    several tasks (each would write the same outputs)."""
    found = launched_tasks(environ)
    if found is None or found[1] == 1:
        return
    var, n = found
    raise InputError(
        f"gcntrain {command} runs as one process, but the launcher started {n} tasks "
        f"({var}={n}) that would all write the same outputs: run it without srun or "
        "mpiexec (only `gcntrain train` runs on several ranks)"
    )


def check_launch(command: str, uses_mpi: bool, environ=None) -> None:
    """The check for `command`: its MPI world against the launcher when it `uses_mpi`
    (MPI is initialised only when a launcher started the process), else one process."""
    if not uses_mpi:
        check_one_process(command, environ)
        return
    if launched_tasks(environ) is None:
        return
    from gcntrain.comm.mpi import load_mpi

    MPI = load_mpi()
    check_mpi_world(MPI.COMM_WORLD.Get_size(), library(MPI), environ)


def launched_world_size(environ=None) -> int:
    """Ranks of this job: 1 where no launcher started the process (MPI is not started),
    else the size of MPI's world, which `check_mpi_world` held against the launcher's
    counts (any one of them may match: the first set need not be the world's)."""
    if launched_tasks(environ) is None:
        return 1
    from gcntrain.comm.mpi import load_mpi

    return int(load_mpi().COMM_WORLD.Get_size())


def installed_srun_mpi() -> tuple[str | None, str]:
    """(the ``srun --mpi`` plugin the MPI library mpi4py loads here needs, or None; that
    library's name, or why no plugin is known)."""
    from gcntrain.comm.mpi import MPIUnavailableError, load_mpi

    try:
        lib = library(load_mpi(init=False))  # its version, without starting MPI
    except MPIUnavailableError:
        return None, "no MPI library here"
    plugin = srun_mpi_type(lib.vendor)
    return plugin, (lib.name if plugin else f"{lib.name}, whose srun plugin gcntrain does not know")
