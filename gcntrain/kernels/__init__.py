"""Numba kernels over raw arrays (callers preallocate outputs); see docs/kernels.md.

Modules: `spmm` (CSR x dense, balanced row chunks), `transpose` (CSR transpose and the
scatter product A.T @ X), `elementwise` (ReLU, row normalisation), `softmax` (fused softmax
cross-entropy), `threads` (thread count per process), `prefetch` (LLVM prefetch hint),
`dropout` (counter-based dropout) and `gpu` (optional CuPy twin, never imported here).
Nothing is imported eagerly, so importing the package compiles nothing.
"""
