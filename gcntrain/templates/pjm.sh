#!/bin/bash
${header}
#PJM --name "${job_name}"
#PJM -L "node=${nodes}"
#PJM -L "rscgrp=${rscgrp}"
#PJM -L "elapse=${time}"
#PJM --mpi "max-proc-per-node=${ranks_per_node}"
${directives}
${threads_note}
${memory_note}
# Data or software on a /vol000N volume: add "#PJM -x PJM_LLIO_GFSCACHE=/vol000N" above.

${setup}
command -v gcntrain >/dev/null || { echo "gcntrain not found: check the environment lines" >&2; exit 127; }

# Threads per rank: NUMBA_NUM_THREADS sets Numba's; OMP_NUM_THREADS any other OpenMP code's.
# With Numba's OpenMP threading layer each thread is bound to its own core of the rank's.
export OMP_NUM_THREADS=${threads}
export NUMBA_NUM_THREADS=${threads}
export OMP_PROC_BIND=close
export OMP_PLACES=cores
# no empty per-rank output files (only rank 0 prints)
export PLE_MPI_STD_EMPTYFILE=off

${preemption}
mpiexec -n ${ranks} -stdout-proc ./output.%j/%/1000r/stdout -stderr-proc ./output.%j/%/1000r/stderr ${train}
