"""Whole arrays of a graph file read at the speed of the disk, and the content hash computed
beside the reads.

`read_array` reads a dataset by `h5py.Dataset.read_direct` into one preallocated array, in
slices of `SLICE` bytes (no temporary of the array's size, no cast).  `ArraysHash` computes
`gcntrain.data.graph.Graph.content_hash` of the arrays handed to it, in the order of
`HASHED_ARRAYS`, on a worker thread: hashlib and numpy's casts release the GIL, so the hash
runs while the main thread reads the next dataset and checks the arrays read, instead of
after them.  `StreamHash` does the same for a stream of byte slices (the streamed check of
a file's hash, `gcntrain.data.store.verify_content_hash`), a few slices in flight at most.
`hash_array` is the one definition of what an array contributes to the hash
(`gcntrain.data.store.arrays_hash` feeds it too).
"""

from __future__ import annotations

import hashlib
import queue
import threading

import numpy as np

#: bytes per read (`read_array`) and per hash update (ids are widened to int64 a slice at
#: a time)
SLICE = 64 << 20

#: dtype kinds `read_array` reads directly (others go through h5py's own conversion)
_DIRECT_KINDS = "biuf"


def read_array(ds) -> np.ndarray:
    """The whole array of the h5py dataset `ds`, read into one preallocated array in slices
    of about `SLICE` bytes along the first axis (`read_direct`: no intermediate copy).
    Datasets of other dtypes (strings, compounds) and scalars are read by ``ds[()]``."""
    if ds.ndim == 0 or ds.dtype.kind not in _DIRECT_KINDS:
        return np.asarray(ds[()])
    out = np.empty(ds.shape, dtype=ds.dtype)
    if out.size == 0:
        return out
    row = max(int(np.prod(ds.shape[1:], dtype=np.int64)) * out.itemsize, 1)
    step = max(SLICE // row, 1)
    for lo in range(0, ds.shape[0], step):
        sel = np.s_[lo : min(lo + step, ds.shape[0])]
        ds.read_direct(out, source_sel=sel, dest_sel=sel)
    return out


def hash_array(h, name: str, a) -> None:
    """Feed array `name` (as a `Graph` holds it; None when absent) to the sha256 `h` as
    `Graph.content_hash` does: the name, then ``\\x00none`` or the dtype and shape (id
    arrays as int64) and the bytes, ids widened a slice at a time."""
    h.update(name.encode())
    if a is None:
        h.update(b"\x00none")
        return
    a = np.ascontiguousarray(a)
    wide = name in ("indices", "indptr")
    out_dtype = np.dtype(np.int64) if wide else a.dtype
    h.update(str(out_dtype).encode() + str(a.shape).encode())
    flat = a.reshape(-1)
    step = max(SLICE // max(out_dtype.itemsize, 1), 1)
    for lo in range(0, flat.shape[0], step):
        part = flat[lo : lo + step]
        if wide:
            part = part.astype(np.int64, copy=False)
        h.update(part.view(np.uint8))


class _HashThread:
    """A sha256 fed items that a worker thread hashes (``feed(h, item)``) while the caller
    goes on; at most `ahead` items wait (0: no bound), the caller blocking meanwhile.
    `hexdigest` waits for the worker and raises the first error it met.

    Items must not change once handed over.  A caller that stops early (an invalid file)
    calls `close` or simply drops the object: the worker hashes what it was given and ends
    (it holds no reference to the object, whose finaliser tells it to stop).
    """

    def __init__(self, feed, ahead: int = 0) -> None:
        self._h = hashlib.sha256()
        self._q: queue.Queue = queue.Queue(maxsize=max(int(ahead), 0))
        self._errors: list[BaseException] = []
        self._open = True
        self._thread = threading.Thread(
            target=_hash_worker, args=(self._q, self._h, feed, self._errors), daemon=True
        )
        self._thread.start()

    def _put(self, item) -> None:
        self._q.put(item)

    def close(self) -> None:
        """No more items (idempotent)."""
        if self._open:
            self._open = False
            self._q.put(None)

    def hexdigest(self) -> str:
        """The hash of every item given (waits for the worker)."""
        self.close()
        self._thread.join()
        if self._errors:
            raise self._errors[0]
        return self._h.hexdigest()

    def __del__(self) -> None:
        self.close()


def _hash_worker(q: queue.Queue, h, feed, errors: list) -> None:
    """`_HashThread`'s thread: feed each item to `h` until None."""
    while True:
        item = q.get()
        if item is None:
            return
        if not errors:
            try:
                feed(h, item)
            except BaseException as e:  # reported by hexdigest
                errors.append(e)


def _feed_array(h, item) -> None:
    hash_array(h, *item)


def _feed_bytes(h, data) -> None:
    h.update(data)


class ArraysHash(_HashThread):
    """The content hash of arrays handed over one by one (`add`, in `HASHED_ARRAYS` order),
    computed on a worker thread while the caller goes on (no bound on the arrays waiting:
    they are the graph's own, already in memory)."""

    def __init__(self) -> None:
        super().__init__(_feed_array)

    def add(self, name: str, a) -> None:
        """Hash array `name` next (None: absent)."""
        self._put((name, a))


class StreamHash(_HashThread):
    """A sha256 fed byte slices (`update`) that a worker thread hashes while the caller reads
    and checks the next ones; at most `ahead` slices wait, so the memory stays a few
    slices."""

    def __init__(self, ahead: int = 2) -> None:
        super().__init__(_feed_bytes, max(int(ahead), 1))

    def update(self, data) -> None:
        """Hash the bytes of `data` (bytes, or a contiguous array: its raw bytes) next."""
        self._put(data)
