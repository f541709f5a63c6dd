"""Error types shared by every layer.

`InputError` is bad input or usage: the CLI prints its message as one line and exits with
status 2.  Anything else escaping a command is an internal error (status 1).
"""

from __future__ import annotations


class InputError(Exception):
    """Bad input: a file, an option or a value the user can fix. Exit status 2."""

    def __init__(self, message: str, path: str | None = None):
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class FormatError(InputError):
    """A graph/shard/partition file that fails validation."""
