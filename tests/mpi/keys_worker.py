"""MPI worker of tests/test_json_keys.py: `mpiexec -n 4 python tests/mpi/keys_worker.py
GRAPH TMPDIR` runs `gcntrain train --json` through the real command line (in this process,
once per configuration: every registered scheme and the options that add keys) and rank 0
prints one JSON line {label: the run's --json object}."""

from __future__ import annotations

import contextlib
import io
import json
import sys

from gcntrain.cli.main import run
from gcntrain.comm.shared import windows_set


def configurations(graph: str, tmp: str) -> list[tuple[str, list[str]]]:
    """(label, train arguments) of every scheme valid on 4 ranks, plus the options that add
    keys: -o, --per-rank, --checkpoint, --resume, --grid auto, --scheme auto."""
    base = [graph, "--epochs", "2", "--quiet", "--json"]
    return [
        (
            "1d-out-ckpt",
            [
                *base,
                "--scheme",
                "1d",
                "-o",
                f"{tmp}/out",
                "--per-rank",
                f"{tmp}/pr.csv",
                "--checkpoint",
                f"{tmp}/ck",
            ],
        ),
        (
            "1d-resume",
            [
                graph,
                "--epochs",
                "3",
                "--quiet",
                "--json",
                "--scheme",
                "1d",
                "--resume",
                f"{tmp}/ck",
            ],
        ),
        ("p2p", [*base, "--scheme", "p2p"]),
        ("1.5d", [*base, "--scheme", "1.5d", "--replication", "2"]),
        ("2d", [*base, "--scheme", "2d", "--grid", "2x2"]),
        ("2d-auto", [*base, "--scheme", "2d", "--grid", "auto"]),
        ("3d", [*base, "--scheme", "3d", "--grid", "1x2x2"]),
        ("plexus", [*base, "--scheme", "plexus", "--grid", "2x2x1"]),
        ("vertexcut", [*base, "--scheme", "vertexcut", "--delay", "1"]),
        ("hier", [*base, "--scheme", "hier", "--partition", "metis"]),
        ("auto", [*base]),
        # one node's messages (GCNTRAIN_NODE_WINDOWS=0): the recommender prices them and
        # picks a configuration with options (the node windows make 1d the cheapest here)
        ("auto-messages", [*base]),
    ]


def node_windows(on: bool):
    """`GCNTRAIN_NODE_WINDOWS` set to 1 or 0 while inside (the recommender reads it too)."""
    return windows_set(on)


def main(graph: str, tmp: str) -> int:
    from mpi4py import MPI

    rank = MPI.COMM_WORLD.Get_rank()
    got, status = {}, 0
    for label, argv in configurations(graph, tmp):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), node_windows(not label.endswith("-messages")):
            rc = run(["train", *argv])
        if rc != 0:
            status = rc
            got[label] = {"exit_status": rc}
        elif rank == 0:
            got[label] = json.loads(out.getvalue())
    if rank == 0:
        sys.stdout.write(json.dumps(got) + "\n")
        sys.stdout.flush()
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
