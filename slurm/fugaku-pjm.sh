#!/bin/bash
# Rendered by `gcntrain jobscript` (render again rather than edit):
# gcntrain jobscript --scheduler pjm --nodes 16 --ranks-per-node 4 --cores-per-node 48 --time 02:00:00 --account GROUPNAME --job-name gcn-fugaku --setup '. /vol0004/apps/oss/spack/share/spack/setup-env.sh' --setup 'spack load py-mpi4py' --venv '~/gcntrain/.venv' -- train --scheme 1.5d --replication 4 -o run-fugaku
#PJM --name "gcn-fugaku"
#PJM -L "node=16"
#PJM -L "rscgrp=small"
#PJM -L "elapse=02:00:00"
#PJM --mpi "max-proc-per-node=4"
#PJM -g GROUPNAME
# threads: 12 per rank = 48 cores per node // 4 ranks per node
# estimated memory: 0.000617 GiB per rank, 0.00247 GiB per node (gcntrain simulate)
# Data or software on a /vol000N volume: add "#PJM -x PJM_LLIO_GFSCACHE=/vol000N" above.

# Environment (--module, --setup, --venv):
. /vol0004/apps/oss/spack/share/spack/setup-env.sh
spack load py-mpi4py
source "$HOME"/gcntrain/.venv/bin/activate
command -v gcntrain >/dev/null || { echo "gcntrain not found: check the environment lines" >&2; exit 127; }

# Threads per rank: NUMBA_NUM_THREADS sets Numba's; OMP_NUM_THREADS any other OpenMP code's.
# With Numba's OpenMP threading layer each thread is bound to its own core of the rank's.
export OMP_NUM_THREADS=12
export NUMBA_NUM_THREADS=12
export OMP_PROC_BIND=close
export OMP_PLACES=cores
# no empty per-rank output files (only rank 0 prints)
export PLE_MPI_STD_EMPTYFILE=off

mpiexec -n 64 -stdout-proc ./output.%j/%/1000r/stdout -stderr-proc ./output.%j/%/1000r/stderr gcntrain train --scheme 1.5d --replication 4 -o run-fugaku
