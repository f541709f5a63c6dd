#!/bin/bash
# Rendered by `gcntrain jobscript` (render again rather than edit):
# gcntrain jobscript --scheduler slurm --nodes 1 --ranks-per-node 4 --time 00:10:00 --job-name gcn-smoke -- train --scheme 1d --epochs 20
#SBATCH --job-name=gcn-smoke
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=1
#SBATCH --time=00:10:00
# threads: 1 per rank (default; with --cores-per-node C: C // ranks per node)
# estimated memory: 0.00232 GiB per rank, 0.00929 GiB per node (gcntrain simulate)

# Environment (adapt): the site's MPI, and the environment gcntrain is installed in;
# mpi4py must use the MPI library that srun starts the ranks with, e.g.
#   module load openmpi
#   . "$HOME/gcntrain/.venv/bin/activate"

export OMP_NUM_THREADS=1
export NUMBA_NUM_THREADS=1

srun --cpu-bind=cores --cpus-per-task=1 gcntrain train --scheme 1d --epochs 20
