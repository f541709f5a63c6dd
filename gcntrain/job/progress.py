"""Progress lines of a training job on rank 0's stderr (stdout stays machine-readable):
Numba compiling, a note when ranks oversubscribe the node's cores, and per-epoch lines at a
steady rate with an ETA; the rank-0 line helpers the CLI's display shares."""

from __future__ import annotations

import sys
from time import monotonic

from gcntrain.comm.env import launcher_rank

#: at most one epoch line per this many seconds (the first and the last are always shown)
EVERY_SECONDS = 1.5
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


def setup_line(seconds: float, phases: dict) -> str:
    """The line after setup: its time and each phase's (rank 0's), e.g. ``setup 4.1 s
    (read 1.2 s, normalise 0.9 s, transpose 0.8 s, ops 0.3 s)``."""
    parts = ", ".join(f"{k} {v:.2f} s" for k, v in phases.items())
    return f"setup {seconds:.2f} s" + (f" ({parts})" if parts else "")


def epoch_line(rec, epochs: int) -> str:
    """One epoch's progress line (without its ETA)."""
    return (
        f"epoch {rec.epoch:4d}/{epochs}  loss {rec.loss:.4f}  "
        f"train_acc {rec.train_acc:.4f}  val_loss {optional(rec.val_loss)}  "
        f"val_acc {optional(rec.val_acc)}  test_acc {optional(rec.test_acc)}  "
        f"{rec.seconds * 1e3:.1f} ms"
    )


class Progress:
    """The per-run progress printer (rank 0 prints; every rank may call it).

    Parameters
    ----------
    epochs : the run's maximum epochs (early stopping may end it sooner).
    every : seconds between epoch lines.
    """

    def __init__(self, epochs: int, every: float = EVERY_SECONDS) -> None:
        from gcntrain.kernels.compile_watch import CompileWatch

        self.epochs = int(epochs)
        self.every = float(every)
        self._last = None
        self._first: float | None = None
        self._recent: list[float] = []
        self._compiled_reported = 0  # compilations the "compiled ..." lines have counted
        self._seconds_reported = 0.0
        self._pending = None  # the newest epoch record, while it is not printed
        self._latest = None  # the newest epoch record
        # watched from the start of the job: loading and set-up compile kernels too (the
        # vertex cut's Libra partitioner, its tree gathers), not only the first epoch
        self.watch = CompileWatch(on_first=self._compiling).install()

    # -- runner hooks ---------------------------------------------------------------------
    def start(self, facts: dict) -> None:
        """Training is about to start (every rank has loaded and set up): the setup's line
        (`setup_line`, where `facts` has the setup's figures) and the oversubscription
        note."""
        if "setup_phases" in facts:
            info(setup_line(facts["setup_seconds"], facts["setup_phases"]))
        note = oversubscription_note(
            facts["ranks_per_node"], facts["threads_per_rank"], facts["node_cores"]
        )
        if note:
            info(note)

    def _compiling(self, name: str) -> None:
        info(
            "compiling Numba kernels for this machine (once: later runs load them from "
            "the cache) ..."
        )

    def __call__(self, rec) -> None:
        """One epoch finished."""
        now = monotonic()
        if not self._compiled_reported:
            self._report_compiled()
        self._latest = rec
        # the first epoch of a process compiles and warms up: the ETA leaves it out
        if self._first is None:
            self._first = rec.seconds
        else:
            self._recent = (self._recent + [rec.seconds])[-ETA_WINDOW:]
        last = rec.epoch >= self.epochs
        if self._last is not None and not last and now - self._last < self.every:
            self._pending = rec
            return
        self._last = now
        self._pending = None
        per = sorted(self._recent)[len(self._recent) // 2] if self._recent else self._first
        left = max(self.epochs - rec.epoch, 0)
        eta = f"  ETA {_duration(per * left)}" if left and self._recent else ""
        info(epoch_line(rec, self.epochs) + eta)

    def _report_compiled(self) -> None:
        """The "compiled N kernels in T" line for the compilations not reported yet."""
        w = self.watch
        if w is None or w.count <= self._compiled_reported:
            return
        n, secs = w.count - self._compiled_reported, w.seconds - self._seconds_reported
        more = " more" if self._compiled_reported else ""
        self._compiled_reported, self._seconds_reported = w.count, w.seconds
        info(f"compiled {count(n, 'kernel')}{more} in {_duration(secs)}")

    def finish(self, stopped_early: bool) -> None:
        """Training ended (every rank calls it; rank 0 prints): the last epoch's line if
        the rate held it back, marked when a stopping rule ended the run before
        ``epochs`` (a line of its own when the last epoch's line was shown already), and
        the kernels compiled since the first epoch (`run_job` calls this once, after
        the final evaluation)."""
        rec, self._pending = self._pending, None
        note = "  (early stopping ended training)"
        if rec is not None:
            info(epoch_line(rec, self.epochs) + (note if stopped_early else ""))
        elif stopped_early and self._latest is not None:
            info(f"early stopping ended training at epoch {self._latest.epoch}/{self.epochs}")
        self._report_compiled()

    def close(self) -> None:
        if self.watch is not None:
            self.watch.remove()
            self.watch = None
