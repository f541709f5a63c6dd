"""Launch `mpiexec -n P ...` from tests with a hard wall-clock limit (no hung CI).

The job runs in its own process group; on timeout the whole group is killed, so no rank
outlives the test.  One Numba thread per rank (ranks are oversubscribed on CI's 2 cores).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
WORKER = REPO / "tests" / "mpi" / "worker.py"


def mpiexec() -> str:
    local = Path(sys.executable).parent / "mpiexec"
    if local.exists():
        return str(local)
    found = shutil.which("mpiexec")
    if not found:
        raise RuntimeError("mpiexec not found: install the `mpich` extra")
    return found


def gcntrain_exe() -> list[str]:
    local = Path(sys.executable).parent / "gcntrain"
    return [str(local)] if local.exists() else [sys.executable, "-m", "gcntrain"]


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    def json(self) -> dict:
        lines = [ln for ln in self.stdout.splitlines() if ln.startswith("{")]
        if len(lines) != 1:
            raise AssertionError(
                f"expected one JSON line, got stdout:\n{self.stdout}\n"
                f"stderr:\n{self.stderr[-3000:]}"
            )
        return json.loads(lines[0])


def run_mpi(
    nprocs: int,
    argv: list[str],
    timeout: float = 600,
    env: dict | None = None,
    cwd: str | None = None,
) -> Result:
    """Run `mpiexec -n nprocs argv...`; kill the whole job after `timeout` seconds."""
    import time

    e = dict(os.environ)
    e.setdefault("NUMBA_NUM_THREADS", "1")
    e["PYTHONUNBUFFERED"] = "1"
    if env:
        e.update(env)
    cmd = [mpiexec(), "-n", str(nprocs), *argv]
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=e,
        cwd=cwd or str(REPO),
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        msg = (
            f"mpiexec -n {nprocs} {' '.join(argv)} exceeded {timeout} s and was killed\n"
            f"stdout:\n{out[-2000:]}\nstderr:\n{err[-2000:]}"
        )
        raise AssertionError(msg) from None
    return Result(proc.returncode, out, err, time.perf_counter() - t0)


def run_worker(nprocs: int, case: str, timeout: float = 600) -> Result:
    return run_mpi(nprocs, [sys.executable, str(WORKER), case], timeout=timeout)
