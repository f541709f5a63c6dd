"""What happens when something escapes a command: one report, the same exit status everywhere."""

from __future__ import annotations

import os
import sys
import time
import traceback

#: seconds a failing rank waits between writing its report and aborting the job
ABORT_GRACE_SECONDS = 0.3


def mpi_initialized_world():
    """COMM_WORLD if mpi4py is loaded and MPI is initialised, else None (never initialises)."""
    mod = sys.modules.get("mpi4py.MPI")
    if mod is None:
        return None
    try:
        if mod.Is_initialized() and not mod.Is_finalized():
            return mod.COMM_WORLD
    except Exception:
        return None
    return None


def handle_internal_error(exc: BaseException) -> int:
    """Report an unexpected exception and return exit status 1.

    Inside a multi-rank job an error on one rank cannot be agreed collectively (the other
    ranks may be blocked in a collective), so the job is aborted: MPI_Abort kills every rank
    with status 1 instead of leaving them hanging.
    """
    want_tb = os.environ.get("GCNTRAIN_TRACEBACK", "") not in ("", "0")
    world = mpi_initialized_world()
    size = world.Get_size() if world is not None else 1
    rank = world.Get_rank() if world is not None else 0
    head = f"rank {rank}: " if size > 1 else ""
    text = str(exc).replace("\n", " ")
    sys.stderr.write(
        f"gcntrain: error: {head}{type(exc).__name__}: {text}"
        f"{'' if want_tb else ' (set GCNTRAIN_TRACEBACK=1 for the traceback)'}\n"
    )
    if want_tb:
        traceback.print_exception(exc, file=sys.stderr)
    sys.stderr.flush()
    if size > 1:
        # the launcher forwards a rank's stderr through a pipe; MPI_Abort tears the job down
        # at once, and under load the message was lost (about 1 run in 15 on a busy 2-core
        # machine): give the launcher a moment to forward it
        time.sleep(ABORT_GRACE_SECONDS)
        world.Abort(1)
    return 1
