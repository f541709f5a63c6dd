"""Ops proxies generated from `gcntrain.model.ops.PROTOCOL`: timing, recording, faults.

`OpsProxy` gets one forwarding method per protocol entry (made by `_forward` when this
module is imported), so every protocol method passes through a proxy's ``_call`` hook and a
new method cannot go untimed or unrecorded.  Attributes that are not protocol methods
(``rows``, ``col_range``, ...) are the wrapped object's.
"""

from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter

import numpy as np
import scipy.sparse as sp

from gcntrain.model.ops import PROTOCOL, ParamSpec
from gcntrain.model.phase import Phase


class OpsProxy:
    """Forwards every protocol method to `inner` through ``_call(name, fn, args, kwargs)``."""

    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name: str):
        return getattr(self._inner, name)

    @property
    def workspace(self):
        """The wrapped Ops' workspace (`fit` sets it through whatever proxies it is given)."""
        return getattr(self._inner, "workspace", None)

    @workspace.setter
    def workspace(self, ws) -> None:
        self._inner.workspace = ws

    def _call(self, name: str, fn, args: tuple, kwargs: dict):
        return fn(*args, **kwargs)


def _forward(name: str):
    def method(self, *args, **kwargs):
        return self._call(name, getattr(self._inner, name), args, kwargs)

    method.__name__ = name
    method.__qualname__ = f"OpsProxy.{name}"
    method.__doc__ = f"Forward ``{name}`` (category {PROTOCOL[name]!r}) through ``_call``."
    return method


for _name in PROTOCOL:
    setattr(OpsProxy, _name, _forward(_name))


class TimedOps(OpsProxy):
    """Accumulates seconds in graph products (`t_aggregation`) and dense products (`t_dense`)
    since the last `reset`.

    Where the inner Ops compute on a device (``ops.compute.device``: kernels run
    asynchronously), the device is synchronised before each clock reading, so a product's
    seconds are its own work and not the queued work of the calls before it; on the host
    (`gcntrain.model.compute.HOST`) nothing is called."""

    def __init__(self, inner):
        super().__init__(inner)
        compute = getattr(inner, "compute", None)
        #: the device's synchronisation (None on the host: the CPU path calls nothing)
        self._sync = compute.synchronize if getattr(compute, "device", False) else None
        self.reset()

    def reset(self) -> None:
        self.t_aggregation = 0.0
        self.t_dense = 0.0

    def synchronize(self) -> None:
        """Wait for the device's queued work (nothing on the host): the trainer calls it
        before reading the epoch clock."""
        if self._sync is not None:
            self._sync()

    def _call(self, name, fn, args, kwargs):
        cat = PROTOCOL[name]
        if cat not in ("graph", "dense"):
            return fn(*args, **kwargs)
        sync = self._sync
        if sync is not None:
            sync()
        t = perf_counter()
        out = fn(*args, **kwargs)
        if sync is not None:
            sync()
        dt = perf_counter() - t
        if cat == "graph":
            self.t_aggregation += dt
        else:
            self.t_dense += dt
        return out


class FaultOps(OpsProxy):
    """Test hook (``GCNTRAIN_FAULT=rank:N``): raise in this rank's N-th forward aggregation."""

    def __init__(self, inner, at_call: int):
        super().__init__(inner)
        self._left = int(at_call)

    def _call(self, name, fn, args, kwargs):
        if name == "aggregate":
            self._left -= 1
            if self._left <= 0:
                key = kwargs["phase"].key
                raise RuntimeError(f"injected fault (GCNTRAIN_FAULT) in aggregation {key}")
        return fn(*args, **kwargs)


def _signature(a) -> tuple:
    """What a plan needs to know of one argument: shapes, dtypes, sparsity, simple values."""
    if sp.issparse(a):
        return ("csr", tuple(a.shape), int(a.dtype.itemsize))
    if isinstance(a, np.ndarray):
        return ("array", tuple(a.shape), int(a.dtype.itemsize))
    if isinstance(a, ParamSpec):
        return ("param", a.name, tuple(a.shape))
    if isinstance(a, list):
        return ("list", len(a))
    if a is None or isinstance(a, bool | int | float | str):
        return ("value", a)
    if isinstance(a, tuple):
        return ("tuple", len(a))
    return ("object", type(a).__name__)


@dataclass(frozen=True)
class Call:
    """One recorded Ops call: method, phase, and the signature of its arguments.

    ``args`` holds `_signature` of every positional argument, ``kwargs`` the sorted
    (name, signature) pairs of the keyword arguments other than ``phase``.
    """

    method: str
    phase: Phase
    args: tuple
    kwargs: tuple

    @property
    def key(self) -> tuple:
        """Identity of the call for pricing: everything but the pass context (training flag,
        epoch, direction); the layer and term stay, since a layout may vary by layer."""
        return (self.method, self.phase.layer, self.phase.term, self.args, self.kwargs)

    def shape(self, i: int) -> tuple[int, ...]:
        """Shape of positional array argument i."""
        return self.args[i][1]

    def sparse(self, i: int) -> bool:
        return self.args[i][0] == "csr"

    def itemsize(self, i: int = 0) -> int:
        return self.args[i][2]

    def kw(self, name: str, default=None):
        for k, v in self.kwargs:
            if k == name:
                return v[1] if v[0] == "value" else v
        return default


class RecordingOps(OpsProxy):
    """Logs every protocol call (a `Call`) and forwards it (usually to a `SerialOps`)."""

    def __init__(self, inner):
        super().__init__(inner)
        self.calls: list[Call] = []

    def _call(self, name, fn, args, kwargs):
        kw = tuple(sorted((k, _signature(v)) for k, v in kwargs.items() if k != "phase"))
        self.calls.append(Call(name, kwargs["phase"], tuple(map(_signature, args)), kw))
        return fn(*args, **kwargs)
