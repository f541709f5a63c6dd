#!/bin/bash
# Rendered by `gcntrain jobscript` (render again rather than edit):
# gcntrain jobscript --scheduler slurm --nodes 2 --ranks-per-node 2 --cores-per-node 8 --account proj --partition cpu --mpi pmi2 --job-name golden -- train --scheme 2d --grid 2x2 --epochs 3 --checkpoint 'ck dir'
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

# Environment: none set up here; the job runs in the environment it is submitted
# from. Render with --module NAME (the site's MPI: mpi4py must use the library srun
# starts the ranks with), --setup CMD, --venv DIR, e.g.
#   --module openmpi --venv '~/gcntrain/.venv'
command -v gcntrain >/dev/null || { echo "gcntrain not found: check the environment lines" >&2; exit 127; }

# Threads per rank: NUMBA_NUM_THREADS sets Numba's; OMP_NUM_THREADS any other OpenMP code's.
# With Numba's OpenMP threading layer each thread is bound to its own core of the rank's.
export OMP_NUM_THREADS=4
export NUMBA_NUM_THREADS=4
export OMP_PROC_BIND=close
export OMP_PLACES=cores

# Checkpoints: 'ck dir' every 10 epochs and at the last.
# 120 to 180 s before the time limit Slurm sends SIGUSR1 to every rank (--signal):
# gcntrain finishes the epoch, writes a checkpoint and exits with status 138 (143 after
# a SIGTERM: a preemption, scancel); continue with the same train arguments plus
# `--resume 'ck dir'`.
# One MPI job of 4 ranks: --mpi=pmi2 is the process-management interface the MPI
# library needs (without it each task would be a 1-rank job, which gcntrain refuses);
# --kill-on-bad-exit=1 ends the job when a rank dies (an out-of-memory kill, a node) instead
# of leaving the other ranks waiting in MPI until the time limit.
srun --mpi=pmi2 --kill-on-bad-exit=1 --cpu-bind=cores --cpus-per-task=4 gcntrain train --scheme 2d --grid 2x2 --epochs 3 --checkpoint 'ck dir'
