#!/bin/bash
# Rendered by `gcntrain jobscript` (render again rather than edit):
# gcntrain jobscript --scheduler slurm --nodes 4 --ranks-per-node 4 --cores-per-node 32 --time 04:00:00 --partition preempt --mpi pmix --job-name gcn-ck --requeue --module openmpi --venv '~/gcntrain/.venv' -- train --scheme 1d --checkpoint ck --checkpoint-every 10
#SBATCH --job-name=gcn-ck
#SBATCH --nodes=4
#SBATCH --ntasks-per-node=4
#SBATCH --cpus-per-task=8
#SBATCH --time=04:00:00
#SBATCH --partition=preempt
#SBATCH --signal=USR1@120
#SBATCH --requeue
#SBATCH --open-mode=append
# threads: 8 per rank = 32 cores per node // 4 ranks per node
# estimated memory: 0.000603 GiB per rank, 0.00241 GiB per node (gcntrain simulate)

# Environment (--module, --setup, --venv):
module load openmpi
source "$HOME"/gcntrain/.venv/bin/activate
command -v gcntrain >/dev/null || { echo "gcntrain not found: check the environment lines" >&2; exit 127; }

# Threads per rank: NUMBA_NUM_THREADS sets Numba's; OMP_NUM_THREADS any other OpenMP code's.
# With Numba's OpenMP threading layer each thread is bound to its own core of the rank's.
export OMP_NUM_THREADS=8
export NUMBA_NUM_THREADS=8
export OMP_PROC_BIND=close
export OMP_PLACES=cores

# Checkpoints: ck every 10 epochs and at the last.
# 120 to 180 s before the time limit Slurm sends SIGUSR1 to every rank (--signal):
# gcntrain finishes the epoch, writes a checkpoint and exits with status 138 (143 after
# a SIGTERM: a preemption, scancel); continue with the same train arguments plus
# `--resume ck`.
# --requeue: a requeued job (preempted, a node failure, or requeued below after
# a SIGUSR1 stop) runs this script again and resumes from the newest checkpoint in ck.
resume=()
if [ -f ck/LATEST ]; then resume=(--resume ck); fi
status=0
# One MPI job of 16 ranks: --mpi=pmix is the process-management interface the MPI
# library needs (without it each task would be a 1-rank job, which gcntrain refuses);
# --kill-on-bad-exit=1 ends the job when a rank dies (an out-of-memory kill, a node) instead
# of leaving the other ranks waiting in MPI until the time limit.
srun --mpi=pmix --kill-on-bad-exit=1 --cpu-bind=cores --cpus-per-task=8 gcntrain train --scheme 1d --checkpoint ck --checkpoint-every 10 "${resume[@]}" || status=$?
# 138: stopped by SIGUSR1 after a checkpoint: requeue the job (same job id, the log appended),
# which resumes from the checkpoint (Slurm itself requeues a job it preempts where the
# partition's PreemptMode is REQUEUE).
if [ "$status" -eq 138 ]; then
  echo "gcntrain: requeueing job $SLURM_JOB_ID to resume from its checkpoint" >&2
  scontrol requeue "$SLURM_JOB_ID" && exit 0
  echo "gcntrain: scontrol requeue failed: submit this script again to resume" >&2
fi
exit "$status"
