"""Progress lines of a training job on rank 0's stderr (stdout stays machine-readable):
Numba compiling, a note when ranks oversubscribe the node's cores, and per-epoch lines at a
steady rate with an ETA; the rank-0 line helpers the CLI's display shares."""

from __future__ import annotations

import sys
from time import monotonic

from gcntrain.comm.env import launcher_rank

#: at most one epoch line per this many seconds (the first and the last are always shown)
EVERY_SECONDS = 2.0
#: ETA from the median of this many most recent epochs
ETA_WINDOW = 10


def count(n: int, noun: str) -> str:
    """``1 rank``, ``4 ranks``: a count with its noun in the right number."""
    return f"{n} {noun}" if int(n) == 1 else f"{n} {noun}s"


def is_printer(rank: int | None = None) -> bool:
    """Whether this process prints (rank 0 of the launcher, or `rank` when given)."""
    return (launcher_rank() if rank is None else rank) == 0


def optional(v: float | None) -> str:
    """A figure that may be missing (no validation mask): 4 decimals, or "-"."""
    return "-" if v is None else f"{v:.4f}"


def info(msg: str, rank: int | None = None) -> None:
    """Progress text to stderr (rank 0 only), so stdout stays machine-readable."""
    if is_printer(rank):
        sys.stderr.write(msg + "\n")
        sys.stderr.flush()


def _duration(s: float) -> str:
    if s < 60:
        return f"{s:.1f} s"
    m, s = divmod(int(round(s)), 60)
    return f"{m} min {s:02d} s" if m < 60 else f"{m // 60} h {m % 60:02d} min"


def oversubscription_note(ranks_per_node: int, threads: int, cores: int) -> str | None:
    """The note for ranks x threads over the node's cores (None when they fit)."""
    if ranks_per_node * threads <= cores:
        return None
    return (
        f"note: {count(ranks_per_node, 'rank')} x {count(threads, 'thread')} share "
        f"{count(cores, 'core')} on this node (about {cores / (ranks_per_node * threads):.2g} "
        "core per thread): epochs run slower than with a core per thread; time runs with "
        "ranks x threads <= cores (on a cluster, `gcntrain jobscript` sets this up)"
    )


class Progress:
    """The per-run progress printer (rank 0 prints; every rank may call it).

    Parameters
    ----------
    epochs : the run's maximum epochs (early stopping may end it sooner).
    every : seconds between epoch lines.
    """

    def __init__(self, epochs: int, every: float = EVERY_SECONDS) -> None:
        self.epochs = int(epochs)
        self.every = float(every)
        self.watch = None
        self._last = None
        self._first: float | None = None
        self._recent: list[float] = []
        self._compile_reported = False

    # -- runner hooks ---------------------------------------------------------------------
    def start(self, facts: dict) -> None:
        """Training is about to start (every rank has loaded and set up)."""
        from gcntrain.kernels.compile_watch import CompileWatch

        note = oversubscription_note(
            facts["ranks_per_node"], facts["threads_per_rank"], facts["node_cores"]
        )
        if note:
            info(note)
        self.watch = CompileWatch(on_first=self._compiling).install()

    def _compiling(self, name: str) -> None:
        info(
            "compiling Numba kernels for this machine (once: later runs load them from "
            "the cache) ..."
        )

    def __call__(self, rec) -> None:
        """One epoch finished."""
        now = monotonic()
        if self.watch is not None and self.watch.count and not self._compile_reported:
            self._compile_reported = True
            info(f"compiled {count(self.watch.count, 'kernel')} in {_duration(self.watch.seconds)}")
        # the first epoch of a process compiles and warms up: the ETA leaves it out
        if self._first is None:
            self._first = rec.seconds
        else:
            self._recent = (self._recent + [rec.seconds])[-ETA_WINDOW:]
        last = rec.epoch >= self.epochs
        if self._last is not None and not last and now - self._last < self.every:
            return
        self._last = now
        per = sorted(self._recent)[len(self._recent) // 2] if self._recent else self._first
        left = max(self.epochs - rec.epoch, 0)
        eta = f"  ETA {_duration(per * left)}" if left and self._recent else ""
        info(
            f"epoch {rec.epoch:4d}/{self.epochs}  loss {rec.loss:.4f}  "
            f"train_acc {rec.train_acc:.4f}  val_loss {optional(rec.val_loss)}  "
            f"val_acc {optional(rec.val_acc)}  test_acc {optional(rec.test_acc)}  "
            f"{rec.seconds * 1e3:.1f} ms{eta}"
        )

    def close(self) -> None:
        if self.watch is not None:
            self.watch.remove()
            self.watch = None
