"""Suite-wide settings.

Tests run with one Numba thread per process: on CI's 2 cores (and with mpiexec ranks
oversubscribed) parallel regions on tiny test matrices spend far longer waking threads than
computing.  Tests of the parallel kernels set their own thread counts explicitly.
"""

from __future__ import annotations

import numba
import pytest


@pytest.fixture(autouse=True, scope="session")
def one_numba_thread():
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(before)


@pytest.fixture(scope="session")
def worker_batches(request):
    """MPI worker cases run one launch per rank count (tests/mpi/batch.py)."""
    from tests.mpi.batch import WorkerBatches

    return WorkerBatches(request.session.items)
