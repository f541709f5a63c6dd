"""Several `gcntrain` commands in one MPI job: `mpiexec -n P python tests/mpi/worker_cli.py JOBS`.

JOBS is a JSON file holding a list of argument lists.  Every rank runs each command in turn
through `gcntrain.cli.main.run` (the function the console script calls) with its Python-level
stdout and stderr captured; after each command rank 0 prints one JSON line
``{"job", "argv", "rcs", "stdout", "stderr"}`` with every rank's exit status, stdout text and
stderr text (lists in rank order).  One launch (Python, mpi4py and the Numba cache loaded
once) then serves many commands: tests use it where they check what commands compute and
print, and keep real `mpiexec gcntrain ...` launches for what only a fresh process shows
(exit statuses of the processes, output written below Python, signals, aborts).

An internal error inside a command aborts the whole job (as it aborts a real launch); the
caller reports the commands without a result line.  Driven by `tests/mpi/batch.CliBatches`.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys


def main() -> int:
    from mpi4py import MPI

    from gcntrain.cli.main import run

    world = MPI.COMM_WORLD
    with open(sys.argv[1]) as f:
        jobs = json.load(f)
    real_out = sys.stdout
    for i, argv in enumerate(jobs):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = run(argv)
        sys.stdout = real_out  # `run` points a non-zero rank's stdout at os.devnull
        rcs = world.gather(rc, root=0)
        outs = world.gather(out.getvalue(), root=0)
        errs = world.gather(err.getvalue(), root=0)
        if world.Get_rank() == 0:
            line = {"job": i, "argv": argv, "rcs": rcs, "stdout": outs, "stderr": errs}
            real_out.write(json.dumps(line) + "\n")
            real_out.flush()
        world.Barrier()
    return 0


if __name__ == "__main__":
    sys.exit(main())
