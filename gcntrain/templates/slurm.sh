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
srun --cpu-bind=cores --cpus-per-task=${threads} ${train}
