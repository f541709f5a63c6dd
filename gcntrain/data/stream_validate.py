"""The checks of `gcntrain.data.validate`, made slice by slice while a graph file's arrays
are streamed for their content hash (`gcntrain.data.store.verify_content_hash`).

Under MPI rank 0 streams the whole file for the hash while every rank reads only its rows,
so this is where the whole file is validated: the same rules and the same messages as the
serial read (`read_graph`), node and entry numbers counted over the whole array, in the
memory of one slice.  One `Stream` per dataset: `check_kind` before any value is read
(dtype and shape), `check_slice` on each slice with its offset, `finish` after the last.
"""

from __future__ import annotations

import numpy as np

from gcntrain.errors import FormatError
from gcntrain.kernels.csr import csr_diagonal_count

MASKS = ("train_mask", "val_mask", "test_mask")


class Stream:
    """The running checks of dataset `name` (an ``h5py.Dataset``-like with ``shape`` and
    ``dtype``) of a graph with `n` nodes, `nnz` entries and `num_classes` classes (None:
    not set)."""

    def __init__(self, name: str, ds, n: int, nnz: int, num_classes: int | None, where: str):
        self.name, self.ds, self.where = name, ds, where
        self.n, self.nnz, self.num_classes = n, nnz, num_classes
        self.prev = None  # indptr: the last value of the previous slice

    def _fail(self, msg: str):
        raise FormatError(msg, self.where)

    def check_kind(self) -> None:
        """Dtype and shape, from the dataset's metadata alone."""
        name, shape, dt = self.name, tuple(self.ds.shape), np.dtype(self.ds.dtype)
        if name == "features":
            if len(shape) != 2:
                self._fail(f"features must be a 2-D array (n x f), shape is {shape}")
            if not np.issubdtype(dt, np.floating):
                self._fail(f"features must have a float dtype (is {dt})")
            if shape[0] != self.n:
                self._fail(f"features has {shape[0]} rows, expected n = {self.n}")
            return
        if len(shape) != 1:
            self._fail(f"{name} must be a 1-D array (shape is {shape})")
        if name in MASKS:
            if dt != np.bool_ and not np.issubdtype(dt, np.integer):
                self._fail(f"{name} must be bool or 0/1 integers (dtype is {dt})")
            if shape[0] != self.n:
                self._fail(f"{name} has length {shape[0]}, expected n = {self.n}")
        elif name == "data":
            if not np.issubdtype(dt, np.floating):
                self._fail(f"data must have a float dtype (is {dt})")
            if shape[0] != self.nnz:
                self._fail(f"data has {shape[0]} entries, expected nnz = {self.nnz}")
        elif name in ("indptr", "indices", "labels"):
            if not np.issubdtype(dt, np.integer):
                self._fail(f"{name} must have an integer dtype (is {dt})")
            want = {"indptr": self.n + 1, "labels": self.n}.get(name)
            if name == "indptr" and shape[0] != want:
                self._fail(f"indptr has length {shape[0]}, expected n + 1 = {want}")
            if name == "labels" and shape[0] != want:
                self._fail(f"labels has {shape[0]} entries, expected n = {want}")

    def check_slice(self, a: np.ndarray, lo: int) -> None:
        """The value rules on one slice starting at element (row) `lo` of the array."""
        name = self.name
        if not a.size:
            return
        if name in MASKS and a.dtype != np.bool_:
            bad = np.flatnonzero((a != 0) & (a != 1))
            if bad.size:
                node = lo + int(bad[0])
                self._fail(f"{name} has value {int(a[bad[0]])} at node {node} (expected 0 or 1)")
        elif name == "indices":
            bad = np.flatnonzero((a < 0) | (a >= self.n))
            if bad.size:
                self._fail(
                    f"column index {int(a[bad[0]])} out of range [0, {self.n}) "
                    f"(entry {lo + int(bad[0])})"
                )
        elif name == "indptr":
            if lo == 0 and int(a[0]) != 0:
                self._fail(f"indptr[0] is {int(a[0])}, expected 0")
            full = a if self.prev is None else np.concatenate(([self.prev], a))
            dec = np.flatnonzero(full[1:] < full[:-1])
            if dec.size:
                row = lo - (0 if self.prev is None else 1) + int(dec[0])
                self._fail(
                    f"indptr is not monotone (decreases at row {row}: "
                    f"{int(full[dec[0]])} -> {int(full[dec[0] + 1])})"
                )
            self.prev = int(a[-1])
        elif name == "labels":
            low = np.flatnonzero(a < -1)
            if low.size:
                node = lo + int(low[0])
                self._fail(f"label {int(a[low[0]])} of node {node} is < -1 (-1 marks unlabeled)")
            if self.num_classes is not None:
                high = np.flatnonzero(a >= self.num_classes)
                if high.size:
                    node = lo + int(high[0])
                    self._fail(
                        f"label {int(a[high[0]])} of node {node} is >= num_classes "
                        f"({self.num_classes})"
                    )
            elif int(a.max()) >= 0:
                self._fail("labels are present but num_classes is not set")
        elif name == "data":
            bad = np.flatnonzero(~np.isfinite(a))
            if bad.size:
                self._fail(f"data has a non-finite value ({a[bad[0]]}) at entry {lo + int(bad[0])}")
        elif name == "features":
            ok = np.isfinite(a).all(axis=1)
            if not ok.all():
                row = int(np.argmin(ok))
                col = int(np.flatnonzero(~np.isfinite(a[row]))[0])
                self._fail(
                    f"features has a non-finite value ({a[row, col]}) in row {lo + row} "
                    f"(column {col})"
                )

    def finish(self) -> None:
        """What only the whole array shows (indptr's last value)."""
        if self.name == "indptr" and self.prev is not None and self.prev != self.nnz:
            self._fail(f"the arrays hold {self.prev} entries but nnz is {self.nnz}")


class DiagonalCount:
    """The diagonal entries of a CSR whose `indices` are streamed by slices, its `indptr`
    (an ``h5py.Dataset``-like, already validated) read alongside in windows of rows: the
    count `read_graph` compares with attribute ``self_loops``, in the memory of a slice and
    the rows it spans."""

    def __init__(self, indptr):
        self.indptr, self.row, self.count = indptr, 0, 0

    def add(self, a: np.ndarray, lo: int) -> None:
        """Count the diagonal entries of `a`, the entries lo, lo + 1, ... of `indices`."""
        if not a.size:
            return
        hi = lo + a.size
        end = self.indptr.shape[0]
        stop = min(self.row + a.size + 2, end)
        window = np.asarray(self.indptr[self.row : stop], dtype=np.int64)
        while window[-1] < hi and stop < end:  # empty rows: read on until entry hi - 1
            more = min(stop + max(a.size, 1024), end)
            window = np.concatenate([window, np.asarray(self.indptr[stop:more], np.int64)])
            stop = more
        # each row's entries within this slice, counted in one pass (`csr_diagonal_count`)
        w = np.clip(window, lo, hi) - lo
        self.count += int(csr_diagonal_count(w, np.ascontiguousarray(a), self.row))
        self.row += int(np.searchsorted(window, hi - 1, side="right")) - 1

    def check(self, declared: int, where: str) -> None:
        """Attribute ``self_loops`` (`declared`; < 0: not set) against the count."""
        if declared >= 0 and declared != self.count:
            raise FormatError(
                f"attribute self_loops is {declared} but the adjacency has "
                f"{self.count} diagonal entries",
                where,
            )


def check_num_features(declared: int, features, where: str) -> None:
    """The attribute check `read_graph` makes after the arrays' own: attribute
    ``num_features`` (`declared`; < 0: not set) against the columns of `features` (an
    ``h5py.Dataset``-like, None when absent), from its shape alone.  Run after the streamed
    checks and before the content hash is compared, so the line is the serial one."""
    nf = 0 if features is None or len(features.shape) != 2 else int(features.shape[1])
    if declared >= 0 and declared != nf:
        raise FormatError(
            f"attribute num_features is {declared} but features has {nf} columns", where
        )
