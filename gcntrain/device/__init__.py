"""The compute device of a run: detection, the GPU of a rank, the array module and MPI
staging of device buffers (docs/gpu.md).

Imports nothing of gcntrain's but the leaf modules, and never CuPy at import time: every
module here imports and runs on a machine without CuPy.  `detect` probes CuPy and the GPUs
(never raising), `choice` resolves ``--device`` and picks a rank's GPU, `backend` is the
array-module choice (`host`: NumPy, `cupy_backend`: CuPy, `emulated`: a host emulation for
tests), `mpi` detects CUDA-aware
MPI, `staging` moves device buffers through pinned host buffers around a counted
communicator.
"""
