"""Status lines: what a command is doing when it has printed nothing for a while.

A command names its phases (``with status.phase("reading cora.h5"): ...``); while one runs
and the command has written nothing to stdout or stderr for `QUIET_SECONDS`, rank 0 says
which phase it is in, on stderr (stdout stays machine-readable):

- at a terminal, one status line, ``gcntrain: reading cora.h5 ... 3 s``, redrawn every
  second in place and erased before the command's next output, so that it leaves no trace;
- into a pipe or a file (a batch log, every rank under ``mpiexec``), one line
  ``gcntrain: reading cora.h5 ...`` per phase (and per step of a phase that counts them,
  `_Phase.step`), and ``gcntrain: reading cora.h5: 4 s so far`` while it lasts: every 1.5 s
  for 9 s after its first line, then 16 and 32 s after it, then every minute
  (`LOG_REPEATS`, `LOG_SECONDS`).

``GCNTRAIN_STATUS`` chooses: ``auto`` (the default: as above), ``tty`` (the terminal form
everywhere), ``log`` (the line form everywhere) or ``off``.  `watching` installs the
watcher for one command (`gcntrain.cli.main.run`); without it `phase` only records the
name.  The watcher is a daemon thread that wakes four times a second; a phase that holds
Python's lock in C code (a partitioner's library call) is named when the lock is let go.

A leaf module (standard library only), so that any layer may name its phases.
"""

from __future__ import annotations

import os
import sys
import threading
from contextlib import contextmanager
from time import monotonic

#: seconds without output after which the running phase is named
QUIET_SECONDS = 1.0
#: seconds between redraws of the terminal line
TTY_SECONDS = 1.0
#: seconds after a phase's first line at which the line form says it again (then every
#: `LOG_SECONDS`): often while a wait is young (a newcomer watches it: never 2 s without a
#: line), rarely in a long one (a batch log: about 17 lines in a 10-minute phase)
LOG_REPEATS = (1.5, 3.0, 4.5, 6.0, 7.5, 9.0, 16.0, 32.0)
#: seconds between repeats of the line form after `LOG_REPEATS`
LOG_SECONDS = 60.0
#: the values GCNTRAIN_STATUS takes
MODES = ("auto", "tty", "log", "off")

_lock = threading.RLock()
_phases: list = []  # the running `_Phase`s, innermost last
_notes: list = []  # [say] of `say_before_long_work`, [None] once said
_state = {
    "last": monotonic(),
    "shown": 0,
    "drawn_at": 0.0,
    "said": None,
    "said_at": 0.0,
    "first_said": 0.0,
    "repeats": 0,
    "said_done": "",
    "hushed": False,
}


def mode(stream=None) -> str:
    """The form status takes on `stream` (stderr by default): ``tty``, ``log`` or ``off``
    (module docstring).

    Raises
    ------
    InputError : GCNTRAIN_STATUS is not one of `MODES`
    """
    from gcntrain.errors import InputError

    value = os.environ.get("GCNTRAIN_STATUS", "auto").strip().lower() or "auto"
    if value not in MODES:
        raise InputError(
            f"GCNTRAIN_STATUS={value!r} is not one of {', '.join(MODES)} (status lines)"
        )
    if value != "auto":
        return value
    stream = sys.stderr if stream is None else stream
    try:
        return "tty" if stream.isatty() else "log"
    except (AttributeError, ValueError):
        return "log"


class _Phase:
    """A running phase: its name, when it began, and how far it is (`step`)."""

    def __init__(self, name: str, quiet: float | None = None):
        self.name, self.start, self.done, self.quiet = name, monotonic(), "", quiet

    def step(self, i: int, n: int) -> None:
        """Say that `i` of `n` parts of the phase are done (shown on the terminal line)."""
        self.done = f" ({i}/{n})"


@contextmanager
def phase(name: str, quiet: float | None = None):
    """Name what the code inside does (a short lower-case clause: ``planning 1024
    ranks``) for the status line; phases nest, the innermost is shown.  Yields the phase,
    whose `_Phase.step` says how far it is.  `quiet`: the seconds without output after
    which this phase is shown (default `QUIET_SECONDS`; longer for a phase that prints
    its own progress at a known rate, so that the two do not alternate)."""
    p = _Phase(name, quiet)
    with _lock:
        _phases.append(p)
    try:
        yield p
    finally:
        with _lock:
            _phases.remove(p)


@contextmanager
def say_before_long_work(say):
    """Call `say()` (it prints a note about the work inside) once: as soon as the work has
    been quiet for `QUIET_SECONDS`, so that it is read before the wait, else when the work
    ends; never when the work raises (a refusal stays one line)."""
    entry = [say]
    with _lock:
        _notes.append(entry)
    try:
        yield
    except BaseException:
        with _lock:
            _notes.remove(entry)
        raise
    with _lock:
        _notes.remove(entry)
        due = entry[0]
    if due is not None:
        due()


def hush() -> None:
    """No status for the rest of this command (its ``--quiet``)."""
    _state["hushed"] = True


def touch() -> None:
    """Record output just written (the watched streams call it)."""
    _state["last"] = monotonic()


class _Watched:
    """A text stream whose writes erase a shown status line first and count as output."""

    def __init__(self, stream, err):
        self._stream, self._err = stream, err

    def write(self, text):
        with _lock:
            _erase(self._err)
            n = self._stream.write(text)
            if text:
                touch()
        return n

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def erase_from_signal_handler() -> None:
    """Show no status from now on, and blank a shown terminal status line with a plain
    write to file descriptor 2 (no lock, no stream: safe in a signal handler that writes its
    own line next with `os.write`, then waits for the other ranks before leaving)."""
    _state["hushed"] = True
    shown = _state["shown"]
    if shown:
        _state["shown"] = 0
        try:
            os.write(2, ("\r" + " " * shown + "\r").encode())
        except OSError:
            pass


def _erase(err) -> None:
    """Blank the terminal status line, if one is shown."""
    if _state["shown"]:
        err.write("\r" + " " * _state["shown"] + "\r")
        err.flush()
        _state["shown"] = 0


def _repeat_due() -> float:
    """When the line form says the shown phase again: `LOG_REPEATS` after its first line,
    then every `LOG_SECONDS` after the previous one."""
    k = _state["repeats"]
    if k < len(LOG_REPEATS):
        return _state["first_said"] + LOG_REPEATS[k]
    return _state["said_at"] + LOG_SECONDS


def _tick(err, form: str) -> None:
    """One look at the clock: show, redraw or repeat the status where due."""
    with _lock:
        if not _phases or _state["hushed"]:
            return
        now = monotonic()
        if now - _state["last"] < QUIET_SECONDS:
            return
        due = [e for e in _notes if e[0] is not None]
        if due:
            _erase(err)
            for e in due:
                say, e[0] = e[0], None
                say()
            return
        p = _phases[-1]
        if p.quiet is not None and now - _state["last"] < p.quiet:
            return
        name, start = p.name, p.start
        if form == "tty":
            if _state["shown"] and now - _state["drawn_at"] < TTY_SECONDS:
                return
            text = f"gcntrain: {name}{p.done} ... {now - start:.0f} s"
            err.write("\r" + text.ljust(_state["shown"]))
            err.flush()
            _state.update(shown=len(text), drawn_at=now)
            return
        if _state["said"] is not p or _state["said_done"] != p.done:
            line = f"gcntrain: {name}{p.done} ..."
        elif now >= _repeat_due():
            line = f"gcntrain: {name}: {now - start:.0f} s so far"
            _state["repeats"] += 1
        else:
            return
        err.write(line + "\n")
        err.flush()
        if _state["said"] is not p:
            _state.update(first_said=now, repeats=0)
        _state.update(said=p, said_done=p.done, said_at=now, last=now)


@contextmanager
def watching(printer: bool = True):
    """Watch this process's stdout and stderr for the command run inside, and show the
    status where due (module docstring); `printer` False (a rank other than 0) only
    records phases.  The streams are restored on leaving."""
    form = mode() if printer else "off"
    if form == "off":
        yield
        return
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Watched(out, err), _Watched(err, err)
    touch()
    _state["hushed"] = False
    stop = threading.Event()

    def loop():
        while not stop.wait(TTY_SECONDS / 4):
            try:
                _tick(err, form)
            except (OSError, ValueError):  # the stream closed under us: stop showing
                return

    thread = threading.Thread(target=loop, name="gcntrain-status", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        with _lock:
            _erase(err)
        sys.stdout, sys.stderr = out, err
