"""The GPU check's correctness worker (issue 37, "Tests: On a GPU"): each scheme case trained
on the CPU, then on the device, compared within the issue's tolerances.

Run by `scripts/gpu_check.py` as ``[mpiexec -n P] python scripts/gpu_check_schemes.py SPEC``,
SPEC a JSON object ``{"mode": "gpu"|"emulated", "dtypes": [...], "cases": [[scheme,
options, partition], ...], "epochs": E}``.  The graph, configuration and CPU run are those of
``tests/test_device_schemes.py``'s worker (``tests/mpi/worker.py``); the device run is
``train_with(..., backend=)`` with CuPy on GPU 0 (``mode`` gpu) or the strict host emulation
(``emulated``, the dry run).  Unlike that test (bit for bit on the emulation), a GPU sums in
other orders, so the comparison takes tolerances: float64 1e-10 and float32 1e-4, relative to
each weight's largest magnitude and to each loss; predictions are compared row by row (a
float32 near-tie may flip, and is reported).  Measured bytes must equal the plan and the CPU
run's tally on every rank.  Rank 0 prints one JSON line ``{"ok", "ranks", "results": [...]}``
after each case (cumulative: the last line is the whole run).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "mpi"))
sys.path.insert(0, str(ROOT))

#: relative tolerance per training dtype (the issue's)
TOL = {"float64": 1e-10, "float32": 1e-4}
#: the per-epoch figures compared (losses relatively, accuracies as fractions of rows)
LOSSES = ("loss", "val_loss")
ACCURACIES = ("train_acc", "val_acc", "test_acc")


def make_backend(mode: str, rank: int, size: int):
    """The device backend of `mode`: CuPy on this rank's GPU (ranks of one node), or the
    strict emulation."""
    if mode == "emulated":
        from gcntrain.device.emulated import EmulatedBackend

        return EmulatedBackend(strict=True)
    from gcntrain.device import choice
    from gcntrain.device.backend import select_backend
    from gcntrain.device.detect import probe

    found = probe()
    if not found.usable:
        raise RuntimeError(f"no usable GPU: {found.error}")
    gpu = choice.gpu_for_rank(choice.local_rank(rank, size), size, found.devices)
    return select_backend("gpu", gpu)


def rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.size == 0:
        return 0.0
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-30))


def compare(cpu, dev, tol: float) -> tuple[dict, list[str]]:
    """(figures, problems) of the device run `dev` against the CPU run `cpu`."""
    problems = []
    w = 0.0
    for a, b in zip(cpu.result.weights, dev.result.weights):
        for k in a:
            if type(b[k]) is not np.ndarray:
                problems.append(f"weight {k} is a {type(b[k]).__name__}, not a host array")
                continue
            w = max(w, rel(b[k], a[k]))
    hc, hd = cpu.result.history, dev.result.history
    loss = max(
        (rel(getattr(d, k), getattr(c, k)) for c, d in zip(hc, hd) for k in LOSSES), default=0
    )
    acc = max(
        (abs(getattr(d, k) - getattr(c, k)) for c, d in zip(hc, hd) for k in ACCURACIES),
        default=0.0,
    )
    pc, pd = np.asarray(cpu.result.predictions), np.asarray(dev.result.predictions)
    flips = int((pc != pd).sum()) if pc.shape == pd.shape else -1
    if len(hc) != len(hd):
        problems.append(f"{len(hd)} epochs on the device, {len(hc)} on the CPU")
    if w > tol:
        problems.append(f"weights differ by {w:.2e} relative (tolerance {tol:g})")
    if loss > tol:
        problems.append(f"losses differ by {loss:.2e} relative (tolerance {tol:g})")
    if flips:
        problems.append(f"predictions differ at {flips} of {pc.size} rows")
    return {"weights_rel": w, "loss_rel": loss, "acc_abs": acc, "prediction_flips": flips}, problems


def run_case(world, W, g, cfg, scheme, opts, part, mode):
    """One case: the CPU run, the device run, their comparison and the byte counts."""
    from gcntrain.job.runner import train_with
    from gcntrain.job.spec import JobSpec

    t0 = time.perf_counter()
    cpu = W.run_scheme(world, g, scheme, opts, part, cfg)
    t1 = time.perf_counter()
    world.tally = W.Tally()
    backend = make_backend(mode, world.rank, world.size)
    dev = train_with(world, JobSpec(W.source_of(g), cfg, scheme, opts, part), backend=backend)
    t2 = time.perf_counter()
    figures, problems = compare(cpu, dev, TOL[cfg.dtype])
    if not type(dev.ops).__name__.endswith("DeviceOps") and scheme != "serial":
        problems.append(f"{type(dev.ops).__name__} is not a device Ops")
    problems += W.plan_diffs(dev, g, cfg, scheme, opts, part, world.rank)
    m_dev, m_cpu = dev.phases().phases, cpu.phases().phases
    if sorted(m_dev) != sorted(m_cpu) or any(not np.array_equal(m_dev[k], m_cpu[k]) for k in m_dev):
        problems.append("device tally differs from the CPU tally")
    figures.update(cpu_s=round(t1 - t0, 3), device_s=round(t2 - t1, 3))
    return figures, problems


def main(spec: dict) -> None:
    from dataclasses import replace

    import worker as W  # tests/mpi/worker.py

    from gcntrain.comm.communicator import Comm
    from gcntrain.comm.mpi import load_mpi
    from gcntrain.model.trainer import TrainConfig

    world = Comm(load_mpi().COMM_WORLD)
    g = W.rmat_odd(8, keep=251, edge_factor=6, seed=5, num_features=20, num_classes=4)
    results, bad = [], 0
    for dtype in spec["dtypes"]:
        cfg = TrainConfig(
            epochs=spec.get("epochs", 4), seed=3, hidden=[16], early_stopping=0, dtype=dtype
        )
        for scheme, opts, part in spec["cases"]:
            delayed = str(opts.get("delay", "0")) not in ("0", "none")
            run_cfg = replace(cfg, epochs=max(cfg.epochs, 6)) if delayed else cfg
            try:
                figures, problems = run_case(world, W, g, run_cfg, scheme, opts, part, spec["mode"])
            except Exception as e:  # one case's failure is reported, the others still run
                figures, problems = {}, [f"raised {type(e).__name__}: {e}"[:400]]
            flags = world.allreduce(np.array([len(problems)], np.int64), "test", op="max")
            bad += int(flags[0] > 0)
            results.append(
                {
                    "scheme": scheme,
                    "options": opts,
                    "dtype": dtype,
                    "ok": int(flags[0]) == 0,
                    **figures,
                    "problems_rank0": problems[:4],
                }
            )
            W.forget_sources()
            if world.rank == 0:  # after every case: a kill still leaves the cases done
                line = {"ok": bad == 0, "ranks": world.size, "results": results}
                print(json.dumps(line), flush=True)


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
