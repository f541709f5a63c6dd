"""Thread count per process (the ``--threads`` option and ``NUMBA_NUM_THREADS``): Numba's
threads run every parallel kernel, the dense products included (`gcntrain.kernels.dense`);
every BLAS library is held at one thread per call.

Advice for MPI runs: give each rank ``cores_per_node // ranks_per_node`` threads
(`advised_threads`), e.g. 2 ranks per 64-core node -> 32 threads each.  Without it every rank
starts one thread per core and the ranks of a node oversubscribe the cores.  Set it either with
``--threads`` or, before Python starts, ``NUMBA_NUM_THREADS`` (which also caps ``--threads``:
Numba cannot start more threads than ``numba.config.NUMBA_NUM_THREADS``).  With Open MPI, also
pass ``--bind-to none`` (or a binding to several cores) so that the threads are not all bound
to one core.
"""

from __future__ import annotations

import os

import numba
from threadpoolctl import threadpool_limits

from gcntrain.errors import InputError


def cap_blas() -> None:
    """Hold every BLAS library of the process at one thread, scipy's included: Numba's
    ``np.dot`` (the dense kernels) calls scipy's BLAS, which threadpoolctl only sees once it
    is loaded, so it is loaded first."""
    import scipy.linalg.cython_blas  # noqa: F401

    threadpool_limits(limits=1, user_api="blas")


def max_threads() -> int:
    """Most threads Numba can use in this process (``numba.config.NUMBA_NUM_THREADS``)."""
    return int(numba.config.NUMBA_NUM_THREADS)


def set_threads(n: int | None = None) -> int:
    """Apply a thread count to Numba's parallel kernels; return the count now in effect.

    Parameters
    ----------
    n : int or None
        Requested threads (``--threads``).  None: ``NUMBA_NUM_THREADS`` from the environment
        if set, else all threads Numba started with.  Values above `max_threads` are capped.

    Returns
    -------
    int
        The thread count applied (1 <= result <= `max_threads`).

    Raises
    ------
    InputError
        If `n` (or ``NUMBA_NUM_THREADS``) is not a positive integer.
    """
    if n is None:
        env = os.environ.get("NUMBA_NUM_THREADS", "").strip()
        if env:
            try:
                n = int(env)
            except ValueError:
                raise InputError(f"NUMBA_NUM_THREADS must be an integer, got {env!r}") from None
        else:
            n = max_threads()
    if isinstance(n, bool) or int(n) != n or n < 1:
        raise InputError(f"--threads must be a positive integer, got {n!r}")
    applied = min(int(n), max_threads())
    numba.set_num_threads(applied)
    # one thread pool: BLAS runs one thread per call and the dense products are parallel over
    # Numba's threads (`gcntrain.kernels.dense`).  Idle BLAS threads spin for about 0.1 s after
    # each call and took the cores from the next Numba kernel (a width-16 SpMM: 30-41 ms after
    # a 2-thread GEMM, 21 ms with single-threaded BLAS); left at one thread per core, the BLAS
    # threads of the ranks of a node also spin on each other's cores
    cap_blas()
    return applied


def get_threads() -> int:
    """Threads Numba's parallel kernels use now in this thread of the process."""
    return int(numba.get_num_threads())


def advised_threads(ranks_per_node: int = 1, cores: int | None = None) -> int:
    """Threads per rank for `ranks_per_node` ranks sharing a node: ``max(1, cores // ranks)``.

    Parameters
    ----------
    ranks_per_node : int
        MPI ranks started on this node (>= 1).
    cores : int, optional
        Cores available; default: the cores this process may run on (its affinity mask).

    Returns
    -------
    int
        Suggested thread count for each rank.
    """
    if ranks_per_node < 1:
        raise InputError(f"ranks per node must be >= 1, got {ranks_per_node}")
    if cores is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cores = os.cpu_count() or 1
    return max(1, int(cores) // int(ranks_per_node))
