"""The preemption part of a Slurm or PJM batch script (`gcntrain.job.jobscript`): the
checkpoint comments and, with ``--requeue``, the resume before the launch and the requeue
after a SIGUSR1 stop.  Pure; `req` and `run` are the jobscript's `Request` and `TrainRun`."""

from __future__ import annotations

import shlex

#: seconds before the time limit Slurm sends SIGUSR1 to every rank (--signal); Slurm checks
#: the limits about once a minute, so the signal comes up to 60 s earlier (147 s measured)
SIGNAL_NOTICE_SECONDS = 120
#: exit status of a run that a SIGUSR1 stopped after its checkpoint (128 + 10)
USR1_STATUS = 138


def preemption_lines(req, run, requeues: bool) -> tuple[list[str], str]:
    """(comment and shell lines before the launch, words appended to the train command);
    `requeues`: the script requeues its job after a SIGUSR1 stop (`after_lines`), which
    reads the launch's status: ``status=0`` before it and ``|| status=$?`` on it, so that a
    ``set -e`` of the set-up cannot end the script first."""
    lines, words = _before_launch(req, run, requeues)
    if requeues:
        return [*lines, "status=0"], words + " || status=$?"
    return lines, words


def _before_launch(req, run, requeues: bool) -> tuple[list[str], str]:
    """`preemption_lines` without the launch's status."""
    ck = run.checkpoint
    if ck is None:
        if req.requeue:
            return ["# --requeue without --checkpoint: a requeued job trains from the start"], ""
        return [], ""
    q = shlex.quote(ck)
    every = f"# Checkpoints: {q} every {run.checkpoint_every} epochs and at the last."
    resume = f"continue with the same train arguments plus `--resume {q}`."
    if req.scheduler == "slurm":
        lines = [
            every,
            f"# {SIGNAL_NOTICE_SECONDS} to {SIGNAL_NOTICE_SECONDS + 60} s before the time limit "
            "Slurm sends SIGUSR1 to every rank (--signal):",
            f"# gcntrain finishes the epoch, writes a checkpoint and exits with status "
            f"{USR1_STATUS} (143 after",
            "# a SIGTERM: a preemption, scancel); continue with the same train arguments plus",
            f"# `--resume {q}`.",
        ]
        if req.requeue and run.resume is None:
            lines += [
                "# --requeue: a requeued job (preempted, a node failure"
                + (", or requeued below after" if requeues else ")"),
                ("# a SIGUSR1 stop) runs" if requeues else "# runs")
                + f" this script again and resumes from the newest checkpoint in {q}.",
                "resume=()",
                f"if [ -f {shlex.quote(ck + '/LATEST')} ]; then resume=(--resume {q}); fi",
            ]
            return lines, ' "${resume[@]}"'
        return lines, ""
    return [
        every,
        "# gcntrain checkpoints and exits on SIGTERM or SIGUSR1; when the job ends early,",
        "# " + resume,
    ], ""


def requeues_after_stop(req, run) -> bool:
    """Whether a Slurm script with --requeue and --checkpoint is asked to requeue its job
    after a SIGUSR1 stop (where its template has ``${after}``)."""
    return req.scheduler == "slurm" and req.requeue and run.checkpoint is not None


def after_lines(req, run, used: set[str]) -> list[str]:
    """Shell lines after the launch: with --requeue and --checkpoint on Slurm, requeue the
    job when the run stopped after a checkpoint on SIGUSR1 (the time limit is near), so
    that it continues by itself; the job's status otherwise (the launch's, kept by
    `preemption_lines`)."""
    if not requeues_after_stop(req, run) or "after" not in used:
        return []
    return [
        f"# {USR1_STATUS}: stopped by SIGUSR1 after a checkpoint: requeue the job (same job "
        "id, the log appended),",
        "# which resumes from the checkpoint (Slurm itself requeues a job it preempts where the",
        "# partition's PreemptMode is REQUEUE).",
        f'if [ "$status" -eq {USR1_STATUS} ]; then',
        '  echo "gcntrain: requeueing job $SLURM_JOB_ID to resume from its checkpoint" >&2',
        '  scontrol requeue "$SLURM_JOB_ID" && exit 0',
        '  echo "gcntrain: scontrol requeue failed: submit this script again to resume" >&2',
        "fi",
        'exit "$status"',
    ]


def requeue_remark(req, run, used: set[str], where: str) -> str | None:
    """The note for a user template without ``${after}`` rendered with --requeue and
    --checkpoint: its job is not requeued after a SIGUSR1 stop."""
    if not requeues_after_stop(req, run) or "after" in used:
        return None
    return (
        f"jobscript: {where} has no ${{after}}: the job is not requeued after a SIGUSR1 "
        "stop (resubmit it to resume)"
    )
