"""Rendered batch scripts on a real Slurm: `gcntrain jobscript` output submitted unedited
with `sbatch` to a one-host cluster of two slurmd nodes (scripts/slurm-test-cluster.sh;
.ci/run brings it up and down around the suite).

Checked: each script starts one MPI job of the right size (1d, p2p, 2d 2x2 on one node, 1d
on 2 nodes x 2 ranks) whose result equals the same run under `mpiexec`, whatever the site's
default MPI plugin (``SLURM_MPI_TYPE`` of the submitting shell: none, pmi2, pmix; srun
reads it before slurm.conf's MpiDefault, and the script's ``--mpi`` wins over both); a
singleton launch (``--mpi none``) is refused on every task with status 2 and nothing
written; a rank killed with SIGKILL ends the job within 60 s; a SIGUSR1 stop writes a
checkpoint, the script requeues its job, and the requeued job resumes to the uninterrupted
run's weights bit for bit, with both runs' lines in the one log.

Jobs are submitted from an empty environment (``env -i``-like: PATH=/usr/bin:/bin), so
`gcntrain` is found only through the script's ``--venv`` line (this interpreter's virtual
environment).  Without a running test cluster, and where one cannot be started (no root or
no Slurm installed), the tests skip with that reason; under CI they fail instead.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from tests.shared_runs import h5_arrays

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = ROOT / "scripts" / "slurm-test-cluster.sh"
VENV = Path(sys.prefix)
MPIEXEC = VENV / "bin" / "mpiexec"
#: seconds a job may take before the test gives up on it (and cancels it)
JOB_TIMEOUT = 240
#: the acceptance bound for a job whose rank was killed
KILLED_JOB_BOUND = 60

#: MPICH's collectives without its node-aware algorithms: on 2 Slurm nodes PMI reports 2
#: nodes and MPICH sums in another order than on the one node of `mpiexec` (the weights
#: then differ in the last bit, 7e-8, after 3 epochs); with these, in both runs, they are
#: equal bit for bit (measured)
FLAT_COLLECTIVES = {
    "MPIR_CVAR_DEVICE_COLLECTIVES": "none",
    "MPIR_CVAR_ALLREDUCE_INTRA_ALGORITHM": "recursive_doubling",
    "MPIR_CVAR_BCAST_INTRA_ALGORITHM": "binomial",
    "MPIR_CVAR_ALLGATHERV_INTRA_ALGORITHM": "ring",
}
#: the one-job-of-the-right-size cases: name -> (nodes, ranks per node, site default MPI
#: plugin, train arguments, the job's and its reference's environment)
LAYOUTS = {
    "1d": (1, 4, "none", ["--scheme", "1d"], {}),
    "p2p": (1, 4, "pmix", ["--scheme", "p2p"], {}),
    "2d": (1, 4, "pmi2", ["--scheme", "2d", "--grid", "2x2"], {}),
    "1d-2nodes": (2, 2, "none", ["--scheme", "1d"], FLAT_COLLECTIVES),
}
TRAIN = ["--epochs", "3", "--seed", "3"]


def _cluster_state() -> str | None:
    """None when the test cluster answers; else why not."""
    res = subprocess.run(["bash", str(CLUSTER), "status"], capture_output=True, text=True)
    return None if res.returncode == 0 else "the test cluster gcntrain-test does not answer"


@pytest.fixture(scope="module")
def cluster():
    """The running test cluster; started here (and stopped after) when root and Slurm is
    installed; else skip (fail under CI) saying how to get one."""
    started = False
    if _cluster_state() is not None:
        if os.geteuid() == 0 and shutil.which("slurmctld"):
            res = subprocess.run(
                ["bash", str(CLUSTER), "up"], capture_output=True, text=True, timeout=120
            )
            assert res.returncode == 0, res.stdout + res.stderr
            started = True
        else:
            why = (
                "no Slurm test cluster: `scripts/slurm-test-cluster.sh up` as root brings one "
                "up (it installs slurm-wlm and munge with apt)"
            )
            if os.environ.get("CI") or os.environ.get("GCNTRAIN_REQUIRE_SLURM"):
                pytest.fail(why)
            pytest.skip(why)
    yield
    if started:
        subprocess.run(["bash", str(CLUSTER), "down"], capture_output=True, timeout=60)


def render(where: Path, name: str, nodes: int, per_node: int, args: list[str], train: list[str]):
    """`gcntrain jobscript` into WHERE/NAME.sh, with this interpreter's venv."""
    script = where / f"{name}.sh"
    cmd = [sys.executable, "-m", "gcntrain.cli.main", "jobscript", "--scheduler", "slurm"]
    cmd += ["--nodes", str(nodes), "--ranks-per-node", str(per_node), "--venv", str(VENV)]
    cmd += [*args, "-o", str(script), "--", "train", *train]
    res = subprocess.run(cmd, cwd=where, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return script


def submit(script: Path, mpi_default: str | None = None, env: dict | None = None) -> str:
    """`sbatch SCRIPT` from an empty environment in the script's directory: the job id."""
    clean = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}
    if mpi_default is not None:
        clean["SLURM_MPI_TYPE"] = mpi_default
    clean.update(env or {})
    res = subprocess.run(
        ["sbatch", "--parsable", script.name],
        cwd=script.parent,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    return res.stdout.strip().split(";")[0]


def job(jid: str) -> dict:
    """`scontrol show job JID` as a dict of its Key=Value words."""
    res = subprocess.run(["scontrol", "show", "job", jid], capture_output=True, text=True)
    return dict(w.split("=", 1) for w in res.stdout.split() if "=" in w)


#: the states a job ends in (a requeued job passes through REQUEUED and PENDING again)
FINAL_STATES = {
    "COMPLETED",
    "FAILED",
    "CANCELLED",
    "TIMEOUT",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "BOOT_FAIL",
    "DEADLINE",
    "PREEMPTED",
}


def wait(jid: str, timeout: float = JOB_TIMEOUT) -> dict:
    """Wait for job JID to end; its record (cancelled after `timeout`)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        rec = job(jid)
        if rec.get("JobState") in FINAL_STATES:
            return rec
        time.sleep(0.5)
    subprocess.run(["scancel", jid])
    pytest.fail(f"job {jid} still queued or running after {timeout} s: {job(jid)}")


def tasks_that(text: str, what: str) -> set[int]:
    """The task ids srun reports as `what` ("Exited with exit code 2", "Killed"): its lines
    ``srun: error: NODE: tasks 0-1,3: WHAT``, joined over lines."""
    found: set[int] = set()
    for m in re.finditer(rf"tasks? ([0-9,-]+): {re.escape(what)}$", text, re.M):
        for part in m.group(1).split(","):
            lo, _, hi = part.partition("-")
            found.update(range(int(lo), int(hi or lo) + 1))
    return found


def log(where: Path, jid: str) -> str:
    return (where / f"slurm-{jid}.out").read_text()


def mpiexec_run(where: Path, ranks: int, train: list[str], out: str, env: dict | None = None):
    """The same training under this machine's mpiexec, into WHERE/OUT."""
    cmd = [str(MPIEXEC), "-n", str(ranks), str(VENV / "bin" / "gcntrain"), "train", *train]
    env = {**os.environ, "NUMBA_NUM_THREADS": "1", **(env or {})}
    res = subprocess.run(
        [*cmd, "-o", out, "--quiet"], cwd=where, env=env, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr[-2000:]
    return where / out


def weights(run_dir: Path) -> dict[str, np.ndarray]:
    found = h5_arrays(run_dir / "weights.h5")
    assert found
    return found


def same_weights(a: Path, b: Path) -> None:
    wa, wb = weights(a), weights(b)
    assert wa.keys() == wb.keys()
    for k in wa:
        assert np.array_equal(wa[k], wb[k]), k


#: the job whose rank 1 kills itself: long enough never to finish, a limit that ends a hang
KILLED_TRAIN = ["--seed", "3", "--epochs", "100000", "--checkpoint", "ck", "--checkpoint-every"]


@pytest.fixture(scope="module")
def killed_job(cluster, usr1_job, tmp_path_factory):
    """The killed-rank job, submitted (after the SIGUSR1 job) before the layout jobs so
    that its wait overlaps theirs."""
    where = tmp_path_factory.mktemp("slurm-killed")
    script = render(where, "killed", 1, 4, ["--time", "00:05:00"], [*KILLED_TRAIN, "1"])
    return where, submit(script, env={"GCNTRAIN_KILL_IN_CHECKPOINT": "1:3"})


@pytest.fixture(scope="module")
def layout_jobs(cluster, killed_job, tmp_path_factory):
    """Every layout's script, submitted at once (after the killed-rank job); the mpiexec
    references computed while the jobs run; then each job's record."""
    where = tmp_path_factory.mktemp("slurm-layouts")
    jids = {}
    refs = {}
    for name, (nodes, per_node, default, train, env) in LAYOUTS.items():
        d = where / name
        d.mkdir()
        script = render(d, name, nodes, per_node, [], [*train, *TRAIN, "-o", "run"])
        jids[name] = (d, submit(script, default, env))
    for name, (nodes, per_node, _, train, env) in LAYOUTS.items():
        refs[name] = mpiexec_run(where, nodes * per_node, [*train, *TRAIN], f"ref-{name}", env)
    records = {name: (d, jid, wait(jid)) for name, (d, jid) in jids.items()}
    return records, refs


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_rendered_script_runs_one_job_of_the_right_size(layout_jobs, name):
    records, refs = layout_jobs
    d, jid, rec = records[name]
    nodes, per_node, default, _, _ = LAYOUTS[name]
    text = log(d, jid)
    assert rec["JobState"] == "COMPLETED" and rec["ExitCode"] == "0:0", text[-3000:]
    assert rec["NumNodes"] == str(nodes) and rec["NumTasks"] == str(nodes * per_node)
    config = json.loads((d / "run" / "config.json").read_text())
    assert config["ranks"] == nodes * per_node
    assert len(re.findall(r"^final loss ", text, re.M)) == 1  # one job, one summary
    same_weights(d / "run", refs[name])
    script = (d / f"{name}.sh").read_text()
    launch = [ln for ln in script.splitlines() if ln.startswith("srun ")]
    assert launch and "--kill-on-bad-exit=1" in launch[0].split()
    assert default not in launch[0] or default == "pmi2"  # the script's plugin, not the site's


def test_singleton_launch_is_refused_on_every_task(cluster, tmp_path):
    """``srun --mpi=none -n 4`` (each task alone in its MPI world): every task exits 2
    before reading anything, one error line (task 0's), no output directory."""
    cmd = ["srun", "--mpi=none", "-N", "1", "-n", "4", str(VENV / "bin" / "gcntrain")]
    clean = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}
    res = subprocess.run(
        [*cmd, "train", *TRAIN, "-o", "run"],
        cwd=tmp_path,
        env=clean,
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT,
    )
    assert res.returncode == 2, res.stderr
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("gcntrain: error: ")]
    assert len(errors) == 1, res.stderr
    assert "started 4 tasks (SLURM_STEP_NUM_TASKS=4)" in errors[0]
    assert "`srun --mpi=pmi2`" in errors[0]
    assert tasks_that(res.stderr, "Exited with exit code 2") == {0, 1, 2, 3}, res.stderr
    assert res.stdout == "" and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("default, code", [("none", 2), ("pmi2", 0)])
def test_the_site_default_applies_where_no_plugin_is_named(cluster, tmp_path, default, code):
    """The control for the layouts' site defaults: an srun that names no plugin takes the
    submitting shell's SLURM_MPI_TYPE, so with none the tasks are singletons (refused),
    with pmi2 one job; the rendered scripts name theirs and run under any default."""
    cmd = ["srun", "-N", "1", "-n", "2", str(VENV / "bin" / "gcntrain"), "train", *TRAIN]
    env = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/root")}
    env["SLURM_MPI_TYPE"] = default
    res = subprocess.run(
        [*cmd, "--quiet"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert res.returncode == code, res.stderr
    refused = "started 2 tasks (SLURM_STEP_NUM_TASKS=2)" in res.stderr
    assert refused == (code == 2), res.stderr


def test_rendered_singleton_script_fails_and_writes_nothing(cluster, tmp_path):
    """The rendered script with ``--mpi none``: the job fails with the refusal's status 2
    (srun's --kill-on-bad-exit may end the tasks still starting once the first refused)."""
    script = render(tmp_path, "single", 1, 4, ["--mpi", "none"], [*TRAIN, "-o", "run"])
    jid = submit(script)
    rec = wait(jid)
    text = log(tmp_path, jid)
    assert rec["JobState"] == "FAILED" and rec["ExitCode"] in ("2:0", "143:0"), text
    assert tasks_that(text, "Exited with exit code 2"), text
    errors = [ln for ln in text.splitlines() if ln.startswith("gcntrain: error: ")]
    assert errors and all("started 4 tasks (SLURM_STEP_NUM_TASKS=4)" in e for e in errors)
    assert not (tmp_path / "run").exists()


def test_a_killed_rank_ends_the_job_within_a_minute(killed_job, layout_jobs):
    """Rank 1 kills itself with SIGKILL (as an out-of-memory kill would) right after
    staging its file of the epoch-3 checkpoint, while the others wait for it in MPI: srun's
    --kill-on-bad-exit ends the job (without it the job waited for its time limit)."""
    tmp_path, jid = killed_job
    rec = wait(jid, timeout=JOB_TIMEOUT)
    text = log(tmp_path, jid)
    assert rec["JobState"] == "FAILED", text[-3000:]
    staged = list((tmp_path / "ck").rglob("rank-00001.npz"))  # staged right before the kill
    killed_at = max(p.stat().st_mtime for p in staged)
    ended = time.mktime(time.strptime(rec["EndTime"], "%Y-%m-%dT%H:%M:%S"))
    print(f"the job ended {ended - killed_at:.0f} s after rank 1 was killed")
    assert ended - killed_at < KILLED_JOB_BOUND, (ended - killed_at, text[-3000:])
    killed = re.findall(r"tasks? ([0-9,-]+): Killed$", text, re.M)
    assert killed and killed[0] == "1", text[-3000:]  # rank 1 first, then srun ends the rest


USR1_TRAIN = ["--scheme", "1d", "--epochs", "400", "--seed", "3"]


@pytest.fixture(scope="module")
def usr1_job(cluster, tmp_path_factory):
    """The SIGUSR1 job, submitted first: once its first epoch line is out, SIGUSR1 goes to
    its ranks (what --signal=USR1@120 sends before the time limit); its stop, requeue and
    resumed run overlap the other jobs.  (directory, job id)."""
    where = tmp_path_factory.mktemp("slurm-usr1")
    train = [*USR1_TRAIN, "--checkpoint", "ck", "--checkpoint-every", "100", "-o", "run"]
    script = render(where, "usr1", 1, 4, ["--requeue", "--time", "00:10:00"], train)
    text = script.read_text()
    assert "#SBATCH --requeue" in text and "#SBATCH --open-mode=append" in text
    jid = submit(script)
    out = where / f"slurm-{jid}.out"
    t0 = time.monotonic()
    while not (out.exists() and re.search(r"^epoch +\d+/", out.read_text(), re.M)):
        assert time.monotonic() - t0 < JOB_TIMEOUT, job(jid)
        assert job(jid).get("JobState") in ("PENDING", "RUNNING", "CONFIGURING"), out.read_text()
        time.sleep(0.2)
    subprocess.run(["scancel", "--signal=USR1", jid], check=True)
    return where, jid


def test_usr1_stop_requeues_and_resumes_bit_for_bit(usr1_job, layout_jobs):
    """After SIGUSR1 the run checkpoints and exits 138, the script requeues its job, the
    requeued job resumes from the checkpoint and ends with the weights of one uninterrupted
    run, and the log (--open-mode=append) holds both runs' lines.  Slurm holds a requeued
    job for the credential lifetime before it starts again (AuthInfo=cred_expire: 120 s by
    default, 10 s on the test cluster)."""
    where, jid = usr1_job
    out = where / f"slurm-{jid}.out"
    rec = wait(jid)
    text = out.read_text()
    assert rec["JobState"] == "COMPLETED" and rec["Restarts"] == "1", text[-3000:]
    stopped = re.search(r"stopped by SIGUSR1 after epoch (\d+); checkpoint written to ck", text)
    assert stopped and 0 < int(stopped.group(1)) < 400, text[-3000:]
    assert f"gcntrain: requeueing job {jid} to resume from its checkpoint" in text
    assert len(re.findall(r"^final loss ", text, re.M)) == 1
    assert (where / "ck" / "LATEST").exists()
    same_weights(where / "run", mpiexec_run(where, 4, USR1_TRAIN, "ref"))
