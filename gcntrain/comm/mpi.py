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


def load_mpi():
    """Return the `mpi4py.MPI` module, or raise `MPIUnavailableError` with one clear line."""
    from gcntrain.comm.env import tune_for_oversubscription

    tune_for_oversubscription()
    try:
        import mpi4py

        mpi4py.rc.threads = False  # Numba threads never call MPI; FUNNELED-free init is faster
        from mpi4py import MPI
    except ImportError as e:
        raise MPIUnavailableError(_HINT.format(why=f"mpi4py not importable: {e}")) from None
    except RuntimeError as e:
        raise MPIUnavailableError(_HINT.format(why=str(e).splitlines()[0])) from None
    return MPI
