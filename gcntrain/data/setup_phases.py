"""The setup phases of a training job, timed on this rank.

A job's setup (everything before its first epoch) is a few named phases: ``verify`` (the
content hash of a graph file checked before ranks read their rows), ``partition`` (the
numbering and layout), ``reorder`` (the rows' locality order inside each part, ``--reorder``),
``read`` (this rank's rows from the file or store), ``normalise``
(degrees and the support's rows), ``transpose`` (the support's transpose, or the rows of it
this rank holds), ``exchange`` (the setup's collectives: degrees, the transposition's
messages, the symmetry vote) and ``ops`` (the rest of the scheme's set-up: its Ops, casts).

`start` opens a clock for this process; `phase(name)` times a block into it (nothing when
no clock is open, so library code can mark its phases unconditionally); `stop` closes it
and returns {phase: seconds}.  Phases nest exclusively: time spent in an inner phase is not
counted in the outer one, so the phases never sum to more than the wall time they cover.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from time import perf_counter

from gcntrain import status

#: every phase a path may have, in report order
PHASES = ("verify", "partition", "reorder", "read", "normalise", "transpose", "exchange", "ops")
#: what the status line says a phase does (`gcntrain.status`)
DOING = {
    "verify": "checking the graph file's content hash",
    "partition": "partitioning the graph",
    "reorder": "ordering the rows for locality",
    "read": "reading this rank's rows",
    "normalise": "normalising the adjacency",
    "transpose": "transposing the adjacency",
    "exchange": "exchanging the setup's data",
    "ops": "setting up the scheme",
}


class SetupClock:
    """Exclusive seconds per named phase (see the module's docstring)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._stack: list[list] = []  # [name, time its running stretch began]

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the block as phase `name` (an enclosing phase pauses meanwhile)."""
        if name not in PHASES:
            raise ValueError(f"unknown setup phase {name!r}")
        now = perf_counter()
        if self._stack:
            outer = self._stack[-1]
            self.seconds[outer[0]] += now - outer[1]
        self.seconds.setdefault(name, 0.0)
        self._stack.append([name, now])
        try:
            yield
        finally:
            end = perf_counter()
            inner, began = self._stack.pop()
            self.seconds[inner] += end - began
            if self._stack:
                self._stack[-1][1] = end


_clock: SetupClock | None = None


def start() -> SetupClock:
    """Open a fresh clock for this process (a previous one is discarded)."""
    global _clock
    _clock = SetupClock()
    return _clock


def stop() -> dict[str, float]:
    """Close the clock; {phase: seconds} in `PHASES` order (empty when none was open)."""
    global _clock
    clock, _clock = _clock, None
    if clock is None:
        return {}
    return {k: clock.seconds[k] for k in PHASES if k in clock.seconds}


@contextmanager
def phase(name: str) -> Iterator[None]:
    """`SetupClock.phase` on the open clock (a plain block when none is open), named for
    the status line (`DOING`)."""
    with status.phase(DOING.get(name, name)):
        if _clock is None:
            yield
            return
        with _clock.phase(name):
            yield
