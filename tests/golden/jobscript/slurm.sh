#!/bin/bash
# Rendered by `gcntrain jobscript` (render again rather than edit):
# gcntrain jobscript --scheduler slurm --nodes 2 --ranks-per-node 2 --cores-per-node 8 --account proj --partition cpu --job-name golden -- train --scheme 2d --grid 2x2 --epochs 3 --checkpoint 'ck dir'
#SBATCH --job-name=golden
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=2
#SBATCH --cpus-per-task=4
#SBATCH --time=01:00:00
#SBATCH --account=proj
#SBATCH --partition=cpu
#SBATCH --signal=USR1@120
# threads: 4 per rank = 8 cores per node // 2 ranks per node
# estimated memory: 0.0029 GiB per rank, 0.00579 GiB per node (gcntrain simulate)

# Environment (adapt): the site's MPI, and the environment gcntrain is installed in;
# mpi4py must use the MPI library that srun starts the ranks with, e.g.
#   module load openmpi
#   . "$HOME/gcntrain/.venv/bin/activate"

export OMP_NUM_THREADS=4
export NUMBA_NUM_THREADS=4

# Checkpoints: 'ck dir' every 10 epochs and at the last.
# 120 s before the time limit Slurm sends SIGUSR1 to every rank (--signal):
# gcntrain finishes the epoch, writes a checkpoint and exits with status 138;
# continue with the same train arguments plus `--resume 'ck dir'`.
srun --cpu-bind=cores --cpus-per-task=4 gcntrain train --scheme 2d --grid 2x2 --epochs 3 --checkpoint 'ck dir'
