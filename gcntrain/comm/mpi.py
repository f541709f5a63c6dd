"""Loading the MPI library (the one import point for mpi4py)."""

from __future__ import annotations

from gcntrain.errors import InputError

_HINT = (
    "no MPI library could be loaded ({why}); install one with "
    "`pip install 'gcntrain[mpich]'` (or `pip install mpich`), or on a cluster "
    "`module load <mpi>` before running"
)


class MPIUnavailableError(InputError):
    """Raised (exit status 2) when mpi4py cannot load an MPI library."""


def load_mpi(init: bool = True):
    """Return the `mpi4py.MPI` module, or raise `MPIUnavailableError` with one clear line.

    `init` False: when this process has not imported it yet, load the library without
    starting MPI (``MPI_Init``), for questions its version answers (the vendor, the
    library's name): outside a job, on a login node, some MPI libraries abort a process
    that starts MPI.  Such a process must not use MPI afterwards."""
    import sys
    import warnings

    from gcntrain.comm.env import tune_for_oversubscription

    tune_for_oversubscription()
    try:
        import mpi4py

        mpi4py.rc.threads = False  # Numba threads never call MPI; FUNNELED-free init is faster
        if not init and "mpi4py.MPI" not in sys.modules:
            mpi4py.rc.initialize = False
            mpi4py.rc.finalize = False
        with warnings.catch_warnings():  # another MPI's launcher: `comm.launch` says it in
            warnings.filterwarnings("ignore", "suspicious MPI execution environment")  # a line
            from mpi4py import MPI
    except ImportError as e:
        raise MPIUnavailableError(_HINT.format(why=f"mpi4py not importable: {e}")) from None
    except RuntimeError as e:
        raise MPIUnavailableError(_HINT.format(why=str(e).splitlines()[0])) from None
    return MPI
