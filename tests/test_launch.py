"""A lone rank under a multi-task launcher refuses to run (`gcntrain.comm.launch`): the
launcher's task count against MPI's world, for every command by its launch kind in
`gcntrain.cli.main.COMMANDS`.  The real Slurm version of these checks (srun --mpi=none) is in
tests/test_slurm.py; here the launcher is its environment variables, which is all the check
reads, with the real MPI library (a singleton world) behind it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gcntrain.cli.main import COMMANDS, LAUNCH, run
from gcntrain.comm.env import TASK_COUNT_VARS, launched_tasks
from gcntrain.comm.launch import (
    Library,
    check_mpi_world,
    check_one_process,
    launched_world_size,
    srun_mpi_type,
)
from gcntrain.errors import InputError

MPICH = Library("MPICH", "5.0.2", "MPICH Version: 5.0.2")
OPEN_MPI = Library("Open MPI", "5.0.11", "Open MPI v5.0.11")

#: a command line of each command that runs as one process and writes an output (its
#: inputs need not exist: the check comes before anything is read)
ONE_PROCESS_ARGV = {
    "generate": ["generate", "rmat", "-o", "g.h5", "--scale", "5"],
    "convert": ["convert", "in.npz", "-o", "c.h5"],
    "shard": ["shard", "in.h5", "-o", "store", "--parts", "2"],
    "partition": ["partition", "in.h5", "--method", "random", "--parts", "2", "-o", "p.h5"],
    "simulate": ["simulate", "in.h5", "--ranks", "4", "--per-rank", "planned.csv"],
    "bench": ["bench", "--quick", "-o", "m.toml"],
    "plot": ["plot", "run", "-o", "run.png"],
    "jobscript": ["jobscript", "--scheduler", "slurm", "--nodes", "1", "--ranks-per-node", "1"]
    + ["-o", "job.sh", "--", "train"],
}


@pytest.fixture(autouse=True)
def no_launcher(monkeypatch):
    """The tests set the launcher variables they mean; none leaks in from a shell started
    by a launcher (a pmi2 ``srun --pty`` exports PMI_SIZE=1)."""
    for name in (*TASK_COUNT_VARS, "SLURM_PROCID", "PMI_RANK", "OMPI_COMM_WORLD_RANK"):
        monkeypatch.delenv(name, raising=False)


def test_every_command_has_a_launch_kind():
    assert {c.launch for c in COMMANDS.values()} <= set(LAUNCH)
    one = {name for name, c in COMMANDS.items() if c.launch == "one"}
    assert one == set(ONE_PROCESS_ARGV)
    assert [name for name, c in COMMANDS.items() if c.launch == "mpi"] == ["train"]


def test_the_innermost_launcher_counts():
    """MPICH's mpiexec inside a Slurm job starts one proxy per node with srun: PMI_SIZE
    (the ranks) wins over srun's count (the nodes); a batch script's own SLURM_NTASKS is
    not a launch (a plain command there is one process)."""
    assert launched_tasks({}) is None
    assert launched_tasks({"SLURM_NTASKS": "4"}) is None
    assert launched_tasks({"SLURM_STEP_NUM_TASKS": "4"}) == ("SLURM_STEP_NUM_TASKS", 4)
    both = {"SLURM_STEP_NUM_TASKS": "1", "PMI_SIZE": "4"}
    assert launched_tasks(both) == ("PMI_SIZE", 4)
    assert launched_tasks({"OMPI_COMM_WORLD_SIZE": "6"}) == ("OMPI_COMM_WORLD_SIZE", 6)
    assert launched_tasks({"PMI_SIZE": "x", "MV2_COMM_WORLD_SIZE": "3"}) == (
        "MV2_COMM_WORLD_SIZE",
        3,
    )
    assert list(TASK_COUNT_VARS)[-1] == "SLURM_STEP_NUM_TASKS"


@pytest.mark.parametrize("lib, plugin", [(MPICH, "pmi2"), (OPEN_MPI, "pmix")])
def test_singletons_are_refused_with_the_fix(lib, plugin):
    env = {"SLURM_STEP_NUM_TASKS": "4"}
    with pytest.raises(InputError) as e:
        check_mpi_world(1, lib, env)
    line = str(e.value)
    assert "\n" not in line
    assert "started 4 tasks (SLURM_STEP_NUM_TASKS=4)" in line
    assert "1-rank job of its own" in line and lib.name in line
    assert f"`srun --mpi={plugin}`" in line and srun_mpi_type(lib.vendor) == plugin


def test_a_lingering_outer_count_does_not_refuse_a_matching_world():
    """A pmi2 shell's PMI_SIZE=1 around Open MPI's mpirun -n 4: the world of 4 matches
    mpirun's count, so the run goes on; a refusal names every count it saw."""
    nested = {"PMI_SIZE": "1", "OMPI_COMM_WORLD_SIZE": "4"}
    check_mpi_world(4, OPEN_MPI, nested)
    with pytest.raises(InputError, match=r"\(PMI_SIZE=1, OMPI_COMM_WORLD_SIZE=4\)"):
        check_mpi_world(2, OPEN_MPI, nested)


def test_a_world_of_another_size_is_refused():
    with pytest.raises(InputError, match=r"started 4 tasks \(PMI_SIZE=4\).* world has 2 ranks"):
        check_mpi_world(2, MPICH, {"PMI_SIZE": "4"})


def test_a_matching_world_or_no_launcher_passes():
    check_mpi_world(4, MPICH, {"SLURM_STEP_NUM_TASKS": "4"})
    check_mpi_world(1, MPICH, {})
    check_mpi_world(1, MPICH, {"SLURM_STEP_NUM_TASKS": "1"})
    check_one_process("convert", {"PMI_SIZE": "1"})
    check_one_process("convert", {"SLURM_NTASKS": "8"})


@pytest.mark.parametrize("name", sorted(ONE_PROCESS_ARGV))
def test_one_process_commands_refuse_several_tasks(name, tmp_path, monkeypatch, capsys):
    """Each writing command launched as 3 tasks: exit 2, one line naming the count, and
    nothing written."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "3")
    monkeypatch.delenv("SLURM_PROCID", raising=False)
    assert run(ONE_PROCESS_ARGV[name]) == 2
    out, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"gcntrain: error: gcntrain {name} runs as one process")
    assert "3 tasks (SLURM_STEP_NUM_TASKS=3)" in lines[0]
    assert list(tmp_path.iterdir()) == []


def test_read_only_commands_run_under_several_tasks(monkeypatch, capsys):
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "3")
    monkeypatch.delenv("SLURM_PROCID", raising=False)
    assert run(["config", "show", "train"]) == 0
    capsys.readouterr()


def _gcntrain(args, env, cwd):
    code = "from gcntrain.cli.main import entry; entry()"
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "var, extra, fix",
    [
        ("SLURM_STEP_NUM_TASKS", {}, "`srun --mpi=pmi2`"),
        ("OMPI_COMM_WORLD_SIZE", {"PJM_JOBID": "4242"}, "Fujitsu MPI's mpiexec"),
    ],
    ids=["srun", "pjm"],
)
def test_train_as_a_singleton_of_four_tasks_is_refused(tmp_path, var, extra, fix):
    """What `srun --mpi=none -n 4` (or, on Fugaku, an mpiexec other than the one of the MPI
    library mpi4py loads) gives each task: the launcher's task count, a 1-rank MPI world.
    Refused before any reading, nothing written, the fix named for that launcher."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "SLURM_", "OMPI_"))}
    env.update({var: "4", **extra})
    res = _gcntrain(["train", "--scheme", "1d", "--epochs", "2", "-o", "run"], env, tmp_path)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.splitlines()
    assert len(lines) == 1, res.stderr
    assert f"started 4 tasks ({var}=4)" in lines[0]
    assert fix in lines[0]
    assert res.stdout == "" and list(tmp_path.iterdir()) == []


def test_the_jobs_size_is_the_worlds_not_the_first_count(monkeypatch):
    """The ranks a run trains on come from MPI's world once a launcher started it: the
    check accepts any count that matches the world, so the first count set may be an outer
    launcher's (this process is a 1-rank world; the count says 5)."""
    assert launched_world_size({}) == 1
    assert launched_world_size({"SLURM_STEP_NUM_TASKS": "5"}) == 1
    monkeypatch.setenv("PMI_SIZE", "1")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "4")
    assert launched_world_size() == 1


def test_info_names_the_srun_plugin_of_the_mpi_library(capsys):
    import json

    assert run(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    vendor = info["mpi_vendor"].rsplit(" ", 1)[0]
    assert info["srun_mpi"] == srun_mpi_type(vendor)
    assert info["srun_mpi"] == {"MPICH": "pmi2", "Open MPI": "pmix"}.get(vendor, info["srun_mpi"])


def test_nested_runs_start_without_the_parents_launcher(monkeypatch):
    """What `--scheme auto` and `bench` start from inside a job (`gcntrain.simulate.launch`)
    carries no task count of the parent's launcher, which would refuse it."""
    from gcntrain.simulate.launch import launcher_free_env

    for name in TASK_COUNT_VARS:
        monkeypatch.setenv(name, "4")
    assert launched_tasks(dict(os.environ)) == ("PMI_SIZE", 4)
    assert launched_tasks(launcher_free_env()) is None


def test_rendering_a_job_script_does_not_start_mpi(tmp_path):
    """`jobscript` looks up the MPI library's srun plugin without MPI_Init: on a login
    node some MPI libraries abort a process that starts MPI outside a job."""
    code = (
        "from gcntrain.cli.main import run; import sys\n"
        "rc = run(['jobscript', '--scheduler', 'slurm', '--nodes', '1', '--ranks-per-node',"
        " '2', '--', 'train'])\n"
        "from mpi4py import MPI\n"
        "print('initialized', MPI.Is_initialized(), rc, file=sys.stderr)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in TASK_COUNT_VARS}
    res = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "initialized False 0" in res.stderr, res.stderr
    assert "\nsrun --mpi=pmi2 --kill-on-bad-exit=1 " in res.stdout
