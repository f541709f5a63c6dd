"""Collective error agreement: a failure on any rank becomes the same error on every rank.

Use `agree(comm, fn)` around work that may fail on some ranks only (loading a shard, checking
input): every rank runs `fn`; then one 16-byte Allreduce (phase ``"control"``) tells all ranks
the worst status and the lowest rank failing with it; that rank's one-line message is broadcast and
every rank raises `AgreedError` with the same status (2 for bad input, 1 otherwise).

Failures inside a collective exchange cannot be agreed (the other ranks are blocked in the
exchange); those go through `gcntrain.comm.errors.handle_internal_error`, which aborts the job.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import numpy as np

from gcntrain.errors import AgreedError, InputError

T = TypeVar("T")


def from_interrupt(exc: BaseException | None) -> bool:
    """Whether `exc` was caused by a KeyboardInterrupt (Numba's dispatcher wraps one that
    arrives inside a kernel in a SystemError)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _status_of(exc: BaseException) -> int:
    return 2 if isinstance(exc, InputError) else 1


def agree(comm, fn: Callable[[], T], name_rank: bool = True) -> T:
    """Run `fn()` on every rank of `comm`; raise the same `AgreedError` everywhere on failure
    (its message prefixed with the failing rank when others succeeded, unless `name_rank`
    is False: work that only one rank does)."""
    status, msg, err = 0, "", None
    try:
        result = fn()
    except AgreedError:
        raise
    except Exception as e:  # noqa: BLE001 - every failure must reach the agreement
        if from_interrupt(e):  # Ctrl-C inside a compiled kernel: an interrupt, not an error
            raise KeyboardInterrupt from None
        status, err = _status_of(e), e
        msg = str(e) if isinstance(e, InputError) else f"{type(e).__name__}: {e}"
        msg = msg.replace("\n", " ")
        result = None
    # one Allreduce(max): the worst status with the lowest rank having it; whether any passed
    P = comm.size
    key = status * P + (P - 1 - comm.rank) if status else -1
    flags = comm.allreduce(np.array([key, 0 if status else 1], dtype=np.int64), "control", op="max")
    if flags[0] < 0:
        return result  # type: ignore[return-value]
    worst, first = int(flags[0]) // P, P - 1 - int(flags[0]) % P
    some_ok = bool(flags[1])
    text = comm.bcast_bytes(msg.encode(), first, "control").decode(errors="replace")
    prefix = f"rank {first}: " if P > 1 and some_ok and name_rank else ""
    raise AgreedError(prefix + text, worst) from err


#: seconds between the polls of a rank waiting in `idle_barrier`
IDLE_POLL = 0.005


def idle_barrier(mpicomm, poll: float = IDLE_POLL) -> None:
    """A barrier on the mpi4py communicator `mpicomm` that the ranks arriving early wait in
    *asleep* (a non-blocking barrier polled every `poll` seconds): busy-polling MPI ranks
    would take the cores that the ranks still working share with them."""
    if mpicomm is not None and mpicomm.Get_size() > 1:  # None: a `SelfComm`, no MPI
        req = mpicomm.Ibarrier()
        while not req.Test():
            time.sleep(poll)


def on_root(comm, fn: Callable[[], T], root: int = 0, poll: float = IDLE_POLL) -> T | None:
    """Run `fn()` on `root` only while the other ranks wait in an `idle_barrier` (polled
    every `poll` seconds), so that busy-polling MPI ranks sharing the root's cores do not
    slow its work down; then `agree` on the outcome (same error everywhere).  Returns
    `fn()`'s result on `root`, None elsewhere."""

    def run():
        try:
            return fn() if comm.rank == root else None
        finally:
            idle_barrier(comm.comm, poll)

    return agree(comm, run, name_rank=False)
