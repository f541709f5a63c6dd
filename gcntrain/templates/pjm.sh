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

# Environment (adapt): Python and mpi4py built on Fujitsu MPI for the A64FX, e.g. from
# Fugaku's Spack instance, then the environment gcntrain is installed in:
#   . /vol0004/apps/oss/spack/share/spack/setup-env.sh
#   spack load py-mpi4py
#   . "$$HOME/gcntrain/.venv/bin/activate"

export OMP_NUM_THREADS=${threads}
export NUMBA_NUM_THREADS=${threads}
# no empty per-rank output files (only rank 0 prints)
export PLE_MPI_STD_EMPTYFILE=off

${preemption}
mpiexec -n ${ranks} -stdout-proc ./output.%j/%/1000r/stdout -stderr-proc ./output.%j/%/1000r/stderr ${train}
