#!/bin/bash
# Rendered by `gcntrain jobscript` (render again rather than edit):
# gcntrain jobscript --scheduler pjm --nodes 2 --ranks-per-node 4 --threads 12 --time 00:30:00 --module gcc/12 --setup '. "/opt/my spack/setup-env.sh"' --setup 'spack load py-mpi4py' --venv '~/envs/gcn 1' -- train missing/graph.h5 --scheme 1d --checkpoint ck
#PJM --name "gcntrain"
#PJM -L "node=2"
#PJM -L "rscgrp=small"
#PJM -L "elapse=00:30:00"
#PJM --mpi "max-proc-per-node=4"
# Fugaku charges a group: add "#PJM -g GROUP" here (--account GROUP)
# threads: 12 per rank (--threads)
# estimated memory: skipped, missing/graph.h5 is not on this machine
# Data or software on a /vol000N volume: add "#PJM -x PJM_LLIO_GFSCACHE=/vol000N" above.

# Environment (--module, --setup, --venv):
module load gcc/12
. "/opt/my spack/setup-env.sh"
spack load py-mpi4py
source "$HOME"/'envs/gcn 1/bin/activate'
command -v gcntrain >/dev/null || { echo "gcntrain not found: check the environment lines" >&2; exit 127; }

# Threads per rank: NUMBA_NUM_THREADS sets Numba's; OMP_NUM_THREADS any other OpenMP code's.
# With Numba's OpenMP threading layer each thread is bound to its own core of the rank's.
export OMP_NUM_THREADS=12
export NUMBA_NUM_THREADS=12
export OMP_PROC_BIND=close
export OMP_PLACES=cores
# no empty per-rank output files (only rank 0 prints)
export PLE_MPI_STD_EMPTYFILE=off

# Checkpoints: ck every 10 epochs and at the last.
# gcntrain checkpoints and exits on SIGTERM or SIGUSR1; when the job ends early,
# continue with the same train arguments plus `--resume ck`.
mpiexec -n 8 -stdout-proc ./output.%j/%/1000r/stdout -stderr-proc ./output.%j/%/1000r/stderr gcntrain train missing/graph.h5 --scheme 1d --checkpoint ck
