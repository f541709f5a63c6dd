"""The per-piece serial epoch of `bench_epoch.py --breakdown` (its module docstring says
what it prints): the child that times every piece of each epoch inside ``fit``, the runs
(one after another, or a round's variants in lock-step), the summary.  Also the memory
child both benches use (`MEMORY_SNIPPET`)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_simulate import machine_state  # noqa: E402

HERE = Path(__file__).resolve().parent


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


#: run in a child: peak traced memory of the epochs against the arrays held between epochs
MEMORY_SNIPPET = """
import json, sys, tracemalloc
tracemalloc.start()
from gcntrain.api import load_graph, train
held, peaks = [], []
def on_epoch(rec):
    cur, peak = tracemalloc.get_traced_memory()
    held.append(cur)
    peaks.append(peak)
    tracemalloc.reset_peak()
g = load_graph(sys.argv[1])
opts = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
train(g, epochs=4, threads=int(sys.argv[2]), early_stopping=0, callback=on_epoch, **opts)
print(json.dumps({"held": held[0], "peak": max(peaks[1:])}))
"""


#: run in a child (``python -c``, the checkout under test first on PYTHONPATH): one serial
#: training run of argv[1] on argv[2] threads for argv[3] epochs with the options of the JSON
#: argv[4], every piece of each epoch timed; prints one JSON line: per epoch the seconds, the
#: minor page faults and {piece: seconds}
BREAKDOWN_CHILD = r"""
import json, resource, sys
from time import perf_counter
import gcntrain.model.network as network
import gcntrain.model.trainer as trainer
from gcntrain.model import compute, optim, wrappers

acc = {}

def add(piece, dt):
    acc[piece] = acc.get(piece, 0.0) + dt

def piece_of(name, ph):
    lay, tr = ph.layer, ph.training
    if name in ("aggregate", "aggregate_t"):
        return f"SpMM L{lay} " + (ph.direction if tr else "eval")
    if name == "matmul":
        return (f"X @ W0 " + ("train" if tr else "eval")) if lay == 0 else "small GEMMs"
    if name == "matmul_grads":
        return "dW0 = Xd^T dZ" if lay == 0 else "small GEMMs"
    if name == "dropout":
        return "dropout X" if lay == 0 else "dropout H"
    if name == "dropout_backward":
        return "dropout bwd"
    if name == "xent":
        return "loss " + ("train" if tr else "eval")
    return "other Ops calls"

inner = wrappers.TimedOps._call

def timed_call(self, name, fn, args, kwargs):
    t = perf_counter()
    out = inner(self, name, fn, args, kwargs)
    add(piece_of(name, kwargs["phase"]), perf_counter() - t)
    return out

wrappers.TimedOps._call = timed_call

def timer(fn, piece):
    def run(*a, **k):
        t = perf_counter()
        out = fn(*a, **k)
        add(piece, perf_counter() - t)
        return out
    return run

for mod, attr, piece in (
    (network, "relu", "ReLU"),
    (network, "relu_inplace", "ReLU"),
    (trainer, "weight_decay_value", "weight decay"),
    (trainer, "add_weight_decay_grads", "weight decay"),
):
    if hasattr(mod, attr):
        setattr(mod, attr, timer(getattr(mod, attr), piece))
for cls, attr, piece in (
    (compute.HostCompute, "relu", "ReLU"),
    (compute.HostCompute, "relu_backward", "ReLU bwd"),
):
    if attr in vars(cls):
        setattr(cls, attr, staticmethod(timer(getattr(cls, attr), piece)))
optim.Adam.step = timer(optim.Adam.step, "Adam")

from gcntrain.api import train

epochs, mark = [], [resource.getrusage(resource.RUSAGE_SELF).ru_minflt]

import os
turn = os.environ.get("BENCH_LOCKSTEP")  # "r,w": wait for the parent's go between epochs
turn = tuple(int(x) for x in turn.split(",")) if turn else None

def on_epoch(rec):
    flt = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    epochs.append({"seconds": rec["seconds"], "faults": flt - mark[0], "pieces": dict(acc)})
    mark[0] = flt
    acc.clear()
    if turn:  # outside the epoch's clock: fit reads it after the callback
        os.write(turn[1], b"d")
        os.read(turn[0], 1)

opts = json.loads(sys.argv[4])
train(sys.argv[1], threads=int(sys.argv[2]), epochs=int(sys.argv[3]), early_stopping=0,
      callback=on_epoch, **opts)
print(json.dumps(epochs))
"""

#: epochs of a breakdown run, and the first ones left out of its medians (compilation,
#: first touches, the evaluation cache's setup)
BREAKDOWN_EPOCHS, BREAKDOWN_SKIP = 12, 2


def breakdown_run(
    code: str, h5: str, threads: int, options: dict, epochs: int = BREAKDOWN_EPOCHS
) -> dict:
    """One breakdown run of the gcntrain package in `code` (a checkout's root): the median
    over its epochs (after `BREAKDOWN_SKIP`) of the epoch, of each piece and of the page
    faults ("rest" is the epoch less its timed pieces), and its best (shortest) epoch: on a
    machine others load, the epoch the least disturbed."""
    env = {**os.environ, "PYTHONPATH": code}
    cmd = [sys.executable, "-c", BREAKDOWN_CHILD, h5, str(threads), str(epochs)]
    for attempt in (1, 2):  # a run others' jobs starve of memory is tried once more
        res = subprocess.run(
            [*cmd, json.dumps(options)],
            capture_output=True,
            text=True,
            env=env,
            cwd=tempfile.gettempdir(),
        )
        if res.returncode == 0:
            break
        print(f"    (run failed, attempt {attempt}: {res.stderr.strip().splitlines()[-1:]})")
    else:
        return None
    return _summary(json.loads(res.stdout.strip().splitlines()[-1]))


def _summary(eps: list[dict]) -> dict:
    """A run's medians, best epoch and per-epoch seconds (after `BREAKDOWN_SKIP`)."""
    eps = eps[BREAKDOWN_SKIP:]
    names = sorted({k for e in eps for k in e["pieces"]})
    got = {k: med([e["pieces"].get(k, 0.0) for e in eps]) for k in names}
    got["rest"] = med([e["seconds"] - sum(e["pieces"].values()) for e in eps])
    return {
        "epoch": med([e["seconds"] for e in eps]),
        "best": min(e["seconds"] for e in eps),
        "faults": med([e["faults"] for e in eps]),
        "pieces": got,
        "epochs": [e["seconds"] for e in eps],
    }


def lockstep_round(runs: dict, keys: list, h5: str, threads: int, epochs: int) -> dict:
    """One run of every variant at once, their epochs taken in turn: each child waits in
    its epoch callback (outside the epoch's clock) until the parent lets it run its next
    epoch, so the variants' epochs alternate within a second of each other and a change of
    the machine's load falls on all of them alike.  The first epoch runs concurrently (left
    out with the second, `BREAKDOWN_SKIP`); 50 ms pass before each turn (Numba's OpenMP
    threads of the child before stop spinning).  {label: summary}, a variant that failed
    left out."""
    procs = {}
    for k in keys:
        code, opts = runs[k]
        r_child, w_parent = os.pipe()
        r_parent, w_child = os.pipe()
        env = {**os.environ, "PYTHONPATH": code, "BENCH_LOCKSTEP": f"{r_child},{w_child}"}
        cmd = [sys.executable, "-c", BREAKDOWN_CHILD, h5, str(threads), str(epochs)]
        proc = subprocess.Popen(
            [*cmd, json.dumps(opts)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=tempfile.gettempdir(),
            pass_fds=(r_child, w_child),
        )
        os.close(r_child)
        os.close(w_child)
        procs[k] = (proc, w_parent, r_parent)
    alive = [k for k in keys if os.read(procs[k][2], 1) == b"d"]  # the concurrent epoch
    for e in range(1, epochs):
        for k in alive[e % len(alive) :] + alive[: e % len(alive)] if alive else []:
            time.sleep(0.05)
            os.write(procs[k][1], b"g")
            if os.read(procs[k][2], 1) != b"d":
                alive.remove(k)
    got = {}
    for k, (proc, w, r) in procs.items():
        try:
            os.write(w, b"g")
        except OSError:
            pass
        out, err = proc.communicate()
        os.close(w)
        os.close(r)
        if proc.returncode != 0 or k not in alive:
            print(f"    ({k} failed: {err.strip().splitlines()[-1:]})")
            continue
        got[k] = _summary(json.loads(out.strip().splitlines()[-1]))
    return got


def parse_variant(text: str) -> tuple[str, dict]:
    """``LABEL:KEY=VALUE,...`` -> (label, {key: value}) (true/false/numbers parsed)."""
    label, _, rest = text.partition(":")
    opts = {}
    for item in filter(None, rest.split(",")):
        k, _, v = item.partition("=")
        low = v.lower()
        opts[k] = True if low == "true" else False if low == "false" else _number(v)
    return label, opts


def _number(v: str):
    for cast in (int, float):
        try:
            return cast(v)
        except ValueError:
            pass
    return v


def bench_breakdown(h5: str, a) -> None:
    here = a.tree or str(HERE.parent)
    runs = {"this tree": (here, {})}
    if a.baseline:
        runs = {"baseline": (a.baseline, {}), **runs}
    for text in a.variant:
        label, opts = parse_variant(text)
        runs[label] = (here, opts)
    for code, opts in {c: o for c, o in runs.values()}.items():  # compile each tree once
        subprocess.run(
            [sys.executable, "-c", BREAKDOWN_CHILD, h5, "1", "1", json.dumps(opts)],
            env={**os.environ, "PYTHONPATH": code},
            cwd=tempfile.gettempdir(),
            capture_output=True,
            check=True,
        )
    got: dict[str, list[dict]] = {k: [] for k in runs}
    keys = list(runs)
    for r in range(a.rounds):
        print(f"  round {r + 1}: {machine_state()}", flush=True)
        if a.lockstep:
            step = lockstep_round(runs, keys, h5, a.threads, a.breakdown_epochs)
        for k in keys[r % len(keys) :] + keys[: r % len(keys)]:
            if a.lockstep:
                g = step.get(k)
            else:
                code, opts = runs[k]
                g = breakdown_run(code, h5, a.threads, opts, a.breakdown_epochs)
            if g is None:
                continue
            got[k].append({**g, "round": r})
            if a.breakdown_log:
                with open(a.breakdown_log, "a") as f:
                    f.write(json.dumps({"label": k, "load": os.getloadavg()[0], **got[k][-1]}))
                    f.write("\n")
            print(
                f"    {k:<12} epoch {g['epoch'] * 1e3:7.1f} ms (best {g['best'] * 1e3:.1f}), "
                f"{g['faults']:.0f} faults",
                flush=True,
            )
    print(f"after the rounds: {machine_state()}")
    pieces = sorted({p for v in got.values() for g in v for p in g["pieces"]})
    print(f"per-piece median over {a.rounds} rounds (ms), {a.threads} threads, 200k/4M graph")
    print("  " + f"{'piece':<18}" + "".join(f"{k:>14}" for k in keys))
    for p in pieces:
        row = [med([g["pieces"].get(p, 0.0) for g in got[k]]) * 1e3 for k in keys]
        print("  " + f"{p:<18}" + "".join(f"{v:14.1f}" for v in row))
    rows = (("epoch (ms)", "epoch", 1e3), ("best epoch (ms)", "best", 1e3))
    for what, field, scale in (*rows, ("page faults", "faults", 1)):
        row = [med([g[field] for g in got[k]]) * scale for k in keys]
        print("  " + f"{what:<18}" + "".join(f"{v:14.1f}" for v in row))
    for k in keys:  # the arrays held between epochs and the epoch's peak (tracemalloc)
        code, opts = runs[k]
        res = subprocess.run(
            [sys.executable, "-c", MEMORY_SNIPPET, h5, str(a.threads), json.dumps(opts)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": code},
            cwd=tempfile.gettempdir(),
        )
        if res.returncode != 0:
            print(f"  {k}: memory run failed: {res.stderr.strip().splitlines()[-1:]}")
            continue
        d = json.loads(res.stdout.strip().splitlines()[-1])
        print(
            f"  {k}: arrays held between epochs {d['held'] / 2**20:.1f} MiB, "
            f"peak during an epoch {d['peak'] / 2**20:.1f} MiB"
        )
    if a.baseline and a.lockstep:  # epoch by epoch: each pair ran within a second
        base = {g["round"]: g["epochs"] for g in got["baseline"]}
        for k in keys[1:]:
            rs = [
                med([x / y for x, y in zip(g["epochs"], base[g["round"]])])
                for g in got[k]
                if g["round"] in base
            ]
            print(
                f"  {k} / baseline, the median of each round's epoch pairs: "
                + ", ".join(f"{x:.3f}" for x in rs)
                + f" (median {med(rs):.3f}, spread {min(rs):.3f}-{max(rs):.3f})"
            )
    if a.baseline:
        for field in ("epoch", "best"):
            base = {g["round"]: g[field] for g in got["baseline"]}
            for k in keys[1:]:
                rs = [g[field] / base[g["round"]] for g in got[k] if g["round"] in base]
                print(
                    f"  {k} / baseline ({'median' if field == 'epoch' else 'best'} epochs), "
                    "round by round: "
                    + ", ".join(f"{x:.3f}" for x in rs)
                    + f" (median {med(rs):.3f}, spread {min(rs):.3f}-{max(rs):.3f})"
                )
