#!/usr/bin/env python
"""The example figures under docs/figures/: one of each `gcntrain plot` kind, drawn from the
small inputs committed beside them.

  breakdown.png  breakdown.json: `gcntrain plot breakdown cora.h5 -P 16 --machine fugaku`
  scaling.png    scaling.json: `gcntrain plot scaling cora.h5 --ranks 4,16,64 --machine fugaku`
  measured.png   measured.json: `gcntrain plot measured runs/* --machine local`
  runs.png       runs/*/ (config.json, metrics.jsonl): `gcntrain plot runs/*`

(the JSON files are those commands' ``--json`` output).  Each PNG records in its
``Source`` text field the SHA-256 of the inputs it was drawn from (`digest`), so that
tests/test_plot.py can check that a committed figure belongs to the committed inputs and
that rendering them again gives the same figure (structure, size and source; pixels differ
between matplotlib versions).

Usage:
  python scripts/docs_figures.py render [OUT_DIR]    # redraw (default: docs/figures)
  python scripts/docs_figures.py inputs CORA.h5      # measure and plan the inputs again
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FIGURES = Path(__file__).resolve().parents[1] / "docs" / "figures"

#: the kinds, in order
KINDS = ("breakdown", "scaling", "measured", "runs")

#: the runs of runs.png and measured.png: (directory, ranks, scheme); 1d on 1 and 2 ranks
#: (a strong-scaling pair) and p2p, whose curves coincide with 1d's
RUNS = (("1d-np1", 1, "1d"), ("1d-np2", 2, "1d"), ("p2p-np2", 2, "p2p"))

#: the epoch record keys runs.png reads (the per-phase "comm" tallies are dropped: size)
KEEP = ("epoch", "loss", "train_acc", "val_loss", "val_acc", "test_acc", "seconds")
KEEP_OLD = ("t_aggregation", "t_dense", "t_other", "epoch_breakdown")


def input_files(kind: str, inputs: Path = FIGURES) -> list[Path]:
    """The committed input files of `kind`, sorted."""
    if kind == "runs":
        return sorted(p for d, _, _ in RUNS for p in (inputs / "runs" / d).iterdir())
    return [inputs / f"{kind}.json"]


def digest(kind: str, inputs: Path = FIGURES) -> str:
    """SHA-256 of the inputs of `kind` (their paths below `inputs` and their bytes)."""
    h = hashlib.sha256()
    for p in input_files(kind, inputs):
        h.update(p.relative_to(inputs).as_posix().encode() + b"\0")
        h.update(p.read_bytes() + b"\0")
    return h.hexdigest()


def figure(kind: str, inputs: Path = FIGURES):
    """The matplotlib Figure of `kind`, drawn from the inputs under `inputs`."""
    from gcntrain.cli import plot_sim
    from gcntrain.cli.plot_runs import load_run, run_figure

    if kind == "runs":
        return run_figure([load_run(inputs / "runs" / d) for d, _, _ in RUNS])
    data = json.loads((inputs / f"{kind}.json").read_text())
    return getattr(plot_sim, f"{kind}_figure")(data)


def render(out: Path = FIGURES, inputs: Path = FIGURES) -> dict:
    """Draw every kind from `inputs` into `out`/KIND.png; {kind: Figure}."""
    from gcntrain.cli.plot_style import save

    figs = {}
    out.mkdir(parents=True, exist_ok=True)
    for kind in KINDS:
        figs[kind] = fig = figure(kind, inputs)
        source = f"sha256:{digest(kind, inputs)}"
        save(fig, str(out / f"{kind}.png"), metadata={"Source": source})
    return figs


def _gcntrain(args: list[str], cwd: Path, ranks: int = 1) -> str:
    exe = [sys.executable, "-m", "gcntrain.cli.main"]
    cmd = exe + args if ranks == 1 else ["mpiexec", "-n", str(ranks), *exe, *args]
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if res.returncode:
        raise SystemExit(f"{' '.join(cmd)}\n{res.stderr[-2000:]}")
    return res.stdout


def make_inputs(cora: Path, inputs: Path = FIGURES, epochs: int = 30) -> None:
    """Train the runs and plan the predictions again (cora.h5 from `gcntrain convert`)."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "cora.h5").symlink_to(cora.resolve())
        os.environ.setdefault("NUMBA_NUM_THREADS", "1")
        for d, ranks, scheme in RUNS:
            args = ["train", "cora.h5", "--scheme", scheme, "--epochs", str(epochs)]
            _gcntrain([*args, "--quiet", "-o", d], work, ranks)
        plots = {
            "breakdown": ["breakdown", "cora.h5", "-P", "16", "--machine", "fugaku"],
            "scaling": ["scaling", "cora.h5", "--ranks", "4,16,64", "--machine", "fugaku"],
            "measured": ["measured", *(d for d, _, _ in RUNS), "--machine", "local"],
        }
        for kind, args in plots.items():
            data = json.loads(_gcntrain(["plot", *args, "--json"], work))
            (inputs / f"{kind}.json").write_text(json.dumps(data, indent=1) + "\n")
        for d, _, _ in RUNS:
            dest = inputs / "runs" / d
            shutil.rmtree(dest, ignore_errors=True)
            dest.mkdir(parents=True)
            shutil.copy(work / d / "config.json", dest / "config.json")
            lines = (work / d / "metrics.jsonl").read_text().splitlines()
            recs = [json.loads(x) for x in lines if x]
            kept = [{k: r[k] for k in (*KEEP, *KEEP_OLD) if k in r} for r in recs]
            (dest / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    r = sub.add_parser("render", help="redraw the PNGs from the committed inputs")
    r.add_argument("out", nargs="?", type=Path, default=FIGURES)
    i = sub.add_parser("inputs", help="train and plan the inputs again, then redraw")
    i.add_argument("cora", type=Path)
    args = ap.parse_args(argv)
    if args.what == "inputs":
        make_inputs(args.cora)
        render()
    else:
        render(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
