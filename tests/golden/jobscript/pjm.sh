#!/bin/bash
# Rendered by `gcntrain jobscript` (render again rather than edit):
# gcntrain jobscript --scheduler pjm --nodes 2 --ranks-per-node 4 --threads 12 --time 00:30:00 -- train missing/graph.h5 --scheme 1d --checkpoint ck
#PJM --name "gcntrain"
#PJM -L "node=2"
#PJM -L "rscgrp=small"
#PJM -L "elapse=00:30:00"
#PJM --mpi "max-proc-per-node=4"
# Fugaku charges a group: add "#PJM -g GROUP" here (--account GROUP)
# threads: 12 per rank (--threads)
# estimated memory: skipped, missing/graph.h5 is not on this machine
# Data or software on a /vol000N volume: add "#PJM -x PJM_LLIO_GFSCACHE=/vol000N" above.

# Environment (adapt): Python and mpi4py built on Fujitsu MPI for the A64FX, e.g. from
# Fugaku's Spack instance, then the environment gcntrain is installed in:
#   . /vol0004/apps/oss/spack/share/spack/setup-env.sh
#   spack load py-mpi4py
#   . "$HOME/gcntrain/.venv/bin/activate"

export OMP_NUM_THREADS=12
export NUMBA_NUM_THREADS=12
# no empty per-rank output files (only rank 0 prints)
export PLE_MPI_STD_EMPTYFILE=off

# Checkpoints: ck every 10 epochs and at the last.
# gcntrain checkpoints and exits on SIGTERM or SIGUSR1; when the job ends early,
# continue with the same train arguments plus `--resume ck`.
mpiexec -n 8 -stdout-proc ./output.%j/%/1000r/stdout -stderr-proc ./output.%j/%/1000r/stderr gcntrain train missing/graph.h5 --scheme 1d --checkpoint ck
