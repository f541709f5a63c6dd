"""Batch scripts for `gcntrain train` runs (`gcntrain jobscript`): Slurm and Fugaku PJM.

A `Request` (the scheduler, the placement, the limits) and a `TrainRun` (what the train
arguments ask for, parsed by the real `train` command) are checked before anything is
rendered: the rank count against the scheme and its options, threads against cores, the
time format, the names that end up in scheduler directives.  The environment set-up
(--module, --setup, --venv) goes in before the thread settings and the launch.  The script
is a `string.Template` (``${name}`` placeholders, ``$$`` for a literal ``$``) shipped as
package data (``gcntrain/templates/NAME.sh``) or taken from a user's ``--template-dir``.

Pure: no click, no printing (the notes for the user come back in `Rendered`), no files
written; the output is deterministic (no dates, no host names), so rendered scripts can be
compared with golden files.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import string
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from gcntrain.errors import InputError
from gcntrain.job.jobscript_env import bash_syntax_error, check_setup, setup_lines, setup_remark
from gcntrain.job.jobscript_preempt import (
    SIGNAL_NOTICE_SECONDS,
    after_lines,
    preemption_lines,
    requeue_remark,
)

#: schedulers with a shipped template
SHIPPED = ("slurm", "pjm")
DEFAULT_TIME = "01:00:00"
DEFAULT_JOB_NAME = "gcntrain"
#: ``srun --mpi`` when nothing says which plugin the MPI library needs (MPICH's, Intel MPI's)
FALLBACK_SRUN_MPI = "pmi2"
#: Fugaku's resource group "small" takes up to this many nodes; "large" above
FUGAKU_SMALL_NODES = 384

#: every placeholder a template may use, with its meaning (docs/jobscripts.md lists them)
PLACEHOLDERS = {
    "header": "comment lines naming the command that rendered the script",
    "scheduler": "the --scheduler name",
    "job_name": "--job-name",
    "nodes": "--nodes",
    "ranks_per_node": "--ranks-per-node",
    "ranks": "nodes x ranks per node",
    "threads": "threads per rank",
    "mpi": "the srun --mpi plugin (--mpi; default: the one the installed MPI library needs)",
    "cores_per_node": "--cores-per-node (empty when not given)",
    "time": "--time, HH:MM:SS",
    "account": "--account (empty when not given)",
    "partition": "--partition (empty when not given)",
    "rscgrp": "--rscgrp (PJM without it: small up to 384 nodes, else large)",
    "directives": "the scheduler's optional directive lines (account, partition, signal)",
    "setup": "the environment lines (--module, --setup, --venv) or a comment asking for them",
    "threads_note": "a comment on how the thread count was chosen",
    "memory_note": "a comment with the planner's memory estimate, or why it was skipped",
    "preemption": "checkpoint and resume comments (and shell lines with --requeue)",
    "train": "the quoted `gcntrain train ...` command",
    "after": "shell lines after the launch (with --requeue and --checkpoint: requeue the job "
    "after a checkpoint stop)",
    "train_args": "the quoted train arguments alone",
}

_TIME = re.compile(r"(\d+):([0-5]\d):([0-5]\d)")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,62}")
_SITE_VALUE = re.compile(r"[A-Za-z0-9_.,:+-]+")
_SCHEDULER = re.compile(r"[a-z][a-z0-9_-]*")
_MPI_PLUGIN = re.compile(r"[a-z][a-z0-9_]{0,31}")
#: --partition values that name a partitioner rather than a file
_PARTITIONERS = ("block", "random", "metis", "hypergraph", "libra")


@dataclass(frozen=True)
class Request:
    """The `gcntrain jobscript` options (None: not given)."""

    scheduler: str
    nodes: int
    ranks_per_node: int
    train_args: tuple[str, ...] = ()
    threads: int | None = None
    cores_per_node: int | None = None
    time: str | None = None
    account: str | None = None
    partition: str | None = None
    rscgrp: str | None = None
    job_name: str | None = None
    requeue: bool = False
    template_dir: str | None = None
    modules: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()
    venv: str | None = None
    mpi: str | None = None

    @property
    def ranks(self) -> int:
        return self.nodes * self.ranks_per_node


@dataclass(frozen=True)
class TrainRun:
    """What the job script needs from the train arguments.

    Attributes
    ----------
    graph : the GRAPH argument (None: the embedded default dataset).
    config : the `TrainConfig` the arguments give.
    scheme, options, partition, partition_seed : as `gcntrain.cli.options.scheme_args`.
    threads : train's own ``--threads`` (None: not given).
    checkpoint, checkpoint_every, resume : train's checkpoint options.
    config_file : train's --config FILE.toml (None: not given).
    """

    graph: str | None
    config: object
    scheme: str
    options: dict = field(default_factory=dict)
    partition: str | None = None
    partition_seed: int = 0
    threads: int | None = None
    checkpoint: str | None = None
    checkpoint_every: int = 10
    resume: str | None = None
    config_file: str | None = None


@dataclass(frozen=True)
class Rendered:
    """A rendered script, the figures it was rendered with, and `notes`: one-line remarks
    for the user (no environment set up, the thread count assumed)."""

    script: str
    threads: int
    memory_bytes_per_rank: int | None
    template: str
    notes: tuple[str, ...] = ()


# -- checks ------------------------------------------------------------------------------


def parse_time(text: str) -> int:
    """Seconds of a ``HH:MM:SS`` limit (hours may exceed 24); `InputError` otherwise."""
    m = _TIME.fullmatch(str(text))
    if m is None:
        raise InputError(f"--time must look like HH:MM:SS (e.g. 01:30:00), got {text!r}")
    h, mi, s = (int(g) for g in m.groups())
    seconds = 3600 * h + 60 * mi + s
    if seconds == 0:
        raise InputError("--time must be longer than 00:00:00")
    return seconds


def _check_value(flag: str, value: str | None, pattern: re.Pattern, what: str) -> None:
    if value is not None and pattern.fullmatch(value) is None:
        raise InputError(f"{flag} must be {what}, got {value!r}")


def template_dir(req: Request) -> Path | None:
    """The user's template directory, checked (None: only the shipped templates)."""
    if req.template_dir is None:
        return None
    d = Path(req.template_dir)
    if not d.is_dir():
        raise InputError(f"--template-dir {req.template_dir}: no such directory")
    return d


def check_request(req: Request) -> None:
    """Raise `InputError` (one line) for a request no scheduler would take."""
    if _SCHEDULER.fullmatch(req.scheduler) is None:
        raise InputError(f"unknown scheduler {req.scheduler!r} (shipped: {', '.join(SHIPPED)})")
    d = template_dir(req)
    if req.scheduler not in SHIPPED and (d is None or not (d / f"{req.scheduler}.sh").is_file()):
        raise InputError(
            f"unknown scheduler {req.scheduler!r} (shipped: {', '.join(SHIPPED)}; another "
            f"needs --template-dir DIR with {req.scheduler}.sh)"
        )
    for flag, value in (("--nodes", req.nodes), ("--ranks-per-node", req.ranks_per_node)):
        if value < 1:
            raise InputError(f"{flag} must be >= 1, got {value}")
    for flag, value in (("--threads", req.threads), ("--cores-per-node", req.cores_per_node)):
        if value is not None and value < 1:
            raise InputError(f"{flag} must be >= 1, got {value}")
    parse_time(req.time or DEFAULT_TIME)
    _check_value("--job-name", req.job_name, _NAME, "1-63 letters, digits, '_', '.', '+', '-'")
    for flag in ("account", "partition", "rscgrp"):
        what = "letters, digits and _ . , : + - only"
        _check_value(f"--{flag}", getattr(req, flag), _SITE_VALUE, what)
    if req.scheduler == "slurm" and req.rscgrp is not None:
        raise InputError("--rscgrp is a PJM resource group; Slurm takes --partition")
    _check_value("--mpi", req.mpi, _MPI_PLUGIN, "an srun --mpi plugin name (pmi2, pmix, none)")
    if req.scheduler == "pjm":
        if req.mpi is not None:
            raise InputError("--mpi is srun's option (Slurm); PJM's mpiexec takes none")
        if req.partition is not None:
            raise InputError("--partition is a Slurm option; PJM takes --rscgrp")
        if req.requeue:
            raise InputError("--requeue is a Slurm option; PJM has no equivalent here")
    for a in req.train_args:
        if any(c in a for c in "\n\r\0"):
            raise InputError("the train arguments must not contain line breaks")
    check_setup(req)


def resolve_threads(req: Request, train_threads: int | None) -> tuple[int, str]:
    """(threads per rank, a comment saying how they were chosen).

    --threads, else train's own --threads, else --cores-per-node // --ranks-per-node, else
    1; with --cores-per-node, threads x ranks per node must fit in the cores.
    """
    k, cores = req.ranks_per_node, req.cores_per_node
    if req.threads is not None and train_threads is not None and req.threads != train_threads:
        raise InputError(
            f"--threads {req.threads} disagrees with the train arguments' --threads "
            f"{train_threads}; give one"
        )
    if req.threads is not None or train_threads is not None:
        t = req.threads if req.threads is not None else train_threads
        note = f"# threads: {t} per rank (--threads)"
    elif cores is not None:
        t = cores // k
        if t < 1:
            raise InputError(f"--ranks-per-node {k} exceeds --cores-per-node {cores}")
        note = f"# threads: {t} per rank = {cores} cores per node // {k} ranks per node"
    else:
        t = 1
        note = (
            f"# threads: 1 per rank (default; with --cores-per-node C: C // {k} threads per rank)"
        )
    if cores is not None and t * k > cores:
        raise InputError(
            f"{t} threads x {k} ranks per node = {t * k} exceeds --cores-per-node {cores}"
        )
    return t, note


def threads_remark(req: Request, train_threads: int | None, threads: int) -> str | None:
    """The note for a render without --cores-per-node: which thread count was assumed and
    from what (None with --cores-per-node, which checks the count)."""
    if req.cores_per_node is not None:
        return None
    per_rank = "1 thread per rank" if threads == 1 else f"{threads} threads per rank"
    if req.threads is not None:
        source = "from --threads"
    elif train_threads is not None:
        source = "from the train arguments' --threads"
    else:
        source = "by default"
    return (
        f"jobscript: no --cores-per-node: {per_rank} {source}, not checked against a node's "
        f"cores (with --cores-per-node C: C // {req.ranks_per_node} threads per rank)"
    )


def check_scheme(run: TrainRun, ranks: int) -> None:
    """Raise `InputError` when `ranks` cannot run the scheme with its options, as `train`
    would at start-up (`gcntrain.job.runner.load_rank`); ``--scheme auto`` chooses its
    configuration at start-up, so only the model settings are checked."""
    from gcntrain.schemes import registry

    run.config.validate()
    if run.scheme == registry.AUTO_NAME:
        return
    sch = registry.get(run.scheme, ranks)
    options = dict(run.options)
    if sch.wants_grid_search(options):
        options = sch.with_grid(options, sch.grid_candidates(ranks)[0])
    registry.configured(sch, ranks, options, run.config)


# -- the memory estimate ------------------------------------------------------------------


def _gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:.3g} GiB"


def memory_estimate(run: TrainRun, ranks: int) -> tuple[int | None, str]:
    """(estimated bytes of the largest rank or None, why it was skipped or "").

    The planner of `gcntrain simulate` (`plan_training`, `simulation_summary`: its
    ``memory_bytes_max``) on the graph named in the train arguments, when that graph is on
    this machine; planned over one epoch (the estimate does not depend on the count).
    """
    from gcntrain.schemes import registry

    if run.scheme == registry.AUTO_NAME:
        return None, "--scheme auto chooses the scheme at start-up (see `simulate --sweep`)"
    if run.graph is not None and not os.path.exists(run.graph):
        return None, f"{run.graph} is not on this machine"
    part = run.partition
    if part is not None and part not in _PARTITIONERS and not os.path.exists(part):
        return None, f"partition file {part} is not on this machine"
    from gcntrain.job.spec import JobSpec, resolve_grid
    from gcntrain.simulate.run import plan_training, simulation_summary

    config = dataclasses.replace(run.config, epochs=1)
    spec = JobSpec(run.graph, config, run.scheme, run.options, part, run.partition_seed)
    spec, _ = resolve_grid(spec, ranks)
    sim = plan_training(spec.plan_target(ranks))
    return int(simulation_summary(sim, config, part, 0.0)["memory_bytes_max"]), ""


def memory_note(run: TrainRun, ranks: int, ranks_per_node: int) -> tuple[int | None, str]:
    """(bytes per rank or None, the ``# estimated memory`` comment line)."""
    nbytes, why = memory_estimate(run, ranks)
    if nbytes is None:
        return None, f"# estimated memory: skipped, {why}"
    per_node = _gib(nbytes * ranks_per_node)
    return nbytes, (
        f"# estimated memory: {_gib(nbytes)} per rank, {per_node} per node (gcntrain simulate)"
    )


# -- templates ----------------------------------------------------------------------------


def load_template(req: Request) -> tuple[str, str]:
    """(template text, where it came from): ``DIR/NAME.sh`` of --template-dir when it
    exists, else the shipped one."""
    d = template_dir(req)
    name = f"{req.scheduler}.sh"
    if d is not None and (d / name).is_file():
        path = d / name
        try:
            return path.read_text(encoding="utf-8"), str(path)
        except (OSError, UnicodeDecodeError) as e:
            raise InputError(f"cannot read template: {e}", str(path)) from None
    text = (resources.files("gcntrain") / "templates" / name).read_text(encoding="utf-8")
    return text, f"gcntrain/templates/{name}"


def used_placeholders(text: str) -> set[str]:
    """The placeholder names a template uses."""
    found = set()
    for m in string.Template.pattern.finditer(text):
        name = m.group("named") or m.group("braced")
        if name is not None:
            found.add(name)
    return found


def check_placeholders(text: str, where: str) -> None:
    """Raise `InputError` naming the first unknown placeholder or stray ``$`` of a
    template, with its line (`where` names the template)."""
    for lineno, line in enumerate(text.splitlines(), 1):
        for m in string.Template.pattern.finditer(line):
            name = m.group("named") or m.group("braced")
            if m.group("invalid") is not None:
                raise InputError(
                    f"{where}:{lineno}: a '$' that starts no ${{name}} placeholder "
                    "(write $$ for a literal $)"
                )
            if name is not None and name not in PLACEHOLDERS:
                raise InputError(
                    f"{where}:{lineno}: unknown placeholder ${{{name}}} "
                    f"(known: {', '.join(PLACEHOLDERS)})"
                )


def substitute(text: str, values: dict[str, str]) -> str:
    """`text` (checked by `check_placeholders`) with its placeholders replaced; a line
    holding nothing but one placeholder whose value is empty is left out."""
    pattern = string.Template.pattern
    kept = []
    for line in text.splitlines(keepends=True):
        m = pattern.fullmatch(line.strip())
        name = m and (m.group("named") or m.group("braced"))
        if name and values[name] == "":
            continue
        kept.append(line)
    return string.Template("".join(kept)).substitute(values)


# -- rendering ----------------------------------------------------------------------------


def command_line(req: Request) -> str:
    """The `gcntrain jobscript` command that renders `req` (its header comment)."""
    parts = ["gcntrain", "jobscript", "--scheduler", req.scheduler]
    parts += ["--nodes", str(req.nodes), "--ranks-per-node", str(req.ranks_per_node)]
    for flag in ("threads", "cores_per_node", "time", "account", "partition", "rscgrp", "mpi"):
        value = getattr(req, flag)
        if value is not None:
            parts += ["--" + flag.replace("_", "-"), str(value)]
    if req.job_name is not None:
        parts += ["--job-name", req.job_name]
    if req.requeue:
        parts.append("--requeue")
    if req.template_dir is not None:
        parts += ["--template-dir", req.template_dir]
    for m in req.modules:
        parts += ["--module", m]
    for c in req.setup:
        parts += ["--setup", c]
    if req.venv is not None:
        parts += ["--venv", req.venv]
    return shlex.join([*parts, "--", "train", *req.train_args])


def _slurm_directives(req: Request, run: TrainRun) -> list[str]:
    lines = []
    if req.account is not None:
        lines.append(f"#SBATCH --account={req.account}")
    if req.partition is not None:
        lines.append(f"#SBATCH --partition={req.partition}")
    if run.checkpoint is not None:
        lines.append(f"#SBATCH --signal=USR1@{SIGNAL_NOTICE_SECONDS}")
    if req.requeue:
        lines.append("#SBATCH --requeue")
        lines.append("#SBATCH --open-mode=append")  # a requeued run keeps the first one's log
    return lines


def _pjm_directives(req: Request) -> list[str]:
    if req.account is not None:
        return [f"#PJM -g {req.account}"]
    return ['# Fugaku charges a group: add "#PJM -g GROUP" here (--account GROUP)']


def mpi_plugin(
    req: Request, used: set[str], installed: tuple[str | None, str]
) -> tuple[str, str | None]:
    """(the ``srun --mpi`` plugin, the note for the user or None).

    `installed`: (the plugin the MPI library here needs or None, that library's name or why
    none is known), from `gcntrain.comm.launch.installed_srun_mpi`.  --mpi wins; no note
    when the template has no ``${mpi}``."""
    if req.mpi is not None:
        return req.mpi, None
    plugin, library = installed
    if "mpi" not in used:
        return plugin or FALLBACK_SRUN_MPI, None
    if plugin is not None:
        return plugin, (
            f"jobscript: srun --mpi={plugin}, the plugin {library} needs (the MPI library "
            "mpi4py loads here); if the cluster's MPI differs, render with --mpi TYPE "
            "(pmi2 for MPICH or Intel MPI, pmix for Open MPI)"
        )
    return FALLBACK_SRUN_MPI, (
        f"jobscript: srun --mpi={FALLBACK_SRUN_MPI} assumed ({library}); render with --mpi "
        "TYPE for the cluster's MPI (pmi2 for MPICH or Intel MPI, pmix for Open MPI)"
    )


def render(
    req: Request, run: TrainRun, installed_mpi: tuple[str | None, str] = (None, "unknown")
) -> Rendered:
    """Check `req` and `run`, then render the batch script.  `installed_mpi`: (the srun
    --mpi plugin the MPI library here needs or None, the library's name or why none is
    known; `gcntrain.comm.launch.installed_srun_mpi`), the default of --mpi."""
    check_request(req)
    threads, threads_note = resolve_threads(req, run.threads)
    check_scheme(run, req.ranks)
    text, where = load_template(req)
    check_placeholders(text, where)
    used = used_placeholders(text)
    if (req.modules or req.setup or req.venv is not None) and "setup" not in used:
        raise InputError(
            f"{where} has no ${{setup}} line: --module, --setup and --venv would be left out"
        )
    if req.mpi is not None and "mpi" not in used:
        raise InputError(f"{where} has no ${{mpi}}: --mpi {req.mpi} would be left out")
    nbytes, mem_note = memory_note(run, req.ranks, req.ranks_per_node)
    directives: list[str] = []
    if req.scheduler == "slurm":
        directives = _slurm_directives(req, run)
    elif req.scheduler == "pjm":
        directives = _pjm_directives(req)
    after = after_lines(req, run, used)
    preemption, resume_words = preemption_lines(req, run, bool(after))
    plugin, mpi_remark = mpi_plugin(req, used, installed_mpi)
    train_args = " ".join(shlex.quote(a) for a in req.train_args)
    rscgrp = req.rscgrp or ""
    if req.scheduler == "pjm" and req.rscgrp is None:
        rscgrp = "small" if req.nodes <= FUGAKU_SMALL_NODES else "large"
    values = {
        "header": (
            "# Rendered by `gcntrain jobscript` (render again rather than edit):\n"
            f"# {command_line(req)}"
        ),
        "scheduler": req.scheduler,
        "job_name": req.job_name or DEFAULT_JOB_NAME,
        "nodes": str(req.nodes),
        "ranks_per_node": str(req.ranks_per_node),
        "ranks": str(req.ranks),
        "threads": str(threads),
        "mpi": plugin,
        "cores_per_node": "" if req.cores_per_node is None else str(req.cores_per_node),
        "time": req.time or DEFAULT_TIME,
        "account": req.account or "",
        "partition": req.partition or "",
        "rscgrp": rscgrp,
        "directives": "\n".join(directives),
        "setup": "\n".join(setup_lines(req)),
        "threads_note": threads_note,
        "memory_note": mem_note,
        "preemption": "\n".join(preemption),
        "train": ("gcntrain train " + train_args).rstrip() + resume_words,
        "train_args": train_args,
        "after": "\n".join(after),
    }
    script = substitute(text, values)
    why = bash_syntax_error(script) if script.startswith("#!/bin/bash") else None
    if why is not None:  # a user template, or a value that slipped through the checks
        raise InputError(f"the script rendered from {where} is not valid bash: {why}")
    remarks = (
        mpi_remark,
        requeue_remark(req, run, used, where),
        setup_remark(req, used),
        threads_remark(req, run.threads, threads),
    )
    return Rendered(script, threads, nbytes, where, tuple(r for r in remarks if r))
