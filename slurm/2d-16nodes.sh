#!/bin/bash
# Rendered by `gcntrain jobscript` (render again rather than edit):
# gcntrain jobscript --scheduler slurm --nodes 16 --ranks-per-node 4 --cores-per-node 48 --time 02:00:00 --account myproject --partition cpu --job-name gcn-2d -- train data/ogbn-products.h5 --scheme 2d --grid 8x8 -o run-2d
#SBATCH --job-name=gcn-2d
#SBATCH --nodes=16
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=12
#SBATCH --time=02:00:00
#SBATCH --account=myproject
#SBATCH --partition=cpu
# threads: 12 per rank = 48 cores per node // 4 ranks per node
# estimated memory: skipped, data/ogbn-products.h5 is not on this machine

# Environment (adapt): the site's MPI, and the environment gcntrain is installed in;
# mpi4py must use the MPI library that srun starts the ranks with, e.g.
#   module load openmpi
#   . "$HOME/gcntrain/.venv/bin/activate"

export OMP_NUM_THREADS=12
export NUMBA_NUM_THREADS=12

srun --cpu-bind=cores --cpus-per-task=12 gcntrain train data/ogbn-products.h5 --scheme 2d --grid 8x8 -o run-2d
