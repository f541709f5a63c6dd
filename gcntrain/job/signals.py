"""SIGTERM and SIGUSR1 as a batch system's stop: one line, status 128 + N on every rank,
from wherever each rank is (`StopOnSignal`).  Standard library and `gcntrain.status` only:
``gcntrain`` installs it before any heavy import (`gcntrain.cli.main`)."""

from __future__ import annotations

from gcntrain import status

#: the signals a batch system sends before it kills a job (Slurm's --signal, PJM's)
PREEMPT_SIGNALS = ("SIGTERM", "SIGUSR1")


class StopOnSignal:
    """SIGTERM or SIGUSR1 end the process at once, as their default action would, but with
    one line on rank 0's stderr (`message`) and exit status 128 + the signal number on every
    rank (what a shell reports for a process the signal killed; the checkpointing stop
    exits with the same status).  ``gcntrain`` installs one for every command from its
    start (`gcntrain.cli.main`); a training run without ``--checkpoint`` installs its own
    inside, whose line says that no checkpoint was asked for (`NoCheckpointStop`).

    A rank is mostly inside MPI calls, where Python runs no signal handler until the call
    returns, and a partner that left first makes it never return.  So the signal is also
    written to a wake-up pipe (`signal.set_wakeup_fd`, at the C level) that a watcher thread
    reads (mpi4py releases the GIL in MPI calls): whichever sees it first leaves from where
    the process is (`os._exit`: no unwinding through a collective), under MPI after a short
    grace so that the launcher has forwarded the signal to every rank.  Outputs are complete
    or absent (`gcntrain.data.atomic`); stdout's buffer is dropped, so no half summary."""

    #: seconds a rank waits under MPI before it leaves (as after Ctrl-C)
    GRACE_SECONDS = 0.5

    def __init__(self, rank: int, size: int, watch: bool = True):
        """`rank` prints the line; `size` > 1 waits `GRACE_SECONDS` before leaving;
        `watch`: also leave from the watcher thread (below), for code that blocks in MPI.
        Without it only the Python handler leaves, and a handler installed later inside
        (a checkpointing run's `gcntrain.job.checkpoint.PreemptFlag`) takes over whole."""
        import threading

        self.rank = int(rank)
        self.size = int(size)
        self._old: dict = {}
        self._old_fd = None
        self._pipe: tuple[int, int] | None = None
        self._lock = threading.Lock()
        self.watch = watch

    def message(self, signum: int) -> str:
        """The line rank 0 prints for `signum`."""
        import signal

        return f"gcntrain: stopped by {signal.Signals(signum).name}"

    def _leave(self, signum: int) -> None:
        import os
        import time

        if not self._lock.acquire(blocking=False):
            time.sleep(3600)  # the other path is leaving
        if self.rank == 0:
            status.erase_from_signal_handler()
            os.write(2, (self.message(signum) + "\n").encode())
        if self.size > 1:
            time.sleep(self.GRACE_SECONDS)
        os._exit(128 + int(signum))

    def _watch(self, fd: int, wanted: set) -> None:
        import os

        while True:
            try:
                data = os.read(fd, 64)
            except OSError:
                return
            if not data:  # the write end was closed: restored
                os.close(fd)
                return
            got = [b for b in data if b in wanted]
            if got:
                self._leave(got[0])

    def install(self) -> None:
        import os
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers belong to the main thread; the default stays
        sigs = [getattr(signal, n) for n in PREEMPT_SIGNALS if hasattr(signal, n)]
        for sig in sigs:
            self._old[sig] = signal.signal(sig, lambda signum, frame: self._leave(signum))
        if not self.watch:
            return
        r, w = os.pipe()
        os.set_blocking(w, False)
        self._pipe = (r, w)
        self._old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        wanted = {int(s) for s in sigs}
        threading.Thread(target=self._watch, args=(r, wanted), daemon=True).start()

    def __enter__(self):
        self.install()
        return self

    def __exit__(self, *exc) -> None:
        self.restore()

    def restore(self) -> None:
        import os
        import signal

        if self._pipe is not None:
            signal.set_wakeup_fd(self._old_fd)
            os.close(self._pipe[1])  # the watcher reads end-of-file and returns
            self._pipe = None
        for sig, old in self._old.items():
            signal.signal(sig, old)
        self._old = {}


class NoCheckpointStop(StopOnSignal):
    """A training run without ``--checkpoint``: the line says that none was asked for."""

    def message(self, signum: int) -> str:
        return (
            f"{super().message(signum)}; no checkpoint was asked for "
            "(--checkpoint DIR saves one and stops after the epoch)"
        )
