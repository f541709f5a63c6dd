"""Numba kernels over raw arrays (callers preallocate outputs); see docs/kernels.md.

Modules: `spmm` (CSR x dense, balanced row chunks), `transpose` (CSR transpose and the
scatter product A.T @ X), `coo` (row pointers of entries in row order), `dense` (the model's
dense products, one thread pool), `elementwise` (ReLU, row normalisation), `softmax` (fused
softmax cross-entropy), `rows` (message row gather/scatter), `quant` (Int2/4/8 messages),
`threads` (thread count per process), `compile_watch` (the compile progress line),
`prefetch` (LLVM prefetch hint), `dropout` (counter-based dropout), `edges` (the
generators' R-MAT levels, edge scatter into CSR, per-row sort and de-duplication),
`textparse` (the converters' edge-list parser over byte blocks), `edgevalues` (edge lists
with values into CSR: scatter, stable merge of each row's repeats), `csr` (loading's CSR passes:
row gathers, sortedness, the normalised support) and `gpu`
(optional CuPy twin, never imported here).
Nothing is imported eagerly, so importing the package compiles nothing.
"""

import os

# Idle OpenMP workers of Numba's parallel kernels sleep instead of spinning (read once, when
# the OpenMP runtime loads at the first parallel kernel): spinning workers took the cores from
# the element-wise numpy code and the BLAS between kernels (a serial epoch at 2 threads on 2
# cores: 145 ms spinning, 93 ms passive).  A value set by the user is kept.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def _check_thread_env() -> None:
    """Numba reads ``NUMBA_NUM_THREADS`` when it is first imported and fails with a bare
    ValueError on a value that is not a positive integer: refuse it first, in one line."""
    env = os.environ.get("NUMBA_NUM_THREADS", "").strip()
    if not env:
        return
    try:
        ok = int(env) >= 1
    except ValueError:
        ok = False
    if not ok:
        from gcntrain.errors import InputError

        raise InputError(f"NUMBA_NUM_THREADS must be a positive integer, got {env!r}")


_check_thread_env()
