#!/bin/bash
# Rendered by `gcntrain jobscript` (render again rather than edit):
# gcntrain jobscript --scheduler slurm --nodes 16 --ranks-per-node 4 --cores-per-node 48 --time 02:00:00 --account myproject --partition cpu --mpi pmix --job-name gcn-2d --module openmpi --venv '~/gcntrain/.venv' -- train data/ogbn-products.h5 --scheme 2d --grid 8x8 -o run-2d
#SBATCH --job-name=gcn-2d
#SBATCH --nodes=16
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=12
#SBATCH --time=02:00:00
#SBATCH --account=myproject
#SBATCH --partition=cpu
# threads: 12 per rank = 48 cores per node // 4 ranks per node
# estimated memory: skipped, data/ogbn-products.h5 is not on this machine

# Environment (--module, --setup, --venv):
module load openmpi
source "$HOME"/gcntrain/.venv/bin/activate
command -v gcntrain >/dev/null || { echo "gcntrain not found: check the environment lines" >&2; exit 127; }

# Threads per rank: NUMBA_NUM_THREADS sets Numba's; OMP_NUM_THREADS any other OpenMP code's.
# With Numba's OpenMP threading layer each thread is bound to its own core of the rank's.
export OMP_NUM_THREADS=12
export NUMBA_NUM_THREADS=12
export OMP_PROC_BIND=close
export OMP_PLACES=cores

# One MPI job of 64 ranks: --mpi=pmix is the process-management interface the MPI
# library needs (without it each task would be a 1-rank job, which gcntrain refuses);
# --kill-on-bad-exit=1 ends the job when a rank dies (an out-of-memory kill, a node) instead
# of leaving the other ranks waiting in MPI until the time limit.
srun --mpi=pmix --kill-on-bad-exit=1 --cpu-bind=cores --cpus-per-task=12 gcntrain train data/ogbn-products.h5 --scheme 2d --grid 8x8 -o run-2d
