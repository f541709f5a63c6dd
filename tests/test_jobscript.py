"""`gcntrain jobscript`: rendered Slurm and PJM scripts against golden files, user
templates, the checks made before rendering (exit 2, one line), the examples in slurm/,
and the scripts themselves run by bash with stand-ins for srun and mpiexec."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gcntrain.cli.main import run

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).parent / "golden" / "jobscript"
EXAMPLES = sorted((ROOT / "slurm").glob("*.sh"))

#: the golden files and the commands that render them
GOLDEN_COMMANDS = {
    "slurm.sh": [
        *("--scheduler slurm --nodes 2 --ranks-per-node 2 --cores-per-node 8").split(),
        *("--account proj --partition cpu --job-name golden --mpi pmi2").split(),
        *("-- train --scheme 2d --grid 2x2 --epochs 3 --checkpoint").split(),
        "ck dir",
    ],
    "pjm.sh": [
        *("--scheduler pjm --nodes 2 --ranks-per-node 4 --threads 12 --time 00:30:00").split(),
        *("--module gcc/12 --setup").split(),
        '. "/opt/my spack/setup-env.sh"',
        *("--setup", "spack load py-mpi4py", "--venv", "~/envs/gcn 1"),
        *("-- train missing/graph.h5 --scheme 1d --checkpoint ck").split(),
    ],
}


@pytest.fixture(autouse=True)
def elsewhere(tmp_path, monkeypatch):
    """Render in an empty directory: graph paths in the train arguments are not here."""
    monkeypatch.chdir(tmp_path)


def render(capsys, args: list[str]) -> str:
    """The script `args` print; stderr may hold notes only."""
    return render_noted(capsys, args)[0]


def render_noted(capsys, args: list[str]) -> tuple[str, list[str]]:
    """(the script `args` print, its stderr notes: lines starting ``jobscript: ``)."""
    code = run(["jobscript", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    notes = err.splitlines()
    assert all(n.startswith("jobscript: ") for n in notes), err
    return out, notes


def refused(capsys, args: list[str], *needles: str) -> str:
    """Run `args`; it must exit 2 with exactly one stderr line holding every needle."""
    code = run(["jobscript", *args])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("gcntrain: error: ")
    for needle in needles:
        assert needle in lines[0]
    return lines[0]


def bash_syntax_ok(path: Path) -> None:
    res = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def stub(directory: Path, name: str) -> None:
    """An executable `name` in `directory` that prints its arguments, one per line."""
    p = directory / name
    p.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
    p.chmod(0o755)


def stubs_dir(tmp_path: Path) -> Path:
    """A directory of stub launchers (srun, mpiexec) and a stub gcntrain, for the check
    that the script's environment provides gcntrain."""
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name in ("srun", "mpiexec", "gcntrain"):
        stub(stubs, name)
    return stubs


def run_script(script: Path, stubs: Path, cwd: Path) -> list[str]:
    """The arguments the script's launcher receives (bash, with a stub launcher)."""
    env = {**os.environ, "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}"}
    res = subprocess.run(
        ["bash", str(script)], cwd=cwd, env=env, capture_output=True, text=True, check=True
    )
    return res.stdout.splitlines()


@pytest.mark.parametrize("name", sorted(GOLDEN_COMMANDS))
def test_rendering_equals_golden(capsys, tmp_path, name):
    out = render(capsys, GOLDEN_COMMANDS[name])
    assert out == (GOLDEN / name).read_text()
    fresh = tmp_path / name
    fresh.write_text(out)
    bash_syntax_ok(fresh)


def test_memory_estimate_is_the_simulators(capsys):
    """The golden Slurm script's estimate is `simulate`'s memory_bytes_max for that run
    (planned over its 3 epochs there, one epoch in jobscript)."""
    code = run("simulate --ranks 4 --scheme 2d --grid 2x2 --epochs 3 --json".split())
    out, _ = capsys.readouterr()
    assert code == 0
    mem = json.loads(out)["memory_bytes_max"]
    line = (
        f"# estimated memory: {mem / 2**30:.3g} GiB per rank, "
        f"{2 * mem / 2**30:.3g} GiB per node (gcntrain simulate)\n"
    )
    assert line in (GOLDEN / "slurm.sh").read_text()


def test_skipped_estimates_say_why(capsys):
    out = render(capsys, "--scheduler slurm --nodes 1 --ranks-per-node 4 -- train".split())
    assert "# estimated memory: skipped, --scheme auto chooses the scheme" in out
    args = "--scheduler slurm --nodes 1 --ranks-per-node 2 -- train g.h5 --scheme 1d"
    assert "# estimated memory: skipped, g.h5 is not on this machine" in render(
        capsys, args.split()
    )


def test_golden_scripts_pass_their_arguments(tmp_path):
    """Run by bash with stub launchers, each golden script hands the launcher exactly the
    placement and the train arguments it was rendered with ('ck dir' stays one word)."""
    stubs = stubs_dir(tmp_path)
    got = run_script(GOLDEN / "slurm.sh", stubs, tmp_path)
    train = GOLDEN_COMMANDS["slurm.sh"][GOLDEN_COMMANDS["slurm.sh"].index("--") + 1 :]
    srun = ["--mpi=pmi2", "--kill-on-bad-exit=1", "--cpu-bind=cores", "--cpus-per-task=4"]
    assert got == [*srun, "gcntrain", *train]
    got = run_script(GOLDEN / "pjm.sh", stubs, tmp_path)
    train = GOLDEN_COMMANDS["pjm.sh"][GOLDEN_COMMANDS["pjm.sh"].index("--") + 1 :]
    assert got[:2] == ["-n", "8"]
    assert got[-len(train) - 1 :] == ["gcntrain", *train]


def test_requeued_job_resumes_from_its_checkpoint(capsys, tmp_path):
    args = "--scheduler slurm --nodes 1 --ranks-per-node 2 --requeue -- train --scheme 1d"
    script = tmp_path / "job.sh"
    script.write_text(render(capsys, [*args.split(), "--checkpoint", "my ck"]))
    text = script.read_text()
    assert "#SBATCH --requeue\n" in text and "#SBATCH --signal=USR1@120\n" in text
    stubs = stubs_dir(tmp_path)
    train = ["train", "--scheme", "1d", "--checkpoint", "my ck"]
    assert run_script(script, stubs, tmp_path)[4:] == ["gcntrain", *train]
    (tmp_path / "my ck").mkdir()
    (tmp_path / "my ck" / "LATEST").write_text("epoch-000010\n")
    got = run_script(script, stubs, tmp_path)
    assert got[4:] == ["gcntrain", *train, "--resume", "my ck"]


@pytest.mark.parametrize("setup", [None, "set -euo pipefail"], ids=["plain", "set-e"])
@pytest.mark.parametrize("requeued", [True, False], ids=["requeued", "scontrol-fails"])
@pytest.mark.parametrize("status", [0, 2, 138, 143])
def test_requeue_after_a_usr1_stop_only(capsys, tmp_path, status, requeued, setup):
    """With --requeue and --checkpoint, the script requeues its own job when the run
    stopped after a checkpoint on SIGUSR1 (status 138) and exits 0; any other status is the
    job's (a finished run, bad input, a SIGTERM stop), and so is 138 when scontrol cannot
    requeue; a `set -e` in the set-up changes none of it."""
    args = "--scheduler slurm --nodes 1 --ranks-per-node 2 --requeue --mpi pmi2".split()
    if setup is not None:
        args += ["--setup", setup]
    script = tmp_path / "job.sh"
    script.write_text(render(capsys, [*args, "--", "train", "--checkpoint", "ck"]))
    assert "#SBATCH --open-mode=append\n" in script.read_text()
    stubs = stubs_dir(tmp_path)
    (stubs / "srun").write_text(f"#!/bin/sh\nexit {status}\n")
    log = tmp_path / "scontrol.log"
    code = 0 if requeued else 1
    (stubs / "scontrol").write_text(
        f'#!/bin/sh\necho "$@" >> {shlex.quote(str(log))}\nexit {code}\n'
    )
    (stubs / "scontrol").chmod(0o755)
    env = {**os.environ, "PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}"}
    env["SLURM_JOB_ID"] = "4242"
    res = subprocess.run(
        ["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    if status == 138:
        assert log.read_text() == "requeue 4242\n"
        assert "gcntrain: requeueing job 4242 to resume from its checkpoint" in res.stderr
        assert res.returncode == (0 if requeued else 138), res.stderr
    else:
        assert res.returncode == status
        assert not log.exists()


def test_user_templates_without_the_new_placeholders(capsys, tmp_path):
    """A template without ${mpi} refuses --mpi (it would be left out); one without
    ${after} renders --requeue with --checkpoint but says the job is not requeued."""
    d = tmp_path / "tpl"
    d.mkdir()
    (d / "slurm.sh").write_text("#!/bin/bash\n${header}\n${preemption}\nsrun ${train}\n")
    base = ["--scheduler", "slurm", "--nodes", "1", "--ranks-per-node", "2"]
    base += ["--template-dir", str(d)]
    refused(capsys, [*base, "--mpi", "pmi2", "--", "train"], "has no ${mpi}: --mpi pmi2")
    out, notes = render_noted(capsys, [*base, "--requeue", "--", "train", "--checkpoint", "c"])
    assert "requeued below" not in out and "status=" not in out
    assert any("has no ${after}: the job is not requeued after a SIGUSR1 stop" in n for n in notes)


def test_without_checkpoint_no_signal(capsys):
    out = render(capsys, "--scheduler slurm --nodes 1 --ranks-per-node 2 -- train".split())
    assert "--signal" not in out and "resume" not in out


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_examples_equal_their_render(capsys, example):
    """Each slurm/ example equals a fresh render of the command in its header comment."""
    text = example.read_text()
    header = [ln for ln in text.splitlines() if ln.startswith("# gcntrain jobscript ")]
    assert len(header) == 1
    argv = shlex.split(header[0][2:])
    assert argv[:2] == ["gcntrain", "jobscript"]
    assert render(capsys, argv[2:]) == text
    bash_syntax_ok(example)
    assert os.access(example, os.X_OK)


def test_examples_cover_the_brief():
    names = {p.name for p in EXAMPLES}
    assert {"smoke-1node.sh", "2d-16nodes.sh", "fugaku-pjm.sh", "preemptible.sh"} <= names
    assert "--grid 8x8" in (ROOT / "slurm" / "2d-16nodes.sh").read_text()
    assert "#PJM" in (ROOT / "slurm" / "fugaku-pjm.sh").read_text()


def test_out_file_is_executable_and_complete(capsys, tmp_path):
    args = "--scheduler pjm --nodes 1 --ranks-per-node 4 -- train --scheme 1d".split()
    printed = render(capsys, args)
    target = tmp_path / "job.sh"
    code = run(["jobscript", "-o", str(target), "--json", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    s = json.loads(out)
    assert target.read_text() == printed == s["script"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    assert sorted(os.listdir(tmp_path)) == ["job.sh"]
    assert (s["scheduler"], s["nodes"], s["ranks"], s["threads"], s["out"]) == (
        "pjm",
        1,
        4,
        1,
        str(target),
    )
    assert s["memory_bytes_per_rank"] > 0


def test_user_template_overrides(capsys, tmp_path):
    d = tmp_path / "templates"
    d.mkdir()
    (d / "slurm.sh").write_text(
        "#!/bin/sh\n#X nodes=${nodes} ranks=${ranks} t=${threads} cost $$5\n${preemption}\n"
        "launch ${train}\n"
    )
    args = f"--scheduler slurm --nodes 3 --ranks-per-node 2 --template-dir {d}"
    out = render(capsys, [*args.split(), "--", "train", "--scheme", "1d", "--lr", "0.1"])
    assert (
        out
        == "#!/bin/sh\n#X nodes=3 ranks=6 t=1 cost $5\nlaunch gcntrain train --scheme 1d --lr 0.1\n"
    )


def test_user_scheduler_from_template_dir(capsys, tmp_path):
    d = tmp_path / "abci"
    d.mkdir()
    (d / "pbs.sh").write_text(
        "#!/bin/bash\n#PBS -l select=${nodes}:mpiprocs=${ranks_per_node}:ompthreads=${threads}\n"
        "#PBS -l walltime=${time}\n#PBS -P ${account}\n"
        "mpiexec -n ${ranks} -ppn ${ranks_per_node} ${train}\n"
    )
    args = (
        f"--scheduler pbs --nodes 2 --ranks-per-node 4 --threads 2 --account grp --template-dir {d}"
    )
    out = render(capsys, [*args.split(), "--", "train", "--scheme", "1d"])
    assert out == (
        "#!/bin/bash\n#PBS -l select=2:mpiprocs=4:ompthreads=2\n#PBS -l walltime=01:00:00\n"
        "#PBS -P grp\nmpiexec -n 8 -ppn 4 gcntrain train --scheme 1d\n"
    )


def test_unknown_placeholder_is_one_line(capsys, tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    (d / "slurm.sh").write_text("#!/bin/bash\n#SBATCH --nodes=${nodes}\necho ${walltime}\n")
    args = f"--scheduler slurm --nodes 1 --ranks-per-node 1 --template-dir {d} -- train"
    refused(capsys, args.split(), "unknown placeholder ${walltime}", "slurm.sh:3")
    (d / "slurm.sh").write_text("#!/bin/bash\necho $(date) ${nodes}\n")
    refused(capsys, args.split(), "slurm.sh:2", "$$")


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (
            "--nodes 1 --ranks-per-node 3 -- train --scheme 2d --grid 2x2",
            ("grid 2x2 needs 4 ranks", "has 3"),
        ),
        (  # a graph that is not here: no planning, the scheme's own check refuses
            "--nodes 1 --ranks-per-node 3 -- train far/away.h5 --scheme 2d --grid 2x2",
            ("grid 2x2 needs 4 ranks", "has 3"),
        ),
        (
            "--nodes 2 --ranks-per-node 2 -- train --scheme 1.5d --replication 3",
            ("--replication 3",),
        ),
        ("--nodes 2 --ranks-per-node 2 -- train --scheme serial", ("--scheme serial",)),
        (
            "--nodes 1 --ranks-per-node 4 --threads 4 --cores-per-node 12 -- train",
            ("16 exceeds --cores-per-node 12",),
        ),
        ("--nodes 1 --ranks-per-node 4 --cores-per-node 2 -- train", ("--cores-per-node 2",)),
        ("--nodes 1 --ranks-per-node 1 --time 1:00 -- train", ("--time", "'1:00'")),
        ("--nodes 1 --ranks-per-node 1 --time 01:60:00 -- train", ("--time",)),
        ("--nodes 1 --ranks-per-node 1 --time 00:00:00 -- train", ("--time",)),
        ("--nodes 0 --ranks-per-node 1 -- train", ("--nodes must be >= 1",)),
        ("--nodes 1 --ranks-per-node 1 --rscgrp small -- train", ("--rscgrp",)),
        ("--nodes 1 --ranks-per-node 1 -- train --no-such-option", ("--no-such-option",)),
        ("--nodes 1 --ranks-per-node 1", ("-- train",)),
    ],
)
def test_invalid_requests_are_one_line(capsys, args, needles):
    refused(capsys, ["--scheduler", "slurm", *args.split()], *needles)


def test_unknown_scheduler_and_pjm_only_options(capsys):
    refused(capsys, "--scheduler lsf --nodes 1 --ranks-per-node 1 -- train".split(), "'lsf'")
    args = "--scheduler pjm --nodes 1 --ranks-per-node 1 --requeue -- train"
    refused(capsys, args.split(), "--requeue")


def test_threads_default_and_grid_auto(capsys):
    args = "--scheduler pjm --nodes 1 --ranks-per-node 4 --cores-per-node 48"
    out = render(capsys, [*args.split(), "--", "train", "--scheme", "2d", "--grid", "auto"])
    assert (
        "export OMP_NUM_THREADS=12\nexport NUMBA_NUM_THREADS=12\n"
        "export OMP_PROC_BIND=close\nexport OMP_PLACES=cores\n"
    ) in out
    assert '#PJM --mpi "max-proc-per-node=4"\n' in out
    assert "mpiexec -n 4 " in out
    assert "# estimated memory: skipped" not in out


# -- the environment set-up, the notes, and the scripts run by a stand-in scheduler ------


def test_setup_lines_in_order_and_quoted(capsys):
    """Module loads, then --setup lines as given, then the venv's activate, all before the
    thread settings and the launch; a path with spaces stays one word, ~/ the job's $HOME."""
    args = [
        *"--scheduler slurm --nodes 1 --ranks-per-node 2 --cores-per-node 4".split(),
        *("--venv", "/opt/my envs/gcn", "--setup", "export A='x y'", "--module", "mpi/4.1"),
        *("--module", "gcc", "--setup", "echo $HOSTNAME", "--mpi", "pmix"),
        *("--", "train", "--scheme", "1d"),
    ]
    out, notes = render_noted(capsys, args)
    assert notes == []
    lines = out.splitlines()
    env = lines.index("# Environment (--module, --setup, --venv):")
    assert lines[env + 1 : env + 6] == [
        "module load mpi/4.1",
        "module load gcc",
        "export A='x y'",
        "echo $HOSTNAME",
        "source '/opt/my envs/gcn/bin/activate'",
    ]
    assert env < lines.index("export OMP_PROC_BIND=close") < len(lines) - 1
    assert lines[-1].startswith("srun ")
    assert all(not ln.startswith("#SBATCH") for ln in lines[env:])
    for venv, word in (
        ("~/gcn env/", "\"$HOME\"/'gcn env/bin/activate'"),
        ("$HOME/e", '"$HOME"/e/bin/activate'),
        ("~", '"$HOME"/bin/activate'),
        ("rel", "rel/bin/activate"),
    ):
        out = render(capsys, [*args[:8], "--venv", venv, "--", "train"])
        assert f"source {word}\n" in out


def test_notes_say_what_was_assumed(capsys):
    base = "--scheduler pjm --nodes 1 --ranks-per-node 4".split()
    _, notes = render_noted(capsys, [*base, "--", "train"])
    assert len(notes) == 2
    assert "activates no environment" in notes[0] and "--venv DIR" in notes[0]
    assert "PJM jobs do not inherit" in notes[0]
    assert "no --cores-per-node: 1 thread per rank by default" in notes[1]
    _, notes = render_noted(capsys, [*base, "--threads", "3", "--venv", "v", "--", "train"])
    assert notes == [
        "jobscript: no --cores-per-node: 3 threads per rank from --threads, not checked "
        "against a node's cores (with --cores-per-node C: C // 4 threads per rank)"
    ]
    _, notes = render_noted(capsys, [*base, "--module", "m", "--", "train", "--threads", "2"])
    assert len(notes) == 1 and "2 threads per rank from the train arguments' --threads" in notes[0]
    args = [*base, "--cores-per-node", "8", "--setup", "true", "--json", "--", "train"]
    out, notes = render_noted(capsys, args)
    assert notes == [] and json.loads(out)["notes"] == []


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--module", "gcc openmpi"], ("--module takes one module name",)),
        (["--module", ""], ("--module must not be empty",)),
        (["--setup", "a\nb"], ("--setup must be one line",)),
        (["--venv", " "], ("--venv must not be empty",)),
    ],
)
def test_bad_setup_is_one_line(capsys, args, needles):
    base = "--scheduler slurm --nodes 1 --ranks-per-node 1".split()
    refused(capsys, [*base, *args, "--", "train"], *needles)


def test_template_without_setup_refuses_setup_options(capsys, tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    (d / "slurm.sh").write_text("#!/bin/bash\nsrun ${train}\n")
    args = f"--scheduler slurm --nodes 1 --ranks-per-node 1 --template-dir {d}".split()
    refused(capsys, [*args, "--venv", "v", "--", "train"], "no ${setup} line", "--venv")
    _, notes = render_noted(capsys, [*args, "--cores-per-node", "2", "--", "train"])
    assert notes == []  # the template sets up its own environment


def test_missing_gcntrain_stops_the_script(capsys, tmp_path):
    """A script whose set-up does not provide gcntrain stops before the launch, saying so."""
    script = tmp_path / "job.sh"
    args = "--scheduler pjm --nodes 1 --ranks-per-node 1 --venv nowhere -- train".split()
    script.write_text(render(capsys, args))
    stubs = tmp_path / "bin"
    stubs.mkdir()
    stub(stubs, "mpiexec")
    env = {"PATH": f"{stubs}:/usr/bin:/bin", "HOME": str(tmp_path)}
    res = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True)
    assert res.returncode == 127
    assert res.stdout == ""
    assert "gcntrain not found" in res.stderr


#: the real launcher of this machine (the mpich wheel in the environment running the tests)
REAL_MPIEXEC = Path(sys.executable).parent / "mpiexec"

#: srun and Fugaku's mpiexec, as the stand-in scheduler has them: the command line runs on
#: this machine with the real mpiexec, one core per rank (srun --cpu-bind=cores; Fujitsu's
#: MPI binds ranks too); -stdout-proc/-stderr-proc are dropped (output passes through)
SHIMS = {
    "srun": """#!/bin/sh
while [ "${1#--}" != "$1" ]; do shift; done
exec REAL -n "$SLURM_NTASKS" -bind-to core "$@"
""",
    "mpiexec": """#!/bin/sh
while [ $# -gt 0 ]; do
  case "$1" in
    -n) n=$2; shift 2;;
    -stdout-proc|-stderr-proc) shift 2;;
    *) break;;
  esac
done
exec REAL -n "$n" -bind-to core "$@"
""",
}


def directive(script: str, pattern: str) -> int:
    """The integer of the directive line `pattern` (a regular expression with one group)."""
    import re

    m = re.search(pattern, script, re.MULTILINE)
    assert m is not None, pattern
    return int(m.group(1))


def submit(script: Path, tmp_path: Path) -> dict:
    """Run `script` as the stand-in scheduler would: bash in an empty environment (PATH
    has the system directories and the launcher shim only, so `gcntrain` is found only
    when the script activates its environment), with the variables the scheduler sets."""
    text = script.read_text()
    shims = tmp_path / "scheduler"
    shims.mkdir(exist_ok=True)
    for name, body in SHIMS.items():
        (shims / name).write_text(body.replace("REAL", shlex.quote(str(REAL_MPIEXEC))))
        (shims / name).chmod(0o755)
    env = {"PATH": f"{shims}:/usr/bin:/bin", "HOME": str(tmp_path / "home")}
    if text.startswith("#!/bin/bash") and "#SBATCH" in text:
        nodes = directive(text, r"^#SBATCH --nodes=(\d+)$")
        env["SLURM_NTASKS"] = str(nodes * directive(text, r"^#SBATCH --ntasks-per-node=(\d+)$"))
    else:
        env["PJM_JOBID"] = "1"
    res = subprocess.run(
        ["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout.splitlines()[-1])


needs_mpiexec = pytest.mark.skipif(
    not REAL_MPIEXEC.is_file() or not (Path(sys.prefix) / "bin" / "activate").is_file(),
    reason="needs the mpiexec and activate of the virtual environment running the tests",
)


def check_run(summary: dict, run_dir: Path) -> None:
    assert (summary["ranks"], summary["epochs"], summary["scheme"]) == (2, 2, "1d")
    epochs = [json.loads(ln)["epoch"] for ln in (run_dir / "metrics.jsonl").open()]
    assert epochs == [1, 2]
    assert (run_dir / "weights.h5").is_file() and (run_dir / "predictions.h5").is_file()


@needs_mpiexec
def test_slurm_script_runs_as_rendered(capsys, tmp_path):
    """The Slurm script activates the real virtual environment of these tests (--venv) and
    trains 2 epochs on 2 ranks through the srun stand-in."""
    (tmp_path / "home").mkdir()
    args = [
        *"--scheduler slurm --nodes 1 --ranks-per-node 2 --cores-per-node 2".split(),
        *("--venv", sys.prefix, "-o", "job.sh", "--"),
        *"train --scheme 1d --epochs 2 --quiet --json -o run".split(),
    ]
    render_noted(capsys, args)
    check_run(submit(tmp_path / "job.sh", tmp_path), tmp_path / "run")


@needs_mpiexec
def test_pjm_script_runs_as_rendered(capsys, tmp_path):
    """The PJM script activates a virtual environment under the job's $HOME, with a space
    in its name and no mpiexec of its own (as on Fugaku, where the launcher is the
    system's), and trains 2 epochs on 2 ranks through the mpiexec stand-in."""
    venv = tmp_path / "home" / "gcn env"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "activate").write_text(
        f"VIRTUAL_ENV={shlex.quote(str(venv))}\n"
        'PATH="$VIRTUAL_ENV/bin:$PATH"\nexport VIRTUAL_ENV PATH\n'
    )
    (venv / "bin" / "gcntrain").symlink_to(Path(sys.prefix) / "bin" / "gcntrain")
    args = [
        *"--scheduler pjm --nodes 1 --ranks-per-node 2 --threads 1".split(),
        *("--venv", "~/gcn env", "-o", "job.sh", "--"),
        *"train --scheme 1d --epochs 2 --quiet --json -o run".split(),
    ]
    render_noted(capsys, args)
    check_run(submit(tmp_path / "job.sh", tmp_path), tmp_path / "run")


def test_srun_mpi_defaults_to_what_the_mpi_library_here_needs(capsys):
    """Without --mpi, srun gets the plugin of the MPI library mpi4py loads here (MPICH:
    pmi2), and a note says so and how to change it; --mpi wins, without a note."""
    from gcntrain.comm.launch import installed_srun_mpi

    plugin, library = installed_srun_mpi()
    assert plugin is not None, library
    args = "--scheduler slurm --nodes 1 --ranks-per-node 2 --venv v -- train --scheme 1d"
    out, notes = render_noted(capsys, args.split())
    assert f"\nsrun --mpi={plugin} --kill-on-bad-exit=1 " in out
    assert [n for n in notes if "--mpi" in n] == [
        f"jobscript: srun --mpi={plugin}, the plugin {library} needs (the MPI library mpi4py "
        "loads here); if the cluster's MPI differs, render with --mpi TYPE (pmi2 for MPICH "
        "or Intel MPI, pmix for Open MPI)"
    ]
    other = "pmix" if plugin != "pmix" else "pmi2"
    out, notes = render_noted(capsys, [*args.split()[:6], "--mpi", other, *args.split()[6:]])
    assert f"\nsrun --mpi={other} --kill-on-bad-exit=1 " in out
    assert not [n for n in notes if "--mpi" in n]


def test_srun_mpi_without_an_mpi_library_is_assumed_and_said():
    from gcntrain.job.jobscript import FALLBACK_SRUN_MPI, Request, mpi_plugin

    req = Request("slurm", 1, 2)
    plugin, note = mpi_plugin(req, {"mpi"}, (None, "no MPI library here"))
    assert plugin == FALLBACK_SRUN_MPI
    assert note.startswith(f"jobscript: srun --mpi={FALLBACK_SRUN_MPI} assumed (no MPI library")
    assert mpi_plugin(req, {"train"}, ("pmix", "Open MPI 5.0.11")) == ("pmix", None)


def test_kill_on_bad_exit_in_every_slurm_script():
    for path in [GOLDEN / "slurm.sh", *EXAMPLES]:
        text = path.read_text()
        if "#SBATCH" in text:
            launch = [ln for ln in text.splitlines() if ln.startswith("srun ")]
            assert len(launch) == 1 and "--kill-on-bad-exit=1" in launch[0].split(), path


@pytest.mark.parametrize(
    "args, needle",
    [
        ("--scheduler pjm --nodes 1 --ranks-per-node 2 --mpi pmi2", "--mpi is srun's option"),
        ("--scheduler slurm --nodes 1 --ranks-per-node 2 --mpi PMI-2", "--mpi must be"),
        ("--scheduler slurm --nodes 1 --ranks-per-node 2 --mpi 'a b'", "--mpi must be"),
    ],
)
def test_bad_mpi_plugins_refused(capsys, args, needle):
    refused(capsys, [*shlex.split(args), "--", "train"], needle)


@pytest.mark.parametrize("scheduler", ["slurm", "pjm"])
@pytest.mark.parametrize(
    "setup, needle",
    [
        ("echo 'oops", "is not a complete shell line: unexpected EOF"),
        ("if true; then", "is not a complete shell line"),
        ("cat <<EOF", "opens a here-document"),
        ("cat <<-END", "opens a here-document"),
    ],
)
def test_setup_lines_left_open_are_refused(capsys, tmp_path, scheduler, setup, needle):
    """A --setup that leaves a quote, a compound command or a here-document open would
    swallow the launch or fail the job's shell: one line, exit 2, nothing written."""
    out = tmp_path / "job.sh"
    args = ["--scheduler", scheduler, "--nodes", "1", "--ranks-per-node", "2", "--setup", setup]
    refused(capsys, [*args, "-o", str(out), "--", "train"], needle)
    assert not out.exists()


def test_complete_setup_lines_pass_bash(capsys, tmp_path):
    args = "--scheduler slurm --nodes 1 --ranks-per-node 2 --mpi pmi2".split()
    for setup in ('x=$(cat <<<"a b")', "export A='x y'", "if true; then :; fi"):
        script = tmp_path / "job.sh"
        script.write_text(render(capsys, [*args, "--setup", setup, "--", "train"]))
        bash_syntax_ok(script)


def test_a_template_rendering_invalid_bash_is_refused(capsys, tmp_path):
    d = tmp_path / "tpl"
    d.mkdir()
    (d / "slurm.sh").write_text("#!/bin/bash\n${header}\nif true; then\nsrun ${train}\n")
    args = ["--scheduler", "slurm", "--nodes", "1", "--ranks-per-node", "2"]
    refused(capsys, [*args, "--template-dir", str(d), "--", "train"], "is not valid bash")


def test_a_train_config_file_is_read_as_train_reads_it(capsys, tmp_path):
    """`-- train --config FILE` renders (its [train] table checked as `train` checks it, a
    misspelt table refused), and -o over that file is refused as an input."""
    good = tmp_path / "c.toml"
    good.write_text("[train]\nepochs = 2\n")
    bad = tmp_path / "bad.toml"
    bad.write_text("[trian]\nepochs = 2\n")
    base = ["--scheduler", "slurm", "--nodes", "1", "--ranks-per-node", "2", "--mpi", "pmi2"]
    for spelled in (["--config", str(good)], [f"--config={good}"]):
        assert "gcntrain train --config" in render(capsys, [*base, "--", "train", *spelled])
        refused(capsys, [*base, "-o", str(good), "--", "train", *spelled], "is an input")
    assert good.read_text() == "[train]\nepochs = 2\n"
    refused(capsys, [*base, "--", "train", "--config", str(bad)], "[trian] is not a gcntrain")
