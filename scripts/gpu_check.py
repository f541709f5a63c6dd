"""The prepared GPU check of issue 37: one command on a machine with an NVIDIA GPU runs the
issue's GPU tests and acceptance figures and writes them to ``OUT/gpu_check.json`` and
``OUT/gpu_check.log`` (docs/gpu.md, "The prepared GPU check").

    python scripts/gpu_check.py prepare [DIR]          # here, with PyPI: wheels, graph, run call
    python scripts/gpu_check.py run OUT [--emulated] [--small] [--data DIR] [--budget S]
    bash scripts/gpu_check.sh                          # the device command (installs, then run)

``prepare`` (default DIR ``.gpucheck``, git-ignored) downloads the CPython 3.12 wheels of the
MPI and partitioner packages the device image lacks (mpich, mpi4py, pymetis, mtkahypar, at
this environment's versions), writes the benchmark graph's topology (edges, labels and masks
of ``../shared/bench/make_bench_graph.py 200000 2000000 128 16 7``; the features are drawn on
the device, since the whole graph is over the 64 MiB carry limit), copies
``../shared/bench/pyg_epoch.py`` beside it, and prints the device tool's call.

``run`` runs each part in a child process with its own time limit, so one failure or hang
still leaves the others' figures; the JSON file is rewritten after every part:

1. ``machine``: GPU, CUDA, CuPy and torch versions, load, memory bandwidth, ``gcntrain info``;
2. ``spmm_tests``: ``pytest tests/test_device_spmm.py`` (its GPU test runs where CuPy sees a GPU);
3. ``k1``: the K1 SpMM against SciPy, and its time against ``torch.sparse.mm``;
4. ``schemes_np1``, ``schemes_np2``: the first test configuration of every scheme, float64
   and float32, trained on the CPU and on the device, compared within 1e-10 / 1e-4 relative,
   measured bytes = planned (`scripts/gpu_check_schemes.py`);
5. ``graph``, ``epoch``: the 200k/4M graph; interleaved rounds of gcntrain ``--device gpu``
   (hidden 16 and 256), PyG on CUDA and gcntrain on the node's cores; ratios and the goal;
6. ``cli``: ``gcntrain train --device gpu`` against ``--device cpu`` through the CLI, np 1 and 2;
7. ``auto16`` (issue 34, CPU only): ``--scheme auto``'s cold and warm choice on as many
   ranks as the node has cores (at most 16) for a 325,000-node planted-partition graph
   (``gcntrain generate sbm --n 325000 --classes 16 --features 128 --degree 16 --seed 1``),
   by ``scripts/check_auto_speed.py --runs 2 --limit 5`` after ``gcntrain bench --quick``
   measured the node's profile and one uncounted ``--scheme auto`` job on a small graph
   compiled the planners' kernels;
8. ``schemes_np2_all``: every other test configuration at np 2, as the time left allows.

``--emulated`` is the dry run on a machine without a GPU: ``GCNTRAIN_DEVICE=emulated`` (the
strict host emulation in place of CuPy), the host engine for the K1 kernel, torch on the CPU
where it imports (skipped, and said, where it does not).  On a GPU the runs set
``GCNTRAIN_DEVICE=unchecked-gpu``.  ``--small``: a 20,000-node subgraph and a 100,000-row K1.
Nothing is written outside OUT and the temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHARED = ROOT.parent / "shared" / "bench"
DATA = ".gpucheck"
WHEELS = ("mpich", "mpi4py", "pymetis", "mtkahypar")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_24_x86_64")
PLATFORMS += ("manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64")
PLATFORMS += ("manylinux_2_5_x86_64",)
CARRY_LIMIT = 64 * 2**20

#: (part, time cap in seconds), in the order run
PARTS = [
    ("machine", 60),
    ("spmm_tests", 90),
    ("k1", 90),
    ("schemes_np1", 120),
    ("schemes_np2", 150),
    ("graph", 90),
    ("epoch", 200),
    ("cli", 90),
    ("auto16", 170),
    ("schemes_np2_all", 240),
]


def prepare(d: str, python_version: str) -> int:
    """Wheels, the graph's topology and pyg_epoch.py into `d`; print the device call."""
    from importlib.metadata import version

    import numpy as np

    os.makedirs(d, exist_ok=True)
    specs = [f"{w}=={version(w)}" for w in WHEELS]
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:"]
    cmd += ["--python-version", python_version, "--implementation", "cp", "-d", d]
    for p in PLATFORMS:
        cmd += ["--platform", p]
    subprocess.run([*cmd, *specs], check=True)
    topo = os.path.join(d, "bench_topology.npz")
    if not os.path.exists(topo):
        with tempfile.TemporaryDirectory() as tmp:
            npz = os.path.join(tmp, "g.npz")
            maker = [sys.executable, str(SHARED / "make_bench_graph.py")]
            subprocess.run([*maker, "200000", "2000000", "128", "16", "7", npz], check=True)
            z = np.load(npz)
            np.savez_compressed(
                topo,
                edges=z["edges"].astype(np.int32),
                labels=z["node_labels"].astype(np.uint8),
                train_masks=z["train_masks"],
                val_masks=z["val_masks"],
                test_masks=z["test_masks"],
                n=200000,
                f=z["node_features"].shape[1],
            )
    copy = os.path.join(d, "pyg_epoch.py")  # the shared anchor, for the record (no CUDA switch)
    if os.path.exists(copy):
        os.remove(copy)
    shutil.copyfile(SHARED / "pyg_epoch.py", copy)
    tree = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True).stdout
    tracked = sum(
        os.path.getsize(ROOT / f) for f in tree.decode().split("\0") if f and (ROOT / f).is_file()
    )
    carried = sum(p.stat().st_size for p in Path(d).iterdir())
    print(f"{d}: {carried / 2**20:.1f} MiB carried, repository {tracked / 2**20:.1f} MiB tracked")
    if carried + tracked > CARRY_LIMIT:
        print(f"over the {CARRY_LIMIT >> 20} MiB the device tool carries", file=sys.stderr)
        return 1
    rel = os.path.relpath(os.path.abspath(d), ROOT)
    if rel.startswith(".."):
        print(f"{d} is outside the checkout: only a git-ignored folder inside it is carried")
        return 1
    env = "" if rel == DATA else f"GPU_CHECK_DATA={rel} "
    call = {"command": f"{env}bash scripts/gpu_check.sh", "carry": [rel], "timeout_s": 600}
    print("device tool call (run):", json.dumps(call))
    return 0


def machine(mode: str) -> dict:
    """GPU, versions, load, memory bandwidth and ``gcntrain info``."""
    from gcntrain.simulate.launch import gcntrain_cmd
    from gcntrain.simulate.measure import triad_gbs

    out: dict = {"python": platform.python_version(), "cpus": os.cpu_count(), "mode": mode}
    out["load_1min"] = os.getloadavg()[0]
    smi = shutil.which("nvidia-smi")
    if smi:
        q = "--query-gpu=name,driver_version,memory.total,clocks.max.sm"
        out["nvidia_smi"] = subprocess.run(
            [smi, q, "--format=csv,noheader"], capture_output=True, text=True
        ).stdout.strip()
    try:
        import cupy

        rt = cupy.cuda.runtime
        out["cupy"] = cupy.__version__
        out["cuda_runtime"] = rt.runtimeGetVersion()
        out["cuda_driver"] = rt.driverGetVersion()
        name = rt.getDeviceProperties(0)["name"]
        out["gpu_name"] = name.decode() if isinstance(name, bytes) else str(name)
    except Exception as e:  # no CuPy or no GPU: say so
        out["cupy_error"] = f"{type(e).__name__}: {e}"[:300]
    try:
        import torch

        out["torch"] = torch.__version__
        out["torch_cuda"] = torch.version.cuda
        out["torch_gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError as e:
        out["torch_error"] = str(e)
    import numpy

    out["numpy"] = numpy.__version__
    out["triad_gbs"] = round(triad_gbs(), 1)
    info = subprocess.run([*gcntrain_cmd(), "info", "--json"], capture_output=True, text=True)
    try:
        out["gcntrain_info"] = json.loads(info.stdout)
    except ValueError:
        out["gcntrain_info_error"] = (info.stdout + info.stderr)[-1500:]
    return out


def spmm_tests() -> dict:
    """``pytest tests/test_device_spmm.py`` (its GPU-only test runs where CuPy sees a GPU)."""
    env = {k: v for k, v in os.environ.items() if k != "GCNTRAIN_CACHE_DIR"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"]
    res = subprocess.run(
        [*cmd, "tests/test_device_spmm.py"], capture_output=True, text=True, cwd=ROOT, env=env
    )
    lines = res.stdout.strip().splitlines()
    return {"ok": res.returncode == 0, "summary": lines[-1] if lines else "", "tail": lines[-12:]}


def cli_pairs(mode: str, work: str) -> dict:
    """``train --device gpu`` against ``--device cpu`` through the CLI (the device choice,
    ``backend_for``'s GPU branch, the launcher's local rank): serial float64, 1d and p2p at
    np 2; final losses and accuracies within the dtype's tolerance, the same bytes."""
    from gpu_check_schemes import TOL
    from gpu_check_timing import run_json

    from gcntrain.simulate.launch import find_mpiexec, gcntrain_cmd

    g = os.path.join(work, "r8.h5")
    subprocess.run(
        [*gcntrain_cmd(), "generate", "rmat", "-o", g, "--scale", "8"],
        check=True,
        capture_output=True,
    )
    keys = (
        "final_loss",
        "val_loss",
        "train_acc",
        "val_acc",
        "test_acc",
        "bytes_sent_max",
        "messages_max",
    )
    out, ok = [], True
    for np_, scheme, dtype in (
        (1, "serial", "float64"),
        (2, "1d", "float64"),
        (2, "p2p", "float32"),
    ):
        runs = {}
        for device in ("cpu", "gpu"):
            cmd = [
                *gcntrain_cmd(),
                "train",
                g,
                "--scheme",
                scheme,
                "--dtype",
                dtype,
                "--epochs",
                "5",
            ]
            cmd += ["--json", "--quiet", "--device", device, "--early-stopping", "0"]
            if np_ > 1:
                cmd = [find_mpiexec() or "mpiexec", "-n", str(np_), *cmd]
            runs[device] = run_json(cmd, 120)
        c, d = runs["cpu"], runs["gpu"]
        diffs = {}
        for k in keys:
            a, b = c.get(k), d.get(k)
            if a is None or b is None:
                diffs[k] = [a, b]
            elif k.endswith("loss") and abs(a - b) > TOL[dtype] * max(abs(a), 1e-30):
                diffs[k] = [a, b]
            elif not k.endswith("loss") and a != b:
                diffs[k] = [a, b]
        ok &= not diffs
        errors = {k: v["error"] for k, v in runs.items() if "error" in v}
        out.append(
            {
                "np": np_,
                "scheme": scheme,
                "dtype": dtype,
                "mpi_buffers": d.get("mpi_buffers"),
                "diffs": diffs,
                **errors,
            }
        )
    return {"ok": ok, "mode": mode, "runs": out}


def auto_choice(work: str, small: int) -> dict:
    """The ``auto16`` part (module docstring): the graph, the node's profile, then
    check_auto_speed's medians with its printed load and memory bandwidth."""
    import re

    from gcntrain.simulate.launch import find_mpiexec, gcntrain_cmd
    from gcntrain.simulate.local import cache_path

    g = os.path.join(work, "sbm325k.h5")
    n, ranks = small or 325_000, min(16, os.cpu_count() or 1)
    gen = ["generate", "sbm", "-o", g, "--n", str(n), "--classes", "16", "--features", "128"]
    subprocess.run(
        [*gcntrain_cmd(), *gen, "--degree", "16", "--seed", "1"], check=True, capture_output=True
    )
    t0 = time.monotonic()
    if not cache_path().exists():
        subprocess.run([*gcntrain_cmd(), "bench", "--quick"], check=True, capture_output=True)
    bench = round(time.monotonic() - t0, 1)
    # uncounted: the planners' kernels compiled (this check's Numba cache starts empty)
    tiny = os.path.join(work, "auto_tiny.h5")
    subprocess.run(
        [*gcntrain_cmd(), "generate", "rmat", "-o", tiny, "--scale", "9"],
        check=True,
        capture_output=True,
    )
    mpi = [find_mpiexec() or "mpiexec", "-n", "2", *gcntrain_cmd(), "train", tiny]
    subprocess.run([*mpi, "--epochs", "1", "--quiet"], check=True, capture_output=True)
    cmd = [sys.executable, str(HERE / "check_auto_speed.py"), "--graph", g]
    cmd += ["--ranks", str(ranks), "--runs", "1" if small else "2", "--limit", "5"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    med = dict(re.findall(r"^(cold|warm)\s+choice median ([\d.]+) s", res.stdout, re.M))
    return {
        "ok": res.returncode == 0,
        "nodes": n,
        "ranks": ranks,
        "bench_seconds": bench,
        "cold_median_s": float(med["cold"]) if "cold" in med else None,
        "warm_median_s": float(med["warm"]) if "warm" in med else None,
        "goal_s": 5.0,
        "output": res.stdout[-3000:],
        "stderr_tail": res.stderr[-1500:],
    }


def run_part(name: str, spec: dict, timeout: float, argv: list[str] | None = None) -> dict:
    """A part in a child (its own process group, killed at `timeout`): the last JSON line
    it printed, with the seconds it took; what it printed before a kill is kept."""
    if argv is None:
        argv = [sys.executable, str(HERE / "gpu_check.py"), "part", name, json.dumps(spec)]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=max(timeout, 1))
        killed = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        killed = True
    lines = [ln for ln in out.splitlines() if ln.startswith("{")]
    got = json.loads(lines[-1]) if lines else {}
    if killed:
        got["error"] = f"killed after {timeout:.0f} s (the part's time limit)"
    elif proc.returncode != 0 or not lines:
        got.setdefault("error", f"exit status {proc.returncode}")
    if "error" in got:
        got["stderr_tail"] = err[-2000:]
    got["seconds"] = round(time.monotonic() - t0, 1)
    return got


def scheme_cases(size: int, first: bool) -> list:
    """`tests/test_device_schemes.py`'s cases on `size` ranks: each scheme's first test
    configuration (`first`), else the others."""
    sys.path.insert(0, str(ROOT))
    from tests.test_device_schemes import device_cases

    seen, picked = set(), []
    for case in device_cases(size):
        if (case[0] not in seen) == first:
            picked.append(case)
        seen.add(case[0])
    return picked


def part_child(name: str, spec: dict) -> None:
    """One part, in this (child) process; prints its JSON line."""
    sys.path.insert(0, str(HERE))
    import gpu_check_timing as T

    mode = spec.get("mode", "gpu")
    if name == "machine":
        got = machine(mode)
    elif name == "spmm_tests":
        got = spmm_tests()
    elif name == "graph":
        got = T.build_graph(spec["data"], spec["work"], spec.get("small", 0))
    elif name == "pyg":
        got = T.pyg_epochs(spec["npz"], spec["hiddens"], spec.get("epochs", 30), mode)
    elif name == "epoch":
        got = T.epoch_rounds(spec)
    elif name == "k1":
        repeat, rounds = (15, 2) if mode == "gpu" else (3, 1)  # the emulation is slow
        got = T.k1_spmm(spec["rows"], mode, repeat, rounds)
    elif name == "cli":
        got = cli_pairs(mode, spec["work"])
    elif name == "auto16":
        got = auto_choice(spec["work"], spec.get("small", 0))
    else:
        raise SystemExit(f"unknown part {name!r}")
    print(json.dumps(got, default=str), flush=True)


def main_run(a) -> int:
    mode = "emulated" if a.emulated else "gpu"
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="gpu_check_")
    os.environ.update(
        GCNTRAIN_DEVICE="emulated" if a.emulated else "unchecked-gpu",
        NUMBA_CACHE_DIR=os.path.join(work, "numba"),
        CUPY_CACHE_DIR=os.path.join(work, "cupy"),
        GCNTRAIN_CACHE_DIR=os.path.join(work, "cache"),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p),
    )
    threads = a.threads or os.cpu_count() or 1
    data = os.path.abspath(a.data)
    schemes = str(HERE / "gpu_check_schemes.py")
    deadline = time.monotonic() + a.budget
    report: dict = {"mode": mode, "small": a.small, "argv": sys.argv, "parts": {}}
    log = open(os.path.join(a.out, "gpu_check.log"), "w")

    def say(text: str) -> None:
        print(text, flush=True)
        log.write(text + "\n")
        log.flush()

    from gcntrain.simulate.launch import find_mpiexec

    mpiexec = find_mpiexec() or "mpiexec"
    graph: dict = {}
    for name, cap in PARTS:
        if a.parts and name not in a.parts:
            continue
        left = deadline - time.monotonic()
        if left < 10:
            report["parts"][name] = {"error": "not run: the time budget is spent"}
            say(f"== {name}: not run (budget spent)")
            continue
        limit = min(cap, left)
        spec: dict = {"mode": mode, "work": work}
        argv = None
        if name.startswith("schemes"):
            size = 1 if name == "schemes_np1" else 2
            cases = scheme_cases(size, name != "schemes_np2_all")
            sspec = {"mode": mode, "dtypes": ["float64", "float32"], "cases": cases, "epochs": 4}
            argv = [sys.executable, schemes, json.dumps(sspec)]
            if size > 1:
                argv = [mpiexec, "-n", str(size), *argv]
        elif name == "graph":
            spec.update(data=data, small=20000 if a.small else 0)
        elif name == "epoch":
            if "h5" not in graph:
                report["parts"][name] = {"error": "no graph (the graph part failed)"}
                continue
            spec.update(graph, hiddens=[16, 256], cpu_hiddens=[16], threads=threads)
            spec.update(epochs=6 if a.small else 12, rounds=1 if a.small else 3, budget=limit - 10)
        elif name == "k1":
            spec.update(rows=a.k1_rows or (100_000 if a.small else 1_000_000))
        elif name == "auto16":
            spec.update(small=20000 if a.small else 0)
        say(f"== {name} (limit {limit:.0f} s, load {os.getloadavg()[0]:.2f})")
        got = run_part(name, spec, limit, argv)
        if name == "graph" and "h5" in got:
            graph = {"h5": got["h5"], "npz": got["npz"]}
        report["parts"][name] = got
        say(json.dumps(got, default=str, indent=1)[:6000])
        with open(os.path.join(a.out, "gpu_check.json"), "w") as f:
            json.dump(report, f, indent=1, default=str)
    summary = summarize(report)
    report["summary"] = summary
    with open(os.path.join(a.out, "gpu_check.json"), "w") as f:
        json.dump(report, f, indent=1, default=str)
    say("== summary\n" + json.dumps(summary, indent=1, default=str))
    log.close()
    shutil.rmtree(work, ignore_errors=True)
    return 0


def summarize(report: dict) -> dict:
    """The figures the issue's closing note needs, one line each."""
    p = report["parts"]
    s: dict = {}
    for name, got in p.items():
        s[f"{name} ok"] = got["error"] if "error" in got else got.get("ok", True)
    for name in ("schemes_np1", "schemes_np2", "schemes_np2_all"):
        bad = [
            f"{r['scheme']} {r['options']} {r['dtype']}: {r['problems_rank0']}"
            for r in p.get(name, {}).get("results", [])
            if not r["ok"]
        ]
        if bad:
            s[f"{name} failures"] = bad
    e = p.get("epoch", {})
    s["epoch median ms"], s["epoch ratios"] = e.get("median_ms"), e.get("ratios")
    s["epoch goal met"] = e.get("goal_met")
    k = p.get("k1", {})
    s["k1 mean ms"], s["k1 ratio"] = k.get("mean_ms"), k.get("ratio_gcntrain_over_torch")
    s["k1 goal met"] = k.get("goal_met")
    s["graph"] = {x: p.get("graph", {}).get(x) for x in ("nodes", "nnz", "warning")}
    a = p.get("auto16", {})
    s["auto16"] = {x: a.get(x) for x in ("ranks", "nodes", "cold_median_s", "warm_median_s")}
    m = p.get("machine", {})
    s["machine"] = {x: m.get(x) for x in ("gpu_name", "cupy", "torch", "load_1min", "triad_gbs")}
    return s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="wheels, graph topology, pyg_epoch.py; print the call")
    p.add_argument("dir", nargs="?", default=str(ROOT / DATA))
    p.add_argument("--python-version", default="3.12")
    r = sub.add_parser("run", help="run the check, writing OUT/gpu_check.json and .log")
    r.add_argument("out")
    r.add_argument("--emulated", action="store_true", help="the dry run without a GPU")
    r.add_argument("--small", action="store_true", help="a 20,000-node graph, a 100k-row K1")
    r.add_argument("--data", default=str(ROOT / DATA), help="what prepare wrote")
    r.add_argument("--budget", type=float, default=480.0, help="seconds for all parts")
    r.add_argument("--threads", type=int, default=0, help="CPU run's threads (0: all cores)")
    r.add_argument("--k1-rows", type=int, default=0, help="K1's rows (0: 1M, --small 100k)")
    r.add_argument("--parts", type=lambda v: v.split(","), default=None, help="only these parts")
    c = sub.add_parser("part", help="internal: one part in a child process")
    c.add_argument("name")
    c.add_argument("spec")
    a = ap.parse_args(argv)
    if a.cmd == "prepare":
        return prepare(a.dir, a.python_version)
    if a.cmd == "part":
        part_child(a.name, json.loads(a.spec))
        return 0
    return main_run(a)


if __name__ == "__main__":
    sys.exit(main())
