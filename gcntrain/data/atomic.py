"""Outputs that are complete or absent: the one way every command writes a file.

A file is written under a temporary name beside its final one, flushed and fsynced, then
renamed; any failure (a full disk, a read-only directory, a quota) removes the temporary and
raises `OutputError` naming the file and the cause (exit status 2), so no half-written file
is ever left under a final name, and no temporary either.

HDF5 files are written through Python file objects (h5py's file-object driver): `h5_file`
streams a large file to its temporary, `h5_bytes` builds a small one in memory (to stage
several files as one output).  Either way the HDF5 library never writes to the file system
itself, so a full disk cannot fail inside HDF5's close (which crashed the process) and every
write error surfaces as an ordinary ``OSError`` here.  `staged` writes several files as one
output: all are written first, then renamed; if any write fails none of them appears.
`exclusive_lock` makes writers of one place (an output folder, a cache) take turns.
"""

from __future__ import annotations

import io
import os
import stat
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from gcntrain import status
from gcntrain.errors import InputError, OutputError

#: bytes written per call (a large file is streamed, not copied whole again)
CHUNK = 64 << 20


def temp_name(path: Path) -> Path:
    """A temporary name beside `path` (hidden, unique per process and call)."""
    return path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")


def _cause(e: OSError) -> str:
    return e.strerror or str(e)


def fsync_dir(path: Path) -> None:
    """Make a rename in `path` durable (where the platform allows it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover - file systems without directory fsync
        pass
    finally:
        os.close(fd)


def probe_dir(path, keep: bool) -> None:
    """Really create directory `path` (parents too) and a file in it, then remove the file
    and, unless `keep`, the directories this made: permissions alone do not tell (/proc,
    read-only mounts, root).  Raises ``OSError``."""
    path = Path(path)
    made = [a for a in (path.absolute(), *path.absolute().parents) if not a.exists()]
    probe = temp_name(path / "probe")
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
    finally:
        probe.unlink(missing_ok=True)
        for d in made if not keep else ():  # deepest first
            try:
                d.rmdir()
            except OSError:
                pass


#: what a path that is not a regular file is (`os.stat` mode tests), for the refusals
SPECIAL_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a directory"),
)


def special_kind(path) -> str | None:
    """What `path` is when it exists (through links) and is not a regular file: "a FIFO",
    "a character device", ...; None for a regular file or nothing."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    for test, kind in SPECIAL_KINDS:
        if test(mode):
            return kind
    return None if stat.S_ISREG(mode) else "not a regular file"


def check_output_file(path, inputs=(), flag: str = "--out") -> None:
    """Fail early, before any work, when `path` cannot become an output file: it is one of
    the `inputs` (the same file, also through a link: writing it would destroy the input),
    a directory, or in a folder that does not exist or where nothing can be created (probed:
    a read-only mount).  One `InputError` naming `flag` and the path."""
    p = Path(path)
    if p.exists():
        for i in inputs:
            if isinstance(i, (str, os.PathLike)) and os.path.exists(i) and os.path.samefile(p, i):
                raise InputError(
                    f"{flag} is an input of this command; writing it would destroy it", str(p)
                )
        kind = special_kind(p)
        if kind is not None:  # the rename would replace a device node or a FIFO
            raise InputError(f"{flag} is {kind}, not a regular file: not replaced", str(p))
    parent = p.absolute().parent
    if not parent.is_dir():
        raise InputError(f"{flag}: no such directory {parent}", str(p))
    try:
        probe_dir(parent, keep=True)
    except OSError as e:
        raise InputError(f"{flag} cannot be written here ({_cause(e)})", str(p)) from None


def _mode_from_umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextmanager
def temporary(path: Path) -> Iterator[Path]:
    """A temporary name beside `path` for the block to write; on any failure it is removed
    and an ``OSError`` becomes `OutputError` naming `path`."""
    tmp = temp_name(path)
    try:
        yield tmp
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise OutputError(f"cannot write: {_cause(e)}", str(path)) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _sync(f) -> None:
    f.flush()
    os.fsync(f.fileno())


def write_temp(path: Path, write: Callable[[object], None]) -> Path:
    """``write(fileobj)`` into a new temporary beside `path`, flushed and fsynced; returns
    the temporary's path (removed, and `OutputError` raised, on any failure)."""
    with temporary(path) as tmp:
        with open(tmp, "wb") as f:
            write(f)
            _sync(f)
        os.chmod(tmp, _mode_from_umask())
    return tmp


def _install(tmp: Path, path: Path) -> None:
    """Rename a complete temporary to its final name, durably; never over anything but a
    regular file (a device node, a FIFO: `OutputError`, the temporary removed)."""
    kind = special_kind(path)
    if kind is not None:
        tmp.unlink(missing_ok=True)
        raise OutputError(f"is {kind}, not a regular file: not replaced", str(path))
    try:
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise OutputError(f"cannot write: {_cause(e)}", str(path)) from None
    fsync_dir(path.parent)


def write_file(path, write: Callable[[object], None]) -> None:
    """Write one file whole or not at all (see the module docstring)."""
    path = Path(path)
    _install(write_temp(path, write), path)


def _bytes_writer(data) -> Callable[[object], None]:
    """A ``write(fileobj)`` of `data` (bytes or a buffer), in `CHUNK` pieces."""
    view = memoryview(data).cast("B")

    def write(f) -> None:
        for i in range(0, len(view), CHUNK):
            f.write(view[i : i + CHUNK])

    return write


def write_bytes(path, data) -> None:
    """`data` (bytes or a buffer) as the whole content of `path`."""
    write_file(path, _bytes_writer(data))


def write_text(path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def h5_bytes(build: Callable) -> memoryview:
    """The bytes of an HDF5 file made by ``build(h5py.File)`` in memory."""
    import h5py

    buf = io.BytesIO()
    with h5py.File(buf, "w") as f:
        build(f)
    return buf.getbuffer()


@contextmanager
def h5_file(path) -> Iterator:
    """An `h5py.File` to fill inside the block, written to `path` whole or not at all.
    HDF5 writes through a Python file object (h5py's file-object driver), so a write error
    is an ordinary ``OSError`` raised here, never a failure inside HDF5's own file driver,
    and the file streams to disk instead of being held in memory (large graph stores)."""
    import h5py

    path = Path(path)
    with temporary(path) as tmp:
        with open(tmp, "wb") as fo:
            with h5py.File(fo, "w") as f:
                yield f
            _sync(fo)
        os.chmod(tmp, _mode_from_umask())
    _install(tmp, path)


def write_named(path, write: Callable[[str], None]) -> None:
    """``write(name)`` for a library that writes to a file name (matplotlib): a temporary
    name beside `path`, renamed when complete, removed on failure (`OutputError`)."""
    path = Path(path)
    with temporary(path) as tmp:
        write(str(tmp))
    _install(tmp, path)


@contextmanager
def staged(paths: list) -> Iterator[Callable[[Path, object], None]]:
    """Write several files as one output: inside the block call ``put(path, data)`` for
    each (bytes, or an HDF5 builder via `h5_bytes`); when the block ends every file is
    renamed into place; if anything fails, no file of the set is left behind."""
    temps: dict[Path, Path] = {}

    def put(path, data) -> None:
        temps[Path(path)] = write_temp(Path(path), _bytes_writer(data))

    try:
        yield put
        missing = [p for p in map(Path, paths) if p not in temps]
        if missing:
            raise ValueError(f"staged output never written: {missing}")
        for path, tmp in temps.items():
            _install(tmp, path)
    except BaseException:
        for tmp in temps.values():
            tmp.unlink(missing_ok=True)
        raise


@contextmanager
def exclusive_lock(path: Path, waiting: str | None = None):
    """Hold an exclusive ``flock`` of `path` for the block: another process's block on the
    same path waits for it (`waiting`: the status line's phase while it waits; None: it
    waits silently).

    `path` is a directory, locked itself (it must exist), or a lock file, created where
    missing with its folder (where it cannot be, the block runs without the lock).  A file
    system without ``flock`` (some NFS), or a platform without ``fcntl``, runs the block
    without the lock.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not a POSIX system
        yield
        return
    if path.is_dir():
        fd = os.open(path, os.O_RDONLY)
    else:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        except OSError:
            yield
            return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another process holds it: wait, and say so when asked
            with status.phase(waiting) if waiting else nullcontext():
                fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:  # pragma: no cover - a file system without flock (some NFS)
            pass
        yield
    finally:
        os.close(fd)  # releases the lock
