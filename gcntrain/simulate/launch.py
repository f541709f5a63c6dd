"""Starting gcntrain and MPI from `gcntrain bench` (`gcntrain.simulate.calibrate`): the
command lines, an environment free of the calling job's launcher, and the training runs the
fits are made from (`gcntrain.simulate.fits`)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from gcntrain.comm.env import launcher_free_env, own_mpiexec

__all__ = ["find_mpiexec", "gcntrain_cmd", "launcher_free_env", "run"]

#: seconds any one run of the bench may take (a hung nested job must not hang the caller)
RUN_TIMEOUT = 600


def gcntrain_cmd() -> list[str]:
    """The command line that starts this installation's gcntrain."""
    exe = Path(sys.executable).parent / "gcntrain"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "gcntrain.cli.main"]


def find_mpiexec(given: str | None = None) -> str | None:
    """`given`, else the mpiexec beside this Python (the mpich wheel's), else on PATH."""
    if given:
        return given
    return own_mpiexec() or shutil.which("mpiexec")


def run(cmd: list[str]) -> subprocess.CompletedProcess:
    """`cmd` in a launcher-free environment, output captured; `RuntimeError` with the end of
    its stderr when it fails or outlasts `RUN_TIMEOUT`."""
    try:
        out = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            check=False,
            env=launcher_free_env(),
        )
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{' '.join(cmd[:4])} ... ran past {RUN_TIMEOUT} s") from None
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} ... failed: {out.stderr.strip()[-300:]}")
    return out


def training_json(cmd: list[str]) -> dict:
    """The ``--json`` output of a `gcntrain train` command line (`cmd` without --json)."""
    return json.loads(run([*cmd, "--json", "--quiet"]).stdout)


def serial_epochs(graph: str, scheme: str, epochs: int = 8, threads: int = 1) -> dict:
    """Median epoch seconds (``epoch_seconds``) and its seconds in graph products
    (``t_aggregation``), dense products (``t_dense``) and everything else (``t_other``:
    element-wise work and per-call cost) of a one-process `gcntrain train` of `graph` with
    `scheme` on `threads` threads."""
    cmd = [*gcntrain_cmd(), "train", graph, "--scheme", scheme, "--epochs", str(epochs)]
    d = training_json([*cmd, "--threads", str(threads)])
    return {k: float(d[k]) for k in ("epoch_seconds", "t_aggregation", "t_dense", "t_other")}


def generate_rmat(path: str, scale: int, edge_factor: int = 8) -> str:
    """`gcntrain generate rmat` into `path`; `path`."""
    run(
        [*gcntrain_cmd(), "generate", "rmat", "-o", path, "--scale", str(scale)]
        + ["--edge-factor", str(edge_factor)]
    )
    return path


def mpi_figures(mpiexec: str, ranks: int = 2, reps: int = 9) -> dict:
    """The JSON of `gcntrain.comm.bench` run on `ranks` ranks."""
    out = run(
        [mpiexec, "-n", str(ranks), sys.executable, "-m", "gcntrain.comm.bench"]
        + ["--reps", str(reps)]
    )
    lines = out.stdout.strip().splitlines()
    if not lines:
        raise RuntimeError("the MPI benchmark printed nothing")
    return json.loads(lines[-1])
