"""Start Numba ahead of a process's first kernel.

The first kernel a process calls pays for loading Numba's typing and target registries
(about 0.25 s of CPU on an idle core, more on a loaded one), whether the kernel then loads
from the on-disk cache or compiles.  `start_numba` pays it at a moment of the caller's
choosing: a rank that would otherwise sleep while rank 0 checks a graph's content hash
starts Numba on the cores the check leaves, instead of inside its later work
(``--scheme auto``'s planning, then setup).
"""

from __future__ import annotations


def start_numba() -> None:
    """Load Numba's CPU typing and target registries now (best effort: any failure leaves
    it to the first kernel, as before)."""
    try:
        from numba.core.registry import cpu_target

        cpu_target.typing_context.refresh()
        cpu_target.target_context.refresh()
    except Exception:  # noqa: BLE001 - an optimisation only: Numba's internals may change
        pass
