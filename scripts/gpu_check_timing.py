"""The GPU check's measured parts (issue 37, "Acceptance"), each run by `scripts/gpu_check.py`
in a child process of its own: the benchmark graph, PyTorch Geometric's epoch on CUDA, the
side-by-side epoch rounds, and the K1 SpMM against SciPy and ``torch.sparse.mm``.

Every function returns a JSON-ready dict; ``mode`` is ``"gpu"`` (CuPy, torch on CUDA) or
``"emulated"`` (the dry run on a machine without a GPU: the strict host emulation, the host
engine of `gcntrain.kernels.gpu.CsrOnDevice`, torch on the CPU where it imports).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
#: the issue's graph after ``gcntrain convert --symmetrize`` (../shared/bench/README.md)
BENCH_NNZ = 3_996_970


def run_json(cmd: list[str], timeout: float, env: dict | None = None) -> dict:
    """The one JSON line `cmd` prints, or ``{"error": ...}`` (exit status, stderr's tail)."""
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s: {' '.join(cmd)}"}
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
    if res.returncode != 0 or not lines:
        return {"error": f"exit {res.returncode}: {' '.join(cmd)}", "stderr": res.stderr[-1500:]}
    return json.loads(lines[-1])


def build_graph(data: str, work: str, small: int = 0) -> dict:
    """The benchmark graph in `work` (``g.npz`` for PyG, ``g.h5`` for gcntrain) from the
    carried topology `data`/bench_topology.npz (edges, labels and masks that
    ``../shared/bench/make_bench_graph.py 200000 2000000 128 16 7`` made, written by
    ``gpu_check.py prepare``).  The 128 features are drawn here (standard normal, seed 7):
    the carried file leaves them out to stay under the 64 MiB carry limit, so their values,
    not their shape, differ from the shared script's.  `small` > 0: the subgraph induced by
    the first `small` nodes (the dry run)."""
    from gcntrain.simulate.launch import gcntrain_cmd

    z = np.load(os.path.join(data, "bench_topology.npz"))
    edges, labels = z["edges"].astype(np.int64), z["labels"].astype(np.int64)
    masks = {k: z[k] for k in ("train_masks", "val_masks", "test_masks")}
    n, f = int(z["n"]), int(z["f"])
    if small:
        n = min(n, small)
        edges = edges[(edges < n).all(axis=1)]
        labels, masks = labels[:n], {k: v[:, :n] for k, v in masks.items()}
    x = np.random.default_rng(7).standard_normal((n, f), dtype=np.float32)
    os.makedirs(work, exist_ok=True)
    npz, h5 = os.path.join(work, "g.npz"), os.path.join(work, "g.h5")
    np.savez(npz, edges=edges, node_features=x, node_labels=labels, **masks)
    conv = subprocess.run(
        [*gcntrain_cmd(), "convert", npz, "-o", h5, "--symmetrize"],
        capture_output=True,
        text=True,
    )
    if conv.returncode != 0:
        return {"error": f"convert failed: {conv.stderr[-1500:]}"}
    info = run_json([*gcntrain_cmd(), "inspect", h5, "--json"], 300)
    out = {"npz": npz, "h5": h5, "nodes": info.get("num_nodes"), "nnz": info.get("nnz")}
    if not small and out["nnz"] != BENCH_NNZ:
        out["warning"] = f"{out['nnz']} nonzeros, the issue's graph has {BENCH_NNZ}"
    return out


def pyg_epochs(npz: str, hiddens: list[int], epochs: int, mode: str) -> dict:
    """PyTorch Geometric's GCN (two cached ``GCNConv``, a ``torch.sparse_csr`` adjacency,
    Adam, no evaluation pass: the model and loop of ``../shared/bench/pyg_epoch.py``) on
    CUDA (``mode`` gpu; on the CPU in the dry run), ``torch.cuda.synchronize()`` before and
    after each epoch; the median of epochs 6 to `epochs` per hidden width, in ms."""
    try:
        import torch
        import torch_geometric.transforms as T
        from torch_geometric.data import Data
        from torch_geometric.nn import GCNConv
        from torch_geometric.utils import to_undirected
    except ImportError as e:
        return {"skipped": f"PyTorch Geometric does not import: {e}"}
    dev = torch.device("cuda" if mode == "gpu" else "cpu")
    if mode == "gpu" and not torch.cuda.is_available():
        return {"error": "torch sees no CUDA device"}
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    z = np.load(npz)
    edge_index = to_undirected(torch.from_numpy(z["edges"].T.astype(np.int64)))
    x = torch.from_numpy(z["node_features"])
    y = torch.from_numpy(z["node_labels"].astype(np.int64))
    data = Data(x=x, edge_index=edge_index, y=y, num_nodes=x.shape[0])
    data = T.ToSparseTensor(layout=torch.sparse_csr)(data).to(dev)
    mask = torch.from_numpy(z["train_masks"][0]).to(dev)
    classes = int(y.max()) + 1
    out = {"device": str(dev), "nnz": int(edge_index.shape[1]), "epochs": epochs}
    for hidden in hiddens:
        c1 = GCNConv(x.shape[1], hidden, cached=True).to(dev)
        c2 = GCNConv(hidden, classes, cached=True).to(dev)
        opt = torch.optim.Adam([*c1.parameters(), *c2.parameters()], lr=0.01)
        times = []
        for _ in range(epochs):
            sync()
            t0 = time.perf_counter()
            opt.zero_grad()
            logits = c2(torch.relu(c1(data.x, data.adj_t)), data.adj_t)
            loss = torch.nn.functional.cross_entropy(logits[mask], data.y[mask])
            loss.backward()
            opt.step()
            sync()
            times.append(time.perf_counter() - t0)
        out[f"h{hidden}_ms"] = statistics.median(times[5:]) * 1e3
    return out


def epoch_rounds(a: dict) -> dict:
    """Interleaved rounds (order rotated each round) of gcntrain ``--device gpu`` at each
    hidden width, PyG on CUDA at the same widths (one child per round), and gcntrain on the
    node's CPU cores; medians over rounds of each run's median epoch, and the ratios."""
    from gcntrain.simulate.launch import gcntrain_cmd

    base = [*gcntrain_cmd(), "train", a["h5"], "--epochs", str(a["epochs"]), "--json"]
    base += ["--quiet", "--early-stopping", "0", "--scheme", "serial"]
    tools: dict[str, list[str] | None] = {}
    for h in a["hiddens"]:
        tools[f"gcntrain-gpu h{h}"] = [*base, "--hidden", str(h), "--device", "gpu"]
    tools["pyg"] = None
    for h in a["cpu_hiddens"]:
        tools[f"gcntrain-cpu{a['threads']} h{h}"] = [*base, "--hidden", str(h), "--threads"]
        tools[f"gcntrain-cpu{a['threads']} h{h}"] += [str(a["threads"]), "--device", "cpu"]
    times: dict[str, list[float]] = {k: [] for k in tools}
    times.pop("pyg")
    times.update({f"pyg-{a['mode']} h{h}": [] for h in a["hiddens"]})
    log, names = [f"load before {os.getloadavg()[0]:.2f}"], list(tools)
    skipped: set[str] = set()
    deadline = time.monotonic() + a["budget"]
    for r in range(a["rounds"]):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            left = deadline - time.monotonic()
            if left < 5:
                log.append(f"round {r + 1}: {name} not run (budget spent)")
                continue
            if name == "pyg":
                spec = json.dumps({"npz": a["npz"], "hiddens": a["hiddens"], "mode": a["mode"]})
                got = run_json(
                    [sys.executable, str(HERE / "gpu_check.py"), "part", "pyg", spec], left
                )
                if "skipped" in got:
                    skipped.update(f"pyg-{a['mode']} h{h}" for h in a["hiddens"])
                for h in a["hiddens"]:
                    if f"h{h}_ms" in got:
                        times[f"pyg-{a['mode']} h{h}"].append(got[f"h{h}_ms"])
            else:
                got = run_json(tools[name], left)
                if "epoch_seconds" in got:
                    times[name].append(got["epoch_seconds"] * 1e3)
                    got = {
                        k: got.get(k) for k in ("epoch_seconds", "epoch_breakdown", "mpi_buffers")
                    }
            log.append(f"round {r + 1}: {name}: {json.dumps(got)[:600]}")
    med = {k: (statistics.median(v) if v else None) for k, v in times.items()}
    out: dict = {"median_ms": med, "runs_ms": times, "log": log, "load": os.getloadavg()[0]}
    out["ok"] = all(v for k, v in times.items() if k not in skipped)  # PyG: where it imports
    ratios = {}
    for h in a["hiddens"]:
        g, p = med.get(f"gcntrain-gpu h{h}"), med.get(f"pyg-{a['mode']} h{h}")
        if g and p:
            ratios[f"gcntrain-gpu/pyg h{h}"] = round(g / p, 3)
    goal = dict(ratios)
    for h in a["cpu_hiddens"]:
        g, c = med.get(f"gcntrain-gpu h{h}"), med.get(f"gcntrain-cpu{a['threads']} h{h}")
        if g and c:
            ratios[f"gcntrain-gpu/gcntrain-cpu{a['threads']} h{h}"] = round(g / c, 3)
    out["ratios"] = ratios
    out["goal"] = "gcntrain-gpu/pyg at most 1.0 (gcntrain's epoch includes its evaluation pass)"
    out["goal_met"] = all(v <= 1.0 for v in goal.values()) if goal else None
    return out


def _timed(fn, sync, repeat: int) -> dict:
    """Mean and minimum ms of `repeat` products, each synchronised, after 3 warm-ups."""
    for _ in range(3):
        fn()
    sync()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t0)
    return {"mean_ms": statistics.mean(ts) * 1e3, "min_ms": min(ts) * 1e3, "repeat": repeat}


def k1_spmm(rows: int, mode: str, repeat: int = 15, rounds: int = 2) -> dict:
    """The K1 product (`rows` x `rows`, 16 per row, width 64, float32; ``bench_kernels``'s
    matrix): gcntrain's GPU kernel (`CsrOnDevice`, the resident cuSPARSE SpMM) and the
    training path's ``backend.spmm`` against SciPy (float32 1e-4, float64 1e-10 relative),
    then its time against ``torch.sparse.mm`` (CSR, int64 indices), interleaved."""
    import scipy.sparse as sp

    sys.path.insert(0, str(HERE))
    from bench_kernels import random_matrix

    from gcntrain.kernels.gpu import CsrOnDevice, HostEngine

    indptr, indices, data = random_matrix(rows, 16, "uniform", 1)
    X = np.random.default_rng(2).random((rows, 64), dtype=np.float32)
    A = sp.csr_matrix((data, indices, indptr), shape=(rows, rows), copy=True)
    # each consumer gets its own index arrays: the host engine's canonical form (repeated
    # columns summed) is made in place on int32 arrays it was handed without a copy
    ip, ix = (lambda: indptr.copy()), (lambda: indices.copy())
    if mode == "gpu":
        import cupy as xp

        from gcntrain.device.backend import select_backend

        engine, backend, sync = None, select_backend("gpu", 0), xp.cuda.Device().synchronize
    else:
        from gcntrain.device.emulated import EmulatedBackend

        xp, engine, backend, sync = np, HostEngine(), EmulatedBackend(strict=True), lambda: None
    out: dict = {"rows": rows, "nnz": int(indptr[-1]), "width": 64, "mode": mode}
    for dtype, tol in ((np.float32, 1e-4), (np.float64, 1e-10)):
        S = CsrOnDevice(ip(), ix(), data.astype(dtype), rows, dtype, engine)
        Xd = xp.asarray(X.astype(dtype))
        ref = A.astype(dtype) @ X.astype(dtype)
        if dtype == np.float32:
            ref32 = ref
        got = np.asarray(S @ Xd if mode == "emulated" else xp.asnumpy(S @ Xd))
        M = backend.csr(ip(), ix(), data.astype(dtype), (rows, rows))
        via = backend.fetch(backend.spmm(M, backend.to_device(X.astype(dtype))))
        errs = [float(np.abs(v - ref).max() / np.abs(ref).max()) for v in (got, via)]
        name = np.dtype(dtype).name
        out[f"equal_scipy_{name}"] = {"csr_on_device": errs[0], "backend_spmm": errs[1]}
        out[f"equal_scipy_{name}"]["ok"] = max(errs) <= tol
        del S, Xd, M
    out["ok"] = all(out[f"equal_scipy_{d}"]["ok"] for d in ("float32", "float64"))
    print(json.dumps(out), flush=True)  # kept by the driver should the timing fail
    S = CsrOnDevice(ip(), ix(), data, rows, np.float32, engine)
    Xd = xp.asarray(X)
    M = backend.csr(ip(), ix(), data, (rows, rows))
    Xb = backend.to_device(X)
    runs = {
        "gcntrain CsrOnDevice": lambda: S @ Xd,
        "gcntrain backend.spmm": lambda: backend.spmm(M, Xb),
    }
    try:
        import torch

        tdev = "cuda" if mode == "gpu" else "cpu"
        T = torch.sparse_csr_tensor(
            torch.from_numpy(indptr.astype(np.int64)),
            torch.from_numpy(indices.astype(np.int64)),
            torch.from_numpy(data),
            size=(rows, rows),
        ).to(tdev)
        Xt = torch.from_numpy(X).to(tdev)
        tsync = torch.cuda.synchronize if tdev == "cuda" else (lambda: None)
        runs["torch.sparse.mm"] = lambda: torch.sparse.mm(T, Xt)
        tout = torch.sparse.mm(T, Xt).cpu().numpy()
        out["torch_equal_scipy_float32"] = float(np.abs(tout - ref32).max() / np.abs(ref32).max())
    except ImportError as e:
        out["torch"] = f"skipped: torch does not import ({e})"
    timed: dict[str, list] = {k: [] for k in runs}
    for r in range(rounds):
        for name in list(runs)[r % len(runs) :] + list(runs)[: r % len(runs)]:
            s = tsync if name.startswith("torch") else sync
            timed[name].append(_timed(runs[name], s, repeat))
    out["timings"] = timed
    best = {k: min(t["mean_ms"] for t in v) for k, v in timed.items()}
    out["mean_ms"] = best
    if "torch.sparse.mm" in best:
        ratio = best["gcntrain CsrOnDevice"] / best["torch.sparse.mm"]
        out["ratio_gcntrain_over_torch"] = round(ratio, 3)
        out["goal_met"] = ratio <= 1.0
    out["goal"] = (
        "gcntrain's GPU kernel at most torch.sparse.mm's time (mean of synchronised "
        "products, the better round)"
    )
    return out
