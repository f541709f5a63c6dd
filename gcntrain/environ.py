"""Environment variables set for a while: in this process and in the processes it starts."""

from __future__ import annotations

import contextlib
import os


@contextlib.contextmanager
def environ_set(values: dict[str, str], environ=os.environ):
    """`values` set in `environ` while inside; every variable restored after (removed where
    it was not set before)."""
    saved = {k: environ.get(k) for k in values}
    environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                environ.pop(k, None)
            else:
                environ[k] = v
