"""Re-price a folder of measured runs (../shared/measurements/node16-rmat18: a 16-core node,
`gcntrain bench` output, its profile and every run's `train --json`) with today's time model,
from that folder's bench output alone.

The folder's bench is older than the node model (`gcntrain.simulate.node`): it measured no
thread scaling, only ``busy_compute_factor``, the critical rank's compute in 1d runs with one
rank per core on R-MAT 12 and 14 over the model's for them.  Those runs compute for 2-9 ms,
much of it the per-call cost and waiting, which the ratio counts as compute.  Both are the
same at the two sizes (the same calls, the same synchronisations), so the *difference*
between the two graphs' measured and modelled compute isolates how much slower compute runs
with every core busy: ``f = (m14 - m12) / (p14 - p12)``.  The node's scaling is then the
one an older profile's factor stands for (`gcntrain.simulate.node.from_busy_factor`) with f
in place of the printed factor; every other figure is the folder's profile as written (its
``memory_bandwidth_gbs``, a one-thread triad, stays the node's bandwidth, as the older model
read it).

For every run of ``measured.json`` (but the one-thread serial run, which no placement of the
model describes) the graph is generated as the folder's README says and the configuration is
planned and priced with ``gcntrain simulate --nodes 1``; prints measured, predicted and the
error, then the ranking check: the configuration predicted fastest must have measured within
10 % of the measured fastest.  Exits 1 when a configuration is beyond ``--tolerance`` (25 %)
or the ranking check fails.

    python scripts/reprice_measurements.py [../shared/measurements/node16-rmat18]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from gcntrain.simulate.calibrate import gcntrain_cmd
from gcntrain.simulate.node import KINDS, from_busy_factor

HERE = Path(__file__).resolve().parent
DEFAULT = HERE.parents[1] / "shared" / "measurements" / "node16-rmat18"
#: the busy-node line of an older bench's output
BUSY = re.compile(
    r"busy node\s+(\d+) ranks.*?R-MAT (\d+) ([\d.]+) ms measured, ([\d.]+) ms modelled, "
    r"R-MAT (\d+) ([\d.]+) ms measured, ([\d.]+) ms modelled: x([\d.]+)"
)


def marginal_factor(bench_output: str) -> tuple[float, float, str]:
    """(marginal factor, printed factor, the line) of the bench output's busy-node fit."""
    m = BUSY.search(bench_output)
    if m is None:
        raise SystemExit("no busy-node line in the bench output")
    m12, p12, m14, p14 = (float(m.group(i)) for i in (3, 4, 6, 7))
    return (m14 - m12) / (p14 - p12), float(m.group(8)), m.group(0)


def repriced_profile(profile: str, cores: int, factor: float) -> str:
    """The folder's profile with its busy factor replaced by measured-style scaling tables
    built from the marginal factor."""
    s = from_busy_factor(cores, factor).as_table()
    table = "{ " + ", ".join(f"{t} = {v:.4f}" for t, v in s.items()) + " }"
    text = re.sub(r"(?m)^busy_compute_factor = .*\n", "", profile)
    text = text.replace('name = "local"', 'name = "node16-repriced"')
    lines = [f"{kind} = {table}" for kind in KINDS]
    return (
        text.rstrip()
        + "\n\n[compute.threads]\n# from the busy-node runs' marginal factor "
        + f"{factor:.3f} (scripts/reprice_measurements.py)\n"
        + "\n".join(lines)
        + "\n\n[compute.node]\n"
        + "\n".join(lines)
        + "\n"
    )


def graph_command(folder: Path) -> list[str]:
    """The `gcntrain generate` arguments the folder's README names (or, where it repeats
    another folder's run, "The same prepared run as ../OTHER", that folder's README's)."""
    readme = (folder / "README.md").read_text()
    m = re.search(r"gcntrain generate (rmat -o \S+ [^\n]+)", readme)
    if m is None:
        same = re.search(r"same prepared run as (\.\./[\w.-]+)", readme)
        if same is None:
            raise SystemExit(f"no `gcntrain generate` line in {folder / 'README.md'}")
        return graph_command((folder / same.group(1)).resolve())
    return m.group(1).split()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", default=str(DEFAULT))
    ap.add_argument("--tolerance", type=float, default=0.25)
    ap.add_argument("--ranking", type=float, default=0.10)
    args = ap.parse_args()
    folder = Path(args.folder)
    bench = (folder / "bench-output.txt").read_text()
    profile = (folder / "profile.toml").read_text()
    runs = json.loads((folder / "measured.json").read_text())
    cores = int(re.search(r"(?m)^cores = (\d+)", profile).group(1))
    measured_scaling = "[compute.node]" in profile
    if measured_scaling:
        print("profile: today's bench (measured thread and node scaling), used as written")
    else:
        factor, printed, line = marginal_factor(bench)
        print(f"bench output: {line}")
        print(
            f"marginal factor (R-MAT 14 - R-MAT 12, measured over modelled): {factor:.3f} "
            f"(the bench printed the ratio x{printed:.3f})"
        )
        table = from_busy_factor(cores, factor).as_table()
        print(
            "node scaling derived from it: "
            + ", ".join(f"x{v:.2f} at {t}" for t, v in table.items() if t in (1, 4, 8, 16))
        )
    with tempfile.TemporaryDirectory() as tmp:
        prof = Path(tmp) / "repriced.toml"
        if measured_scaling:
            prof.write_text(profile)
        else:
            prof.write_text(repriced_profile(profile, cores, factor))
        gen = graph_command(folder)
        graph = str(Path(tmp) / "graph.h5")
        gen[gen.index("-o") + 1] = graph
        subprocess.run([*gcntrain_cmd(), "generate", *gen], check=True, capture_output=True)
        head = f"{'np':>3}  {'configuration':<22}{'measured ms':>12}{'predicted ms':>14}"
        print(head + f"{'error':>8}  predicted breakdown (critical rank)")
        rows, worst, mismatched = [], 0.0, 0
        for r in runs:
            opts = r["train_options"].split()
            if "--threads" in opts:
                continue
            opts = as_measured(opts, graph, r["np"], tmp)
            cmd = [*gcntrain_cmd(), "simulate", graph, "-P", str(r["np"]), *opts]
            cmd += ["--epochs", "10", "--machine", str(prof), "--nodes", "1", "--json"]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True)
            p = json.loads(out.stdout)
            if "bytes_sent_max" in r and p["bytes_sent_max"] != r["bytes_sent_max"]:
                print(
                    f"  np {r['np']} {r['configuration']}: planned {p['bytes_sent_max']} bytes "
                    f"sent at most, the run measured {r['bytes_sent_max']}: not the measured "
                    "configuration",
                    flush=True,
                )
                mismatched += 1
            pred = p["epoch_seconds"] * 1e3
            err = pred / r["epoch_ms"] - 1.0
            worst = max(worst, abs(err))
            b = p["breakdown"]
            print(
                f"{r['np']:>3}  {r['configuration']:<22}{r['epoch_ms']:>12.1f}{pred:>14.1f}"
                f"{err:>+8.1%}  compute {b['compute'] * 1e3:.1f}, comm {b['comm'] * 1e3:.1f}, "
                f"wait {b['wait'] * 1e3:.1f} ms",
                flush=True,
            )
            rows.append((r, pred))
    fastest = min(rows, key=lambda x: x[0]["epoch_ms"])[0]
    picked = min(rows, key=lambda x: x[1])[0]
    gap = picked["epoch_ms"] / fastest["epoch_ms"] - 1.0
    ok_rank = gap <= args.ranking
    print(
        f"predicted fastest: np {picked['np']} {picked['configuration']} (measured "
        f"{picked['epoch_ms']:.1f} ms); measured fastest: np {fastest['np']} "
        f"{fastest['configuration']} ({fastest['epoch_ms']:.1f} ms): {gap:+.1%} "
        f"({'within' if ok_rank else 'beyond'} {args.ranking:.0%})"
    )
    ok = worst <= args.tolerance
    print(f"worst error {worst:.1%} ({'within' if ok else 'beyond'} {args.tolerance:.0%})")
    if mismatched:
        print(f"{mismatched} configurations planned other bytes than their runs measured")
    return 0 if ok and ok_rank and not mismatched else 1


#: defaults that changed after the folders' runs: METIS's vertex weights were "degree"
#: until 2026-12-07 (issue 49 part 3: "rows+degree" since); train has no option for them,
#: so such a run's partition is made by `gcntrain partition --vweights degree` and planned
#: from its file
OLD_METIS_VWEIGHTS = "degree"


def as_measured(opts: list[str], graph: str, ranks: int, tmp: str) -> list[str]:
    """`opts` with the defaults of the runs' day in place (`OLD_METIS_VWEIGHTS`), so that
    the plan is of the configuration the run measured (its bytes are checked against the
    run's)."""
    out = list(opts)
    for i, (a, b) in enumerate(zip(out, out[1:])):
        if a == "--partition" and b == "metis":
            part = str(Path(tmp) / f"metis-{ranks}.h5")
            if not Path(part).exists():
                cmd = [*gcntrain_cmd(), "partition", graph, "-m", "metis", "-p", str(ranks)]
                cmd += ["--vweights", OLD_METIS_VWEIGHTS, "-o", part]
                subprocess.run(cmd, check=True, capture_output=True)
            out[i + 1] = part
    return out


if __name__ == "__main__":
    sys.exit(main())
