"""Measure `gcntrain simulate` (planning only) per scheme: wall time and peak RSS, and check
that two sets of plans are byte-identical.

Each plan runs as its own child process under ``/usr/bin/time -v`` (the child's own peak
RSS, not this script's), writes its ``--json`` object and its ``--per-rank`` table into
--out, and one line per plan is printed with the 1-minute load beside it.

    python scripts/bench_plan.py GRAPH --ranks 64,8192 --out DIR [--partition-file P=FILE]
        [--only 1d,p2p-random,...] [--max-memory 8G] [--extra "--machine fugaku"]
    python scripts/bench_plan.py --compare DIR_A DIR_B

GRAPH is a graph file or a rows shard store (`gcntrain shard --parts B`: planned a block of
rows at a time, the figures of the graph file; `--max-memory` is passed to every plan).

`--compare` prints, for each plan both directories hold, whether the JSON objects (every key
but the run's own seconds and peak RSS) and the per-rank tables are identical, and exits 1
when one differs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

#: the planned configurations: name -> simulate options (``{part}``: a partition file)
PLANS = {
    "1d": ["--scheme", "1d"],
    "p2p-random": ["--scheme", "p2p", "--partition", "random"],
    "p2p-file": ["--scheme", "p2p", "--partition", "{part}"],
    "2d": ["--scheme", "2d"],
    "3d": ["--scheme", "3d"],
    "plexus": ["--scheme", "plexus"],
}
#: JSON keys that describe the run of the planner (and where it wrote), not the plan
RUN_KEYS = ("simulate_seconds", "peak_rss_bytes", "per_rank")


def runnable(name: str, part: str | None) -> bool:
    """Whether plan `name` can run: a plan that reads a partition file needs one."""
    return part is not None or "{part}" not in " ".join(PLANS[name])


def measure(graph: str, name: str, ranks: int, out: Path, part: str | None, extra: list) -> dict:
    """Run one plan under ``/usr/bin/time -v``; its wall time, peak RSS and load."""
    opts = [o.replace("{part}", part or "") for o in PLANS[name]]
    stem = out / f"{name}-P{ranks}"
    argv = ["gcntrain", "simulate", graph, "--ranks", str(ranks), *opts, *extra]
    argv += ["--json", "--per-rank", f"{stem}.csv"]
    load = os.getloadavg()[0]
    with open(f"{stem}.json", "w") as fout:
        proc = subprocess.run(
            ["/usr/bin/time", "-v", *argv], stdout=fout, stderr=subprocess.PIPE, text=True
        )
    wall = re.search(r"Elapsed \(wall clock\) time.*: (\S+)", proc.stderr)
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    secs = 0.0
    if wall:
        for part_s in wall.group(1).split(":"):
            secs = secs * 60 + float(part_s)
    row = {
        "plan": name,
        "ranks": ranks,
        "rc": proc.returncode,
        "wall_s": round(secs, 1),
        "peak_rss_gb": round(int(rss.group(1)) / 2**20, 2) if rss else None,
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }
    if proc.returncode:  # the planner's own line (a refusal), else the last line
        lines = proc.stderr.strip().splitlines()
        row["error"] = [x for x in lines if x.startswith("gcntrain:")][:1] or lines[-1:]
    return row


def plan_figures(path: Path) -> dict:
    """A plan's ``--json`` object without the keys that describe the planner's run."""
    obj = json.loads(path.read_text())
    return {k: v for k, v in obj.items() if k not in RUN_KEYS}


def compare(a: Path, b: Path) -> int:
    """Print whether the plans of `a` and `b` are identical; 1 if one differs."""
    bad = 0
    for ja in sorted(a.glob("*.json")):
        jb = b / ja.name
        if not jb.exists() or not ja.stat().st_size or not jb.stat().st_size:
            continue
        fa, fb = plan_figures(ja), plan_figures(jb)
        diff = sorted(k for k in fa.keys() | fb.keys() if fa.get(k) != fb.get(k))
        ca, cb = ja.with_suffix(".csv"), jb.with_suffix(".csv")
        same_csv = ca.exists() and cb.exists() and ca.read_bytes() == cb.read_bytes()
        ok = not diff and same_csv
        bad += not ok
        print(f"{ja.stem:20s} json {'same' if not diff else diff}  per-rank {same_csv}")
    return 1 if bad else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("graph", nargs="?")
    ap.add_argument("--ranks", default="64,8192")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--only", default=",".join(PLANS))
    ap.add_argument("--partition-file", action="append", default=[], help="P=FILE")
    ap.add_argument("--max-memory", default=None)
    ap.add_argument("--extra", default="", help="more simulate options, one string")
    ap.add_argument("--compare", nargs=2, type=Path)
    args = ap.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    args.out.mkdir(parents=True, exist_ok=True)
    parts = dict(p.split("=", 1) for p in args.partition_file)
    extra = args.extra.split() + (["--max-memory", args.max_memory] if args.max_memory else [])
    for ranks in (int(r) for r in args.ranks.split(",")):
        for name in args.only.split(","):
            part = parts.get(str(ranks))
            if not runnable(name, part):
                continue
            row = measure(args.graph, name, ranks, args.out, part, extra)
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
