"""Error types shared by every layer.

`InputError` is bad input or usage: the CLI prints its message as one line and exits with
status 2.  Anything else escaping a command is an internal error (status 1).
"""

from __future__ import annotations


class InputError(Exception):
    """Bad input: a file, an option or a value the user can fix. Exit status 2."""

    def __init__(self, message: str, path: str | None = None):
        self.path = path
        self.reason = message
        super().__init__(f"{path}: {message}" if path else message)


class FormatError(InputError):
    """A graph/shard/partition file that fails validation."""


class OutputError(InputError):
    """An output that could not be written whole (a full disk, a read-only directory):
    nothing is left under its final name. Exit status 2."""


class AgreedError(Exception):
    """An error every rank of a job agreed on: same message, same exit status everywhere.

    Raised on all ranks by `gcntrain.comm.agree.agree`; the CLI prints it once (rank 0).
    """

    def __init__(self, message: str, status: int):
        self.status = int(status)
        super().__init__(message)


class Preempted(Exception):
    """A preemption signal (SIGTERM, SIGUSR1) ended training after a checkpoint: every rank
    raises it at the same epoch; the CLI prints its message once and exits with `status`
    (128 + the signal number, as a process killed by it would)."""

    def __init__(self, message: str, status: int):
        self.status = int(status)
        super().__init__(message)


class Note(UserWarning):
    """A remark a library layer has for the user (a partitioner that left parts empty):
    raised with `warnings.warn`, printed by the CLI as one line ``gcntrain: note: ...`` on
    rank 0 (`gcntrain.cli.main`), shown as an ordinary warning to an API caller."""
