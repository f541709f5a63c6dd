"""Checkpoint files: one directory per checkpoint, one array file per rank, written whole or
not at all (no MPI here; `gcntrain.job.checkpoint` coordinates the ranks).

Layout of a checkpoint root ``DIR``::

    DIR/LATEST                  name of the newest complete checkpoint (one line)
    DIR/epoch-000012/meta.json  format, epoch, ranks, scheme and its options, the training
                                configuration, the graph's content hash
    DIR/epoch-000012/rank-00003.npz   that rank's arrays (`numpy.savez`, no pickled objects)

A checkpoint is staged in ``DIR/.epoch-000012.tmp`` (every file written to a temporary name,
flushed, fsynced and renamed), then the staging directory is renamed to its final name,
``LATEST`` is replaced atomically, and only then is the previous checkpoint removed: at every
instant ``LATEST`` names a complete checkpoint.  Resuming takes the newest complete
``epoch-N/`` (`find_latest`), which is the one ``LATEST`` names unless writing ``LATEST``
failed after the directory was published.  Any failure (ENOSPC included) removes what
was staged and raises `OutputError` naming the file and the cause.
"""

from __future__ import annotations

import json
import os
import shutil
import zipfile
from pathlib import Path

import numpy as np

from gcntrain.data.atomic import fsync_dir, probe_dir, write_file
from gcntrain.errors import InputError, OutputError

#: version of the checkpoint layout
FORMAT = 1
LATEST = "LATEST"
META = "meta.json"


def checkpoint_name(epoch: int) -> str:
    return f"epoch-{int(epoch):06d}"


def stage_dir(root, epoch: int) -> Path:
    """Where the checkpoint of `epoch` is staged before it is published."""
    return Path(root) / f".{checkpoint_name(epoch)}.tmp"


def rank_file(ckpt_dir, rank: int) -> Path:
    return Path(ckpt_dir) / f"rank-{int(rank):05d}.npz"


def write_rank(root, epoch: int, rank: int, arrays: dict[str, np.ndarray]) -> Path:
    """Stage this rank's arrays of the checkpoint of `epoch`."""
    stage = stage_dir(root, epoch)
    try:
        stage.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"cannot create {stage}: {e.strerror or e}") from None
    path = rank_file(stage, rank)
    write_file(path, lambda f: np.savez(f, **arrays))
    return path


def publish(root, epoch: int, meta: dict, ranks: int | None = None) -> Path:
    """Complete the staged checkpoint of `epoch` (every rank file written, `ranks` of them
    when given): write its metadata, rename it into place, point ``LATEST`` at it, then
    remove older checkpoints."""
    root = Path(root)
    stage = stage_dir(root, epoch)
    final = root / checkpoint_name(epoch)
    if ranks is not None:
        missing = [r for r in range(int(ranks)) if not rank_file(stage, r).is_file()]
        if missing:
            raise OutputError(
                f"checkpoint files of ranks {missing[:8]} are not in {stage} (a directory "
                "that is not shared by every node?)"
            )
    text = json.dumps({"format": FORMAT, "epoch": int(epoch), **meta}, indent=1, default=str)
    write_file(stage / META, lambda f: f.write(text.encode()))
    fsync_dir(stage)
    try:
        if final.exists():  # the same epoch again (a new run in the same directory)
            aside = root / f".{final.name}.{os.getpid()}.old"
            os.replace(final, aside)
            shutil.rmtree(aside, ignore_errors=True)
        os.replace(stage, final)
    except OSError as e:
        raise OutputError(f"cannot publish {final}: {e.strerror or e}") from None
    try:
        write_file(root / LATEST, lambda f: f.write((final.name + "\n").encode()))
        fsync_dir(root)
    except (OutputError, OSError) as e:
        # the checkpoint is complete under its final name: resume finds it without LATEST
        # (`find_latest`); the older ones stay until a LATEST names a newer one
        raise OutputError(
            f"{e}; the checkpoint {final} is complete and --resume {root} continues from it"
        ) from None
    for old in root.glob("epoch-*"):
        if old.name != final.name and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
    return final


def discard(root, epoch: int) -> None:
    """Remove whatever was staged for `epoch` (after a failed write)."""
    shutil.rmtree(stage_dir(root, epoch), ignore_errors=True)


def remove_stale(root) -> None:
    """Remove staging directories left by an interrupted write (never the published ones)."""
    for old in Path(root).glob(".epoch-*.tmp"):
        shutil.rmtree(old, ignore_errors=True)


def check_root(root) -> None:
    """The checkpoint root exists (created if needed) and is a writable directory."""
    root = Path(root)
    if root.exists() and not root.is_dir():
        raise InputError(f"the checkpoint directory {root} is not a directory")
    try:
        probe_dir(root, keep=True)
    except OSError as e:
        raise InputError(
            f"the checkpoint directory {root} is not writable ({e.strerror or e})"
        ) from None


def _complete(ckpt: Path) -> dict | None:
    """The metadata of a published checkpoint directory when it is complete (its
    ``meta.json`` readable, of this format and epoch, and a file for each of its ranks);
    None otherwise.  A directory gets its final name only after every file in it was
    written whole (`publish`), so a complete one is a checkpoint to resume from."""
    try:
        meta = json.loads((ckpt / META).read_text())
        epoch = int(ckpt.name.split("-", 1)[1])
    except (OSError, UnicodeDecodeError, ValueError, IndexError):
        return None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("epoch") != epoch:
        return None
    ranks = int(meta.get("ranks") or 1)
    if not all(rank_file(ckpt, r).is_file() for r in range(ranks)):
        return None
    return meta


def find_latest(root) -> tuple[Path, dict, str | None]:
    """(directory, metadata, note) of the checkpoint to resume from under `root`: the
    newest complete ``epoch-N/``.  ``LATEST`` names it after every successful write; when
    ``LATEST`` is missing, unreadable, or names another directory (its write failed after
    the directory was published: a full disk), the newest complete directory is still the
    one, and `note` (one line; None when ``LATEST`` agrees) says so."""
    root = Path(root)
    pointer = root / LATEST
    named = None
    if pointer.is_file():
        try:
            named = pointer.read_text().strip() or None
        except (OSError, UnicodeDecodeError):
            named = None
    found = []
    for d in root.glob("epoch-*"):
        suffix = d.name.split("-", 1)[1]
        if d.is_dir() and suffix.isdigit():
            found.append((int(suffix), d))
    for _, ckpt in sorted(found, reverse=True):
        meta = _complete(ckpt)
        if meta is None:
            continue
        note = None
        if named != ckpt.name:
            what = f"names {named}" if named else "is missing or unreadable"
            note = (
                f"note: {root / LATEST} {what}; resuming from {ckpt}, the newest complete "
                "checkpoint"
            )
        return ckpt, meta, note
    if named is not None and (root / named / META).is_file():
        meta_file = root / named / META
        try:
            fmt = json.loads(meta_file.read_text()).get("format")
        except (OSError, UnicodeDecodeError, ValueError) as e:  # cut mid-JSON, unreadable
            raise InputError(f"unreadable checkpoint metadata {meta_file}: {e}") from None
        except AttributeError:  # valid JSON, but not an object
            raise InputError(f"checkpoint metadata {meta_file} is not a JSON object") from None
        if fmt != FORMAT:
            raise InputError(f"checkpoint {root / named} has format {fmt}, expected {FORMAT}")
    if named is None and not found:
        raise InputError(f"no checkpoint to resume from in {root} (no {LATEST} file)")
    raise InputError(f"no complete checkpoint to resume from in {root}")


def latest(root) -> tuple[Path, dict]:
    """(directory, metadata) of the newest complete checkpoint under `root`
    (`find_latest` without its note)."""
    ckpt, meta, _ = find_latest(root)
    return ckpt, meta


def read_rank(ckpt_dir, rank: int) -> dict[str, np.ndarray]:
    """This rank's arrays of a published checkpoint."""
    path = rank_file(ckpt_dir, rank)
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as e:
        why = str(e) or type(e).__name__  # an empty file: EOFError "No data left in file"
        raise InputError(f"unreadable checkpoint file {path}: {why}") from None
