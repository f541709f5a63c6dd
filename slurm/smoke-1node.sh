#!/bin/bash
# Rendered by `gcntrain jobscript` (render again rather than edit):
# gcntrain jobscript --scheduler slurm --nodes 1 --ranks-per-node 4 --time 00:10:00 --mpi pmix --job-name gcn-smoke --module openmpi --venv '~/gcntrain/.venv' -- train --scheme 1d --epochs 20
#SBATCH --job-name=gcn-smoke
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=1
#SBATCH --time=00:10:00
# threads: 1 per rank (default; with --cores-per-node C: C // 4 threads per rank)
# estimated memory: 0.00232 GiB per rank, 0.00929 GiB per node (gcntrain simulate)

# Environment (--module, --setup, --venv):
module load openmpi
source "$HOME"/gcntrain/.venv/bin/activate
command -v gcntrain >/dev/null || { echo "gcntrain not found: check the environment lines" >&2; exit 127; }

# Threads per rank: NUMBA_NUM_THREADS sets Numba's; OMP_NUM_THREADS any other OpenMP code's.
# With Numba's OpenMP threading layer each thread is bound to its own core of the rank's.
export OMP_NUM_THREADS=1
export NUMBA_NUM_THREADS=1
export OMP_PROC_BIND=close
export OMP_PLACES=cores

# One MPI job of 4 ranks: --mpi=pmix is the process-management interface the MPI
# library needs (without it each task would be a 1-rank job, which gcntrain refuses);
# --kill-on-bad-exit=1 ends the job when a rank dies (an out-of-memory kill, a node) instead
# of leaving the other ranks waiting in MPI until the time limit.
srun --mpi=pmix --kill-on-bad-exit=1 --cpu-bind=cores --cpus-per-task=1 gcntrain train --scheme 1d --epochs 20
