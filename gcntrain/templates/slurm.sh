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

# Environment (adapt): the site's MPI, and the environment gcntrain is installed in;
# mpi4py must use the MPI library that srun starts the ranks with, e.g.
#   module load openmpi
#   . "$$HOME/gcntrain/.venv/bin/activate"

export OMP_NUM_THREADS=${threads}
export NUMBA_NUM_THREADS=${threads}

${preemption}
srun --cpu-bind=cores --cpus-per-task=${threads} ${train}
