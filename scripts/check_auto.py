"""Does ``--scheme auto`` pick a configuration as fast as the best of the usual ones?

Converts SNAP soc-Slashdot0902 (as the README's quick start does), partitions it with METIS
for the ranks, then in interleaved rounds (every configuration once per round, so a slow
spell of the machine falls on all of them) trains it on `--ranks` ranks with ``--scheme
auto`` (its choice priced on ``--machine``, default ``local``: this machine, calibrated once
and cached) and with 1d, p2p and hier on the METIS partition, `--epochs` epochs each; the
median over the rounds of each run's median epoch (``train --json`` ``epoch_seconds``) is
compared.  Prints the machine's load and memory bandwidth before and after, the
configuration auto chose and its predicted epoch, and every measured median; exits 1 when
auto's measured epoch is more than `--within` (15 %) above the best of the others.

    python scripts/check_auto.py [--ranks 4] [--epochs 20] [--rounds 3] [--shared ../shared]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_simulate import gcntrain, machine_state, mpiexec, slashdot  # noqa: E402

from gcntrain.simulate.launch import training_json  # noqa: E402


def train(graph: str, ranks: int, epochs: int, opts: list[str]) -> dict:
    """``train --json`` of `graph` on `ranks` ranks (the bench's runner: one error line)."""
    cmd = [mpiexec(), "-n", str(ranks), *gcntrain(), "train", graph, *opts]
    try:
        return training_json([*cmd, "--epochs", str(epochs)])
    except RuntimeError as e:
        raise SystemExit(str(e)) from None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--within", type=float, default=0.15)
    ap.add_argument("--machine", default="local")
    ap.add_argument("--shared", default=str(Path(__file__).resolve().parents[2] / "shared"))
    args = ap.parse_args()
    print(f"before: {machine_state()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        graph = slashdot(args.shared, tmp)
        part = str(Path(tmp) / f"slashdot-m{args.ranks}.h5")
        subprocess.run(
            [*gcntrain(), "partition", graph, "--method", "metis", "--parts", str(args.ranks)]
            + ["-o", part],
            check=True,
            capture_output=True,
        )
        configs = {
            "auto": ["--scheme", "auto", "--machine", args.machine],
            "1d": ["--scheme", "1d"],
            "p2p metis": ["--scheme", "p2p", "--partition", part],
            "hier metis": ["--scheme", "hier", "--partition", part],
        }
        times: dict[str, list[float]] = {k: [] for k in configs}
        chosen = None
        for _ in range(args.rounds):
            for label, opts in configs.items():
                d = train(graph, args.ranks, args.epochs, opts)
                times[label].append(float(d["epoch_seconds"]))
                if label == "auto":
                    chosen = d.get("recommendation", {})
    med = {k: statistics.median(v) for k, v in times.items()}
    pred = chosen.get("predicted_epoch_seconds", 0.0) * 1e3
    print(
        f"auto chose {chosen.get('label')} (predicted {pred:.1f} ms on "
        f"{chosen.get('machine')}, {chosen.get('configurations')} configurations)"
    )
    for k, v in med.items():
        runs = ", ".join(f"{t * 1e3:.1f}" for t in times[k])
        print(f"{k:<12}{v * 1e3:>9.1f} ms   (runs {runs})")
    best = min(v for k, v in med.items() if k != "auto")
    gap = med["auto"] / best - 1.0
    ok = gap <= args.within
    print(
        f"auto against the best of the others: {gap:+.1%} ({'within' if ok else 'beyond'} "
        f"{args.within:.0%})"
    )
    print(f"after: {machine_state()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
