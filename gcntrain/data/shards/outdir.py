"""A store's output directory, written under a temporary name and renamed when complete."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from gcntrain.data.shards.layout import MANIFEST_NAME
from gcntrain.errors import InputError, OutputError


def _check_target(out: Path, overwrite: bool) -> None:
    """Refuse a target that is a file, or a non-empty directory that may not be replaced."""
    if not out.parent.is_dir():
        raise InputError(f"parent directory '{out.parent}' does not exist", str(out))
    if not out.exists():
        return
    if not out.is_dir():
        raise InputError("exists and is not a directory", str(out))
    if any(out.iterdir()):
        if not overwrite:
            raise InputError(
                "output directory is not empty (pass --overwrite to replace "
                "an existing shard store)",
                str(out),
            )
        if not (out / MANIFEST_NAME).is_file():
            raise InputError(
                f"refusing to overwrite: not a shard store (no {MANIFEST_NAME})", str(out)
            )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def _host() -> str:
    return socket.gethostname().replace(".", "_").replace("-", "_") or "host"


def staging_prefix(out: Path) -> str:
    """``.NAME.HOST-PID.``: whose staging directory it is (the host: a shared file system
    may hold writers of several nodes)."""
    return f".{out.name}.{_host()}-{os.getpid()}."


def remove_stale_staging(out: Path) -> None:
    """Remove staging directories of `out` left by a writer on this host that was killed
    (SIGKILL, an out-of-memory kill): ``.NAME.HOST-PID.RANDOM.tmp`` whose process is gone."""
    host = _host()
    for d in out.parent.glob(f".{out.name}.*.tmp"):
        parts = d.name[len(out.name) + 2 :].split(".")
        if len(parts) != 3 or not d.is_dir():  # another output's (e.g. NAME.7) or foreign
            continue
        who, _, pid = parts[0].rpartition("-")
        if who == host and pid.isdigit() and not _pid_alive(int(pid)):
            shutil.rmtree(d, ignore_errors=True)


@contextmanager
def atomic_dir(out_dir: str | os.PathLike, overwrite: bool) -> Iterator[Path]:
    """Yield a temporary directory beside `out_dir`; rename it to `out_dir` when complete.

    Parameters
    ----------
    out_dir : path-like
        The final directory; its parent must exist. An existing empty directory is replaced;
        a non-empty one only with `overwrite` and only when it holds a shard store.
    overwrite : bool
        Allow replacing an existing shard store.
    """
    out = Path(out_dir)
    parent = out.parent
    _check_target(out, overwrite)
    remove_stale_staging(out)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=staging_prefix(out), suffix=".tmp", dir=parent))
    except OSError as e:
        raise OutputError(f"cannot create a directory beside it: {e.strerror}", str(out)) from None
    try:
        yield tmp
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)
        if out.exists() and any(out.iterdir()):
            trash = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=parent))
            os.rename(out, trash / "store")
            os.rename(tmp, out)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            if out.exists():
                out.rmdir()
            os.rename(tmp, out)
    except OutputError as e:  # a shard: name the store, not the staging directory
        shutil.rmtree(tmp, ignore_errors=True)
        raise OutputError(e.reason, str(out)) from None
    except OSError as e:  # the renames: nothing of the new store is left behind
        shutil.rmtree(tmp, ignore_errors=True)
        raise OutputError(f"cannot write: {e.strerror or e}", str(out)) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
