"""The per-run workspace: node-wise buffers a training run reuses from epoch to epoch.

Every epoch of full-batch training makes blocks of the same shapes.  Allocating them afresh
costs more than their arithmetic where they are large: a buffer above glibc's largest mmap
threshold (32 MiB) comes from a fresh mapping whose pages the kernel zeroes on first touch
(on the 200k-node benchmark graph the 102 MB dropout of the features: about 470 minor
faults per epoch before the workspace, 1 after; docs/measurements/epoch-workspace-2026-12-07.md).
`fit` gives the Ops a `Workspace` for the run (``ops.workspace``); the Ops' dropout
(`gcntrain.model.ops.Ops.dropout`) writes into the buffer named after the call's phase
instead of a new array, so after the first epoch it allocates nothing.

A buffer is handed out again by the next call of the same name, so a name belongs to one
call site per pass, and whoever holds a result must be done with it by then: the forward
dropout of layer l is read by layer l's backward pass of the same epoch, and the next write
is the next epoch's forward.  The layers say which results they want from it
(`Workspace.serve`): only those they keep through the epoch's peak anyway (a layer's
dropped input cached for its backward pass, the gradient through a dropout), so the
workspace saves allocations without raising the peak.  Only host arrays are kept: a device
run allocates from its library's memory pool (CuPy's), which already reuses blocks of the
sizes an epoch frees.
"""

from __future__ import annotations

import numpy as np


class Workspace:
    """Named buffers, made on first use and reused while the shape and dtype stay.

    Attributes
    ----------
    allocations : int
        Buffers made so far (a new name, or a name asked for with another shape or dtype).
    """

    def __init__(self) -> None:
        self._buffers: dict[str, np.ndarray] = {}
        self._served: set[str] = set()
        self.allocations = 0

    def serve(self, name: str) -> None:
        """Hand out buffer `name` from now on (`serves`): its user keeps its result alive
        through the epoch's peak anyway, so a buffer held between epochs adds nothing to
        the peak (a result freed at once, such as the dropped input of an
        aggregation-first layer, is not served: holding it would raise the peak)."""
        self._served.add(name)

    def serves(self, name: str) -> bool:
        """Whether `serve` was called for `name`."""
        return name in self._served

    def take(self, name: str, shape: tuple[int, ...], dtype) -> np.ndarray:
        """The buffer `name` with this shape and dtype (uninitialised on first use; after
        that, whatever its last user left in it)."""
        shape, dtype = tuple(int(s) for s in shape), np.dtype(dtype)
        buf = self._buffers.get(name)
        if buf is None or buf.shape != shape or buf.dtype != dtype:
            self._buffers.pop(name, None)  # let the old one go before the new one is made
            buf = self._buffers[name] = np.empty(shape, dtype=dtype)
            self.allocations += 1
        return buf

    @property
    def nbytes(self) -> int:
        """Bytes held by the buffers."""
        return sum(b.nbytes for b in self._buffers.values())

    def names(self) -> list[str]:
        """The buffers' names, in the order they were made."""
        return list(self._buffers)

    def clear(self) -> None:
        """Let every buffer go."""
        self._buffers.clear()
