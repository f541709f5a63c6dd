#!/bin/bash
${header}
#SBATCH --job-name=${job_name}
#SBATCH --nodes=${nodes}
#SBATCH --ntasks-per-node=${ranks_per_node}
#SBATCH --cpus-per-task=${threads}
#SBATCH --time=${time}
${directives}
${threads_note}
${memory_note}

${setup}
command -v gcntrain >/dev/null || { echo "gcntrain not found: check the environment lines" >&2; exit 127; }

# Threads per rank: NUMBA_NUM_THREADS sets Numba's; OMP_NUM_THREADS any other OpenMP code's.
# With Numba's OpenMP threading layer each thread is bound to its own core of the rank's.
export OMP_NUM_THREADS=${threads}
export NUMBA_NUM_THREADS=${threads}
export OMP_PROC_BIND=close
export OMP_PLACES=cores

${preemption}
# One MPI job of ${ranks} ranks: --mpi=${mpi} is the process-management interface the MPI
# library needs (without it each task would be a 1-rank job, which gcntrain refuses);
# --kill-on-bad-exit=1 ends the job when a rank dies (an out-of-memory kill, a node) instead
# of leaving the other ranks waiting in MPI until the time limit.
srun --mpi=${mpi} --kill-on-bad-exit=1 --cpu-bind=cores --cpus-per-task=${threads} ${train}
${after}
