"""Measure gcntrain at scale: `gcntrain generate rmat` at scales 18-21 (24 with --with-24).

Each measurement runs gcntrain in its own child process and reports the child's wall time
and peak RSS (``os.wait4``: that child's own rusage), beside the machine's load and memory
bandwidth (numpy triad) printed before and after.  One function per measurement
(`measure_generate`, `measure_convert`), so that loading and simulating at scale can be
added beside them.

    python scripts/bench_scale.py [--scales 18,19,20,21] [--with-24] [--features 64]
        [--classes 16] [--edge-factor 16] [--dir DIR] [--convert FILE ...]
        [--train GRAPH ...] [--plan STORE [--plan-ranks 8192] [--max-memory 8G]
        [--partition-file FILE] [--plan-out DIR] [--same-as DIR]] [--json]

``--plan STORE`` plans STORE (a graph file or a rows store) for the six plans of
`bench_plan.PLANS` at ``--plan-ranks`` under ``--max-memory``, each in its own child
process: wall seconds, peak RSS against the budget and the load; ``--same-as DIR`` then
compares them with the plans in DIR (say, the in-memory plans of the same graph's file),
the JSON objects and the per-rank tables byte for byte, and the exit status is 1 when one
differs or a plan is over the budget.

``--train GRAPH`` also measures `gcntrain train GRAPH --epochs 1` serially and under
``mpiexec -n 2 --scheme 1d``: the setup's seconds and phases, the peak RSS (the largest
process's) and its ratio to the held data (`bench_load.HELD` states the definition).

Files are written into a temporary directory under --dir (default: the current directory;
scale 24 with 64 features writes about 6.5 GB) and deleted after each measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from gcntrain.simulate.launch import gcntrain_cmd
from gcntrain.simulate.measure import triad_gbs


def machine_state() -> dict:
    """The 1-minute load and the memory bandwidth one core streams now (GB/s, triad)."""
    return {"load": round(os.getloadavg()[0], 2), "triad_gbs": round(triad_gbs(), 1)}


#: a fresh, small process that runs the command and reports its rusage: a child forked
#: straight from this script would count this script's own peak (Linux copies the memory
#: high-water mark at fork and keeps it across exec), as /usr/bin/time avoids too
_WRAPPER = """
import json, os, sys, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    json.dump({"wall_s": time.perf_counter() - t0, "maxrss_kib": usage.ru_maxrss}, f)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_measured(argv: list[str]) -> dict:
    """Run `argv` in a child process; its wall time, its own peak RSS (MiB, from
    ``os.wait4`` in a small wrapper process), exit status and output."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "usage.json"
        proc = subprocess.run(
            [sys.executable, "-c", _WRAPPER, str(report), *argv], capture_output=True, text=True
        )
        usage = json.loads(report.read_text()) if report.exists() else {}
    return {
        "wall_s": round(usage.get("wall_s", float("nan")), 2),
        "peak_rss_mib": round(usage.get("maxrss_kib", 0) / 1024, 1),  # KiB on Linux
        "returncode": proc.returncode,
        "stdout": proc.stdout,
        "stderr": proc.stderr,
    }


def measure_generate(
    scale: int, folder: Path, *, edge_factor: int = 16, features: int = 64, classes: int = 16
) -> dict:
    """`gcntrain generate rmat --scale SCALE` into `folder`: wall time, peak RSS, the
    generator's own build and write times, nodes, stored entries and file size; the file is
    deleted afterwards."""
    path = folder / f"rmat{scale}.h5"
    argv = [*gcntrain_cmd(), "generate", "rmat", "-o", str(path), "--scale", str(scale)]
    argv += ["--edge-factor", str(edge_factor), "--features", str(features)]
    argv += ["--classes", str(classes), "--json"]
    r = run_measured(argv)
    row = {"what": f"generate rmat --scale {scale}", "scale": scale, **machine_load()}
    row.update({k: r[k] for k in ("wall_s", "peak_rss_mib", "returncode")})
    if r["returncode"] != 0:
        row["error"] = r["stderr"].strip().splitlines()[-1:] or ["(no message)"]
        return row
    summary = json.loads(r["stdout"])
    row.update(
        nodes=summary["nodes"],
        nnz=summary["nnz"],
        seconds_build=summary["seconds_build"],
        seconds_write=summary["seconds_write"],
        file_gib=round(path.stat().st_size / 2**30, 2),
    )
    path.unlink()
    return row


def measure_convert(source: str, folder: Path, *, options: tuple[str, ...] = ()) -> dict:
    """`gcntrain convert SOURCE` (an edge list) into `folder` with `options`: wall time,
    peak RSS, the converter's build and write times, nodes, stored entries and file size;
    the file is deleted afterwards."""
    path = folder / "converted.h5"
    argv = [*gcntrain_cmd(), "convert", source, "-o", str(path), *options, "--json"]
    r = run_measured(argv)
    what = f"convert {Path(source).name}"
    row = {"what": what, "source": source, "options": list(options), **machine_load()}
    row.update({k: r[k] for k in ("wall_s", "peak_rss_mib", "returncode")})
    if r["returncode"] != 0:
        row["error"] = r["stderr"].strip().splitlines()[-1:] or ["(no message)"]
        return row
    summary = json.loads(r["stdout"])
    row.update(
        nodes=summary["nodes"],
        nnz=summary["nnz"],
        seconds_build=summary["seconds_build"],
        seconds_write=summary["seconds_write"],
        file_gib=round(path.stat().st_size / 2**30, 2),
    )
    path.unlink()
    return row


def measure_train(graph: str, nprocs: int) -> dict:
    """`gcntrain train GRAPH --epochs 1 --json`, serially (`nprocs` 1) or under ``mpiexec -n
    NPROCS --scheme 1d``: wall time, peak RSS (the largest process of the tree: ``wait4``
    reports the maximum over the reaped descendants), the setup's seconds and phases, the
    graph data and the held data (`bench_load.trainer_bytes` added: `bench_load.HELD`)."""
    from bench_load import trainer_bytes

    argv = [*gcntrain_cmd(), "train", graph, "--epochs", "1", "--json"]
    argv += ["--scheme", "serial" if nprocs == 1 else "1d"]
    if nprocs > 1:
        argv = ["mpiexec", "-n", str(nprocs), *argv]
    r = run_measured(argv)
    row = {"what": f"train np {nprocs} {Path(graph).name}", "kind": "train", **machine_load()}
    row.update({k: r[k] for k in ("wall_s", "peak_rss_mib", "returncode")})
    if r["returncode"] != 0:
        row["error"] = r["stderr"].strip().splitlines()[-1:] or ["(no message)"]
        return row
    out = json.loads(next(x for x in r["stdout"].splitlines() if x.startswith("{")))
    held = out["held_bytes_max"] + trainer_bytes(out)
    row.update(
        setup_s=round(out["setup_seconds"], 2),
        phases={k: round(v, 2) for k, v in out.get("setup_phases", {}).items()},
        graph_mib=round(out["held_bytes_max"] / 2**20, 1),
        held_mib=round(held / 2**20, 1),
        peak_over_held=round(r["peak_rss_mib"] * 2**20 / held, 2),
    )
    return row


def machine_load() -> dict:
    """The 1-minute load when a measurement ends (cheap: no bandwidth run)."""
    return {"load_after": round(os.getloadavg()[0], 2)}


def print_row(row: dict) -> None:
    if "error" in row:
        print(f"{row['what']:28s} failed (exit {row['returncode']}): {row['error'][0]}")
        return
    if row.get("kind") == "train":
        print(
            f"{row['what']:28s} {row['wall_s']:8.2f} {row['peak_rss_mib']:10.0f}  setup "
            f"{row['setup_s']:.2f} s, held {row['held_mib']:.0f} MiB (graph "
            f"{row['graph_mib']:.0f}), peak/held {row['peak_over_held']:.2f}x, load "
            f"{row['load_after']:.2f}; "
            + " ".join(f"{k} {v:.2f}" for k, v in row["phases"].items())
        )
        return
    print(
        f"{row['what']:28s} {row['wall_s']:8.2f} {row['peak_rss_mib']:10.0f} "
        f"{row['seconds_build']:8.2f} {row['seconds_write']:8.2f} {row['nodes']:>11,d} "
        f"{row['nnz']:>13,d} {row['file_gib']:7.2f} {row['load_after']:6.2f}"
    )


def measure_plans(args) -> tuple[list[dict], int]:
    """The six plans of `bench_plan.PLANS` of ``--plan`` at ``--plan-ranks`` under
    ``--max-memory``, one line each (peak RSS against the budget, the load beside it); with
    ``--same-as`` the exit status of `bench_plan.compare` against that directory."""
    import bench_plan

    from gcntrain.data.memory import parse_size

    budget = parse_size(args.max_memory)
    extra = ["--max-memory", args.max_memory]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-plan-") as tmp:
        out = args.plan_out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        for name in bench_plan.PLANS:
            if not bench_plan.runnable(name, args.partition_file):
                continue
            got = bench_plan.measure(
                args.plan, name, args.plan_ranks, out, args.partition_file, extra
            )
            peak = (got["peak_rss_gb"] or 0.0) * 2**30
            under = "under" if got["rc"] == 0 and peak < budget else "NOT under"
            print(
                f"plan {name:10s} P={args.plan_ranks}  {got['wall_s']:8.1f} s  "
                f"peak {got['peak_rss_gb']} GiB ({under} --max-memory {args.max_memory})  "
                f"rc {got['rc']}  load {got['load_before']:.2f}-{got['load_after']:.2f}"
                + (f"  {got['error'][0]}" if got.get("error") else ""),
                flush=True,
            )
            rows.append({**got, "returncode": got["rc"] if peak < budget else 1})
        same = bench_plan.compare(out, args.same_as) if args.same_as else 0
    return rows, same


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scales", default="18,19,20,21", help="comma-separated R-MAT scales")
    ap.add_argument("--with-24", action="store_true", help="also scale 24 (minutes, ~5 GB)")
    ap.add_argument("--edge-factor", type=int, default=16)
    ap.add_argument("--features", type=int, default=64)
    ap.add_argument("--classes", type=int, default=16)
    ap.add_argument("--dir", default=".", help="where the temporary files go")
    ap.add_argument(
        "--convert",
        action="append",
        default=[],
        metavar="FILE",
        help="also measure `convert FILE --symmetrize --self-loops drop` (repeatable)",
    )
    ap.add_argument(
        "--train",
        action="append",
        default=[],
        metavar="GRAPH",
        help="also measure `train GRAPH` serially and at np 2 (1d): setup, peak/held",
    )
    ap.add_argument(
        "--plan",
        default=None,
        metavar="STORE",
        help="also plan STORE (a graph file or a rows store) for 1d, p2p (random and "
        "--partition-file), 2d, 3d and Plexus at --plan-ranks under --max-memory",
    )
    ap.add_argument("--plan-ranks", type=int, default=8192)
    ap.add_argument("--max-memory", default="8G")
    ap.add_argument("--partition-file", default=None, help="the p2p plan's partition file")
    ap.add_argument(
        "--plan-out", type=Path, default=None, help="where the plans go (default: a temp dir)"
    )
    ap.add_argument(
        "--same-as",
        type=Path,
        default=None,
        metavar="DIR",
        help="with --plan: compare the plans with those of DIR (bench_plan.py --compare)",
    )
    ap.add_argument("--json", action="store_true", help="one JSON object at the end")
    args = ap.parse_args()
    scales = [int(s) for s in args.scales.split(",") if s.strip()]
    if args.with_24 and 24 not in scales:
        scales.append(24)
    before = machine_state()
    print(
        f"before: load {before['load']:.2f}, memory bandwidth {before['triad_gbs']:.1f} GB/s "
        f"(triad, one core), {os.cpu_count()} cores, Python {sys.version.split()[0]}"
    )
    print(
        f"{'measurement':28s} {'wall s':>8s} {'peak MiB':>10s} {'build s':>8s} {'write s':>8s} "
        f"{'nodes':>11s} {'stored':>13s} {'GiB':>7s} {'load':>6s}"
    )
    rows = []
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-scale-") as tmp:
        for scale in scales:
            row = measure_generate(
                scale,
                Path(tmp),
                edge_factor=args.edge_factor,
                features=args.features,
                classes=args.classes,
            )
            rows.append(row)
            print_row(row)
        for source in args.convert:
            row = measure_convert(
                source, Path(tmp), options=("--symmetrize", "--self-loops", "drop")
            )
            rows.append(row)
            print_row(row)
    if args.train:
        from bench_load import HELD

        print(HELD)
    for graph in args.train:
        for nprocs in (1, 2):
            row = measure_train(graph, nprocs)
            rows.append(row)
            print_row(row)
    same = 0
    if args.plan:
        plan_rows, same = measure_plans(args)
        rows += plan_rows
    after = machine_state()
    print(f"after: load {after['load']:.2f}, memory bandwidth {after['triad_gbs']:.1f} GB/s")
    if args.json:
        print(json.dumps({"before": before, "after": after, "rows": rows}))
    return 0 if all(r["returncode"] == 0 for r in rows) and same == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
