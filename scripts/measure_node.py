"""Measure a multicore node for the simulator's validation, as one prepared run: the node's
`gcntrain bench` profile, then every configuration trained there, into a folder shaped like
../shared/measurements/node16-rmat18 (``profile.toml``, ``bench-output.txt``,
``measured.json``, ``runs.jsonl`` with each run's whole ``train --json``, ``node.txt``).
`scripts/reprice_measurements.py FOLDER` then prices every run with the model and compares.

Order: the graph (``gcntrain generate``, deterministic by seed), one short serial run to fill
the Numba cache, the bench, then the configurations one after another, each written out as
soon as it ends, so that a run cut short by ``--deadline`` keeps what it measured.  The load
average is recorded beside every run.

    python scripts/measure_node.py OUT [--scale 18] [--deadline 420]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from gcntrain.simulate.launch import find_mpiexec, gcntrain_cmd, launcher_free_env

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_simulate import machine_state  # noqa: E402

#: (np, configuration, train options), in the order they run (the most telling first, in case
#: the deadline cuts the list): the 16-core folder's nine configurations, np 16 and 3d
CONFIGS = [
    (1, "serial all-threads", "--scheme serial"),
    (4, "1d", "--scheme 1d"),
    (16, "1d", "--scheme 1d"),
    (16, "p2p metis", "--scheme p2p --partition metis"),
    (4, "p2p metis", "--scheme p2p --partition metis"),
    (8, "1d", "--scheme 1d"),
    (8, "p2p metis", "--scheme p2p --partition metis"),
    (16, "hier metis", "--scheme hier --partition metis"),
    (4, "hier metis", "--scheme hier --partition metis"),
    (4, "2d 2x2", "--scheme 2d --grid 2x2"),
    (16, "2d 4x4", "--scheme 2d --grid 4x4"),
    (4, "plexus 1x2x2", "--scheme plexus --grid 1x2x2"),
    (4, "vertexcut cd-0", "--scheme vertexcut"),
    (16, "vertexcut cd-0", "--scheme vertexcut"),
    (16, "plexus 1x4x4", "--scheme plexus --grid 1x4x4"),
    (8, "3d 2x2x2", "--scheme 3d --grid 2x2x2"),
    (2, "2d 1x2", "--scheme 2d --grid 1x2"),
    (4, "3d 2x2x1", "--scheme 3d --grid 2x2x1"),
    (1, "serial 1 thread", "--scheme serial --threads 1"),
]


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--scale", type=int, default=18)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--deadline", type=float, default=420.0, help="seconds: no run starts later")
    ap.add_argument("--run-timeout", type=float, default=90.0)
    ap.add_argument("--max-np", type=int, default=64, help="skip configurations above this")
    args = ap.parse_args()
    t0 = time.monotonic()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = launcher_free_env()
    gc = gcntrain_cmd()
    mpiexec = find_mpiexec()
    node = [
        f"host {platform.node()}, {os.cpu_count()} logical CPUs, python {sys.version.split()[0]}",
        f"processor {platform.processor() or platform.machine()}",
        f"at start: {machine_state()}",
    ]
    try:
        model = [ln for ln in Path("/proc/cpuinfo").read_text().splitlines() if "model name" in ln]
        node.append(model[0] if model else "")
    except OSError:
        pass
    (out / "node.txt").write_text("\n".join(node) + "\n")
    print("\n".join(node), flush=True)

    graph = f"/tmp/rmat{args.scale}.h5"
    gen = ["generate", "rmat", "-o", graph, "--scale", str(args.scale), "--edge-factor", "16"]
    gen += ["--features", "128", "--classes", "16", "--seed", "1"]
    subprocess.run([*gc, *gen], check=True, env=env)
    print(f"[{time.monotonic() - t0:.0f} s] graph: gcntrain {' '.join(gen)}", flush=True)
    subprocess.run([*gc, "train", graph, "--epochs", "2", "--quiet"], check=True, env=env)
    print(f"[{time.monotonic() - t0:.0f} s] Numba cache filled", flush=True)

    tb = time.monotonic()
    bench = subprocess.run(
        [*gc, "bench", "-o", str(out / "profile.toml")], capture_output=True, text=True, env=env
    )
    (out / "bench-output.txt").write_text(bench.stdout + bench.stderr)
    print(bench.stdout + bench.stderr, flush=True)
    print(f"[{time.monotonic() - t0:.0f} s] bench {time.monotonic() - tb:.1f} s", flush=True)

    measured = []
    for np_, name, opts in CONFIGS:
        if np_ > args.max_np:
            continue
        if time.monotonic() - t0 > args.deadline:
            print(f"deadline: np {np_} {name} not run", flush=True)
            continue
        cmd = [*gc, "train", graph, *opts.split(), "--epochs", str(args.epochs)]
        cmd += ["--json", "--quiet"]
        if np_ > 1:
            cmd = [mpiexec, "-n", str(np_), *cmd]
        before = load()
        ts = time.monotonic()
        try:
            r = subprocess.run(
                cmd, capture_output=True, text=True, env=env, timeout=args.run_timeout
            )
        except subprocess.TimeoutExpired:
            print(f"np {np_} {name}: past {args.run_timeout} s", flush=True)
            continue
        wall = time.monotonic() - ts
        if r.returncode != 0:
            print(f"np {np_} {name}: exit {r.returncode}: {r.stderr[-400:]}", flush=True)
            continue
        d = json.loads(r.stdout)
        with open(out / "runs.jsonl", "a") as f:
            f.write(json.dumps({"np": np_, "configuration": name, "load": before, **d}) + "\n")
        bd = dict(d.get("epoch_breakdown") or {})
        row = {
            "np": np_,
            "configuration": name,
            "epoch_ms": round(d["epoch_seconds"] * 1e3, 2),
            "epoch_breakdown_ms": {
                k: round(v * 1e3, 1) for k, v in bd.items() if k not in ("epoch", "critical_rank")
            },
            "bytes_sent_max": d["bytes_sent_max"],
            "held_bytes_max": d["held_bytes_max"],
            "wall_s": round(wall, 1),
            "train_options": opts,
            "breakdown_of_epoch": bd.get("epoch"),
            "critical_rank": bd.get("critical_rank"),
            "threads_per_rank": d.get("threads_per_rank"),
            "load_before": before,
        }
        measured.append(row)
        (out / "measured.json").write_text(json.dumps(measured, indent=1) + "\n")
        print(
            f"[{time.monotonic() - t0:.0f} s] np {np_:>2} {name:<20} {row['epoch_ms']:8.1f} ms"
            f"  ({d.get('threads_per_rank')} threads/rank, wall {wall:.1f} s, load {before})",
            flush=True,
        )
    end = f"done in {time.monotonic() - t0:.0f} s; at the end: {machine_state()}"
    with open(out / "node.txt", "a") as f:
        f.write(end + "\n")
    print(end, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
