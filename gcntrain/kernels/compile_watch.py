"""Notice Numba compiling (not cache loads): the first call of a kernel on a fresh install
compiles it for seconds, which a user should be told about instead of a silent wait.

Numba fires the ``numba:compile`` event around every real compilation (a signature loaded
from the on-disk cache fires none), nested when a kernel calls other jitted functions;
`CompileWatch` counts the outermost ones and their seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from time import perf_counter

from numba.core import event


class CompileWatch(event.Listener):
    """Counts outermost Numba compilations and their seconds while installed.

    Parameters
    ----------
    on_first : called once, with the name of the function, when the first compilation
        starts (e.g. to print "compiling ...").
    """

    def __init__(self, on_first: Callable[[str], None] | None = None) -> None:
        self.on_first = on_first
        self.count = 0
        self.seconds = 0.0
        self._depth = 0
        self._t0 = 0.0

    def on_start(self, ev) -> None:
        if self._depth == 0:
            self._t0 = perf_counter()
            if self.count == 0 and self.on_first is not None:
                disp = (ev.data or {}).get("dispatcher")
                self.on_first(getattr(disp, "__name__", "kernel"))
        self._depth += 1

    def on_end(self, ev) -> None:
        self._depth = max(self._depth - 1, 0)
        if self._depth == 0:
            self.count += 1
            self.seconds += perf_counter() - self._t0

    def install(self) -> CompileWatch:
        event.register("numba:compile", self)
        return self

    def remove(self) -> None:
        try:
            event.unregister("numba:compile", self)
        except (KeyError, ValueError):
            pass
