"""Setup time and peak memory of `gcntrain train` on one graph: serial and `mpiexec -n 2`.

Runs each variant `--repeat` times, interleaved (variant A, B, A, B, ...), as separate
processes under ``/usr/bin/time -v`` and prints, per run, the machine's load average, the
run's ``setup_seconds`` (and its ``setup_phases`` where the code has them),
``held_bytes_max`` (graph data: the Ops' structures, the node data as loaded and the
layout, as `gcntrain.job.runner.held_data` measures them), the held data (`HELD`: that plus
what the trainer keeps, computed from the arrays' sizes by `trainer_bytes`), the peak
resident set (the largest rank's under MPI) and its ratio to the held data; once, this
machine's memory bandwidth
(`gcntrain.simulate.measure.triad_gbs`).  A variant is a Python path holding a `gcntrain`
package (``--variant before=/path/to/copy``; the working tree is ``now``), so a saved copy
of the code can be compared with the current one on the same loaded machine.

Usage::

    python scripts/bench_load.py GRAPH [--np 1 --np 2] [--epochs 1] [--repeat 2]
        [--variant NAME=PYTHONPATH ...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

#: the definition printed with the table
HELD = (
    "held data = graph data (train --json held_bytes_max: the Ops' matrices, node data as "
    "loaded, layout) + the trainer's arrays from their sizes: per layer f_in -> f_out its "
    "cached input and its two m x f_out outputs (pre- and post-activation), weights and "
    "bias with Adam's two moments (3 copies); m = the largest rank's rows, in the training "
    "dtype; the features are counted once (the trainer's prepared copy replaces the raw one)"
)


def trainer_bytes(out: dict) -> int:
    """What the trainer of the run summarised by `out` (train --json) keeps beside the graph
    data, from the arrays' sizes (see `HELD`)."""
    import numpy as np

    b = np.dtype(out.get("dtype", "float32")).itemsize
    m = -(-int(out["num_nodes"]) // int(out["ranks"]))
    widths = [int(out["num_features"]), *map(int, out["hidden"]), int(out["num_classes"])]
    total = 0
    for f_in, f_out in zip(widths[:-1], widths[1:]):
        total += m * (f_in + 2 * f_out) * b  # cached input, Z and H
        total += 3 * (f_in * f_out + f_out) * b  # W and bias, Adam's m and v
    return total


def _load() -> str:
    return open("/proc/loadavg").read().split()[0]


def run_once(graph: str, nprocs: int, epochs: int, pythonpath: str | None) -> dict:
    env = dict(os.environ)
    env.pop("GCNTRAIN_CACHE_DIR", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    code = "import sys; from gcntrain.cli.main import run; run(sys.argv[1:])"
    scheme = "serial" if nprocs == 1 else "1d"
    train = [sys.executable, "-c", code, "train", graph, "--scheme", scheme]
    train += ["--epochs", str(epochs), "--json"]
    with tempfile.TemporaryDirectory() as tmp:
        cmd = train if nprocs == 1 else ["mpiexec", "-n", str(nprocs), *train]
        # one `time -v` per rank: the peak of the largest rank, not of mpiexec
        if nprocs > 1:
            cmd = [
                "mpiexec",
                "-n",
                str(nprocs),
                "sh",
                "-c",
                # the rank from MPICH (PMI_RANK) or Open MPI: one file per rank
                f'exec /usr/bin/time -v -o {tmp}/time.${{PMI_RANK:-$OMPI_COMM_WORLD_RANK}} "$@"',
                "sh",
                *train,
            ]
        else:
            cmd = ["/usr/bin/time", "-v", "-o", f"{tmp}/time.0", *train]
        load = _load()
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=tmp)
        if r.returncode:
            raise SystemExit(r.stderr[-3000:])
        line = next(x for x in r.stdout.splitlines() if x.startswith("{"))
        out = json.loads(line)
        peaks = []
        for name in os.listdir(tmp):
            if name.startswith("time."):
                text = open(os.path.join(tmp, name)).read()
                peaks.append(
                    int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", text).group(1))
                    * 1024
                )
    held = out["held_bytes_max"] + trainer_bytes(out)
    return {
        "load": load,
        "setup_s": out["setup_seconds"],
        "phases": out.get("setup_phases", {}),
        "graph_mb": out["held_bytes_max"] / 1e6,
        "held_mb": held / 1e6,
        "peak_mb": max(peaks) / 1e6,
        "ratio": max(peaks) / held,
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("graph")
    ap.add_argument("--np", dest="nps", type=int, action="append")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--variant", action="append", default=[])
    args = ap.parse_args(argv)
    variants = [("now", None)] + [tuple(v.split("=", 1)) for v in args.variant]
    from gcntrain.simulate.measure import triad_gbs

    print(
        f"graph {args.graph}; memory bandwidth (triad) {triad_gbs():.1f} GB/s; load {_load()}",
        flush=True,
    )
    print(HELD, flush=True)
    for nprocs in args.nps or [1, 2]:
        for rep in range(args.repeat):
            for name, path in variants:
                r = run_once(args.graph, nprocs, args.epochs, path)
                print(
                    f"np {nprocs} {name:8s} #{rep}  load {r['load']:>5s}  setup "
                    f"{r['setup_s']:6.2f} s  graph {r['graph_mb']:6.0f} MB  "
                    f"held {r['held_mb']:6.0f} MB  peak RSS {r['peak_mb']:7.0f} MB  "
                    f"({r['ratio']:.2f}x held)  "
                    + " ".join(f"{k} {v:.2f}" for k, v in r["phases"].items()),
                    flush=True,
                )


if __name__ == "__main__":
    main()
