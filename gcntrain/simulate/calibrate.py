"""`gcntrain bench`: measure this machine's profile (`gcntrain.simulate.machine`) with the
project's own kernels and MPI library.

* Memory bandwidth, SpMM, GEMM and quantization rates of one core, and the thread scaling of
  SpMM, GEMM and element-wise work at 1, half and all cores, in one process and in as many
  one-thread processes (`gcntrain.simulate.measure`).
* From training runs (`gcntrain.simulate.fits`): the products' rates scaled to serial
  one-thread epochs on R-MAT graphs; SpMM and GEMM scaling above one core as the epochs of
  the largest R-MAT graph show it (serial on half and all cores' threads, 1d on as many
  one-thread ranks: they replace the micro-benchmark's figures there); the cost per Ops
  call on one thread, on every core and for a rank of a distributed run (on a tiny graph
  whose epochs are almost all per-call cost), and the element-wise rate from what the
  serial epochs leave unexplained.
* MPI (``mpiexec -n 2 python -m gcntrain.comm.bench``): the latency of an 8-byte ping-pong;
  the bandwidth that makes the collective models meet the measured (median, cold-cache)
  Allreduce, Allgather, Bcast, Reduce-scatter and Alltoall of the largest messages (the
  intra-node link; this machine is one node, so the inter-node link is set to the same);
  every measured collective printed beside the model.
* On a machine of at most `MAX_OVERSUBSCRIBE_CORES` cores, what a synchronisation costs when
  busy-polling ranks share cores (``oversubscribed_sync_us``, reached at
  ``oversubscribed_slice_us`` of compute between synchronisations): fitted to real training
  runs at twice as many ranks as cores on R-MAT 12 and 14 (`oversubscribed_fit`).

``quick`` (`gcntrain bench --quick`, the calibration behind ``--machine local``) measures the
same quantities on smaller operands, fewer widths and shapes, two processes for the thread
scaling, serial runs of R-MAT 12 only, one training run per fit, and of the oversubscribed
cost only its floor.  The machine's load is read before, and the ping-pong latency's median
is compared with its best: a busy machine is reported (`busy_notes`), as its figures are
then its share, not the machine.
"""

from __future__ import annotations

import os
import platform
import tempfile
import time

import numpy as np

from gcntrain import status
from gcntrain.schemes.registry import AUTO
from gcntrain.simulate import measure as M
from gcntrain.simulate.fits import (  # noqa: F401 (fit_sync_slice, SLICES: used by tests)
    FIT_RUNS,
    SLICES,
    TINY_SCALE,
    _fit_runs,
    fit_sync_slice,
    messages_only,
    oversubscribed_fit,
    serial_fits,
)
from gcntrain.simulate.launch import (  # noqa: F401 (the scripts' command lines)
    find_mpiexec,
    gcntrain_cmd,
    mpi_figures,
)
from gcntrain.simulate.profile_text import profile_text

#: the oversubscribed synchronisation is measured (at twice as many ranks as cores) only on
#: machines with at most this many cores: a cluster node is not run oversubscribed, and on a
#: bigger node the runs would take most of the bench's minute
MAX_OVERSUBSCRIBE_CORES = 8
#: the quick bench's GEMM shapes (k, n)
QUICK_GEMM = ((4, 4), (16, 16), (64, 16), (64, 64))


def fit_link(pingpong: list[list[float]]) -> tuple[float, float]:
    """(latency s, bandwidth B/s) of ping-pong one-way times: latency from the smallest
    message, bandwidth from the slope between the two largest."""
    sizes = np.array([p[0] for p in pingpong], dtype=np.float64)
    t = np.array([p[1] for p in pingpong], dtype=np.float64)
    alpha = float(t[np.argmin(sizes)])
    i = np.argsort(sizes)[-2:]
    slope = (t[i[1]] - t[i[0]]) / (sizes[i[1]] - sizes[i[0]])
    if not slope > 0:
        slope = t[i[1]] / sizes[i[1]]
    return alpha, float(1.0 / slope)


def _collective_fns(memory_rate: float):
    """{kind: cost(p, bytes, link)} of the collectives `gcntrain.comm.bench` times, with the
    byte conventions of its figures (Allreduce and Reduce-scatter: the whole vector, plus
    their reduction at `memory_rate`; Allgather and Bcast: one member's message; Alltoall:
    one member's whole send buffer)."""
    from gcntrain.simulate import collectives as C

    def alltoall(p, n, link):
        b = n * (p - 1) / p
        return C.alltoallv(p - 1, b, b, link)

    return {
        "allreduce": lambda p, n, k: C.allreduce(p, n, k) + C.reduction(p, n, memory_rate),
        "allgather": C.allgather,
        "bcast": C.bcast,
        "reduce_scatter": lambda p, n, k: (
            C.reduce_scatter(p, n, k) + C.reduction(p, n, memory_rate)
        ),
        "alltoall": alltoall,
    }


def fit_collective_bandwidth(
    mpi: dict, alpha: float, memory_rate: float, eager: float = 0.0, rendezvous: float = 0.0
) -> float:
    """Bandwidth (B/s) that makes the collective models meet the measured collectives of the
    two largest messages (median times with cold caches): the median over them of the
    bandwidth each implies (their copies cost more than a hot ping-pong)."""
    from gcntrain.simulate.machine import Link

    p = mpi["ranks"]
    betas = []
    for kind, fn in _collective_fns(memory_rate).items():
        for b, t in sorted(mpi.get(kind, []))[-2:]:
            a = float(fn(p, b, Link(alpha, 0.0, eager, rendezvous)))
            slope = float(fn(p, b, Link(alpha, 1.0, eager, rendezvous))) - a
            if slope > 0 and t > a:
                betas.append((t - a) / slope)
    return 1.0 / float(np.median(betas)) if betas else 0.0


def _messages(fn, p: int, nbytes: float) -> float:
    """Messages the collective model `fn` counts for `p` members and `nbytes` bytes: its
    time on a link of one second per message and free bytes, less its time on a free link
    (what is left is its local arithmetic)."""
    from gcntrain.simulate.machine import Link

    return float(fn(p, nbytes, Link(1.0, 0.0))) - float(fn(p, nbytes, Link(0.0, 0.0)))


def fit_collective_latency(mpi: dict, memory_rate: float) -> float:
    """Latency (s) per message that makes the collective models meet the measured
    collectives of the smallest messages (their bytes cost nothing): the median over the
    kinds of the time over the messages the model counts.  A collective's message costs
    more than a ping-pong's (the library's algorithm selection and progress): on this
    machine 16-32 us against 15 us."""
    from gcntrain.simulate.machine import Link

    p = mpi["ranks"]
    alphas = []
    for kind, fn in _collective_fns(memory_rate).items():
        rows = sorted(mpi.get(kind, []))
        if rows:
            b, t = rows[0]
            messages = _messages(fn, p, b)
            if messages > 0:
                alphas.append((t - float(fn(p, b, Link(0.0, 0.0)))) / messages)
    return float(np.median(alphas)) if alphas else 0.0


def fit_rendezvous(mpi: dict, alpha: float, beta: float, memory_rate: float):
    """(eager bytes, rendezvous s): the largest measured size up to which the collectives
    cost what the α-β model says (median excess under half a latency), and the median
    excess per message of the sizes above it up to 256 KiB (where bytes do not yet
    dominate): MPI sends a message above its eager limit only after a handshake.  (0, 0)
    where no size shows it."""
    from gcntrain.simulate.machine import Link

    p = mpi["ranks"]
    sizes = sorted({int(b) for kind in _collective_fns(memory_rate) for b, _ in mpi.get(kind, [])})
    excess: dict[int, list[tuple[float, float]]] = {b: [] for b in sizes}
    for kind, fn in _collective_fns(memory_rate).items():
        for b, t in mpi.get(kind, []):
            messages = _messages(fn, p, b)
            if messages > 0:
                excess[int(b)].append((t - float(fn(p, b, Link(alpha, beta))), messages))
    eager = 0
    for b in sizes:
        if excess[b] and np.median([e for e, _ in excess[b]]) < 0.5 * alpha:
            eager = b
        else:
            break
    per = [e / m for b in sizes if eager < b <= 256 << 10 for e, m in excess[b] if m > 0]
    if not eager or not per or np.median(per) <= 0:
        return 0.0, 0.0
    return float(eager), float(np.median(per))


def memory_gib() -> float:
    """This node's physical memory in GiB (0 where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        return 0.0


def busy_notes(cores: int, mpi: dict | None = None) -> list[str]:
    """Why this machine looks busy (empty when it does not): before the bench, a 1-minute
    load above its cores less half a core (others run on it); after, an MPI ping-pong whose
    median latency is more than three times its best (other work preempting the ranks)."""
    notes = []
    if mpi is None and hasattr(os, "getloadavg"):
        load = os.getloadavg()[0]
        if load > max(1.0, cores - 0.5):
            notes.append(f"load {load:.2f} on {cores} cores")
    if mpi and mpi.get("pingpong_best"):
        med, best = mpi["pingpong"][0][1], mpi["pingpong_best"][0][1]
        if best > 0 and med > 3.0 * best:
            notes.append(
                f"MPI latency {med * 1e6:.1f} us against {best * 1e6:.1f} us at best of its repeats"
            )
    return notes


def _network(figs: dict, exe: str | None, quick: bool, log) -> dict | None:
    """MPI latency and bandwidth into figs (``alpha``, ``bandwidth``); the raw figures, or
    None where no launcher was found (then a latency of 2 us and a quarter of the node's
    bandwidth stand in, and the profile's sources say so: ``no_mpi``)."""
    from gcntrain.simulate.machine import bandwidth_share

    if exe is None:
        figs["alpha"], figs["bandwidth"] = 2e-6, figs["node_gbs"] * 1e9 / 4
        figs["no_mpi"] = True
        log(
            "MPI                       no mpiexec found: latency 2 us and a quarter of the "
            "node's bandwidth assumed"
        )
        return None
    with status.phase("measuring MPI's latency and bandwidth"):
        mpi = mpi_figures(exe, reps=3 if quick else 9)
    pingpong_alpha, pingpong_bw = fit_link(mpi["pingpong"])
    # reductions at the rate the model gives a rank of two on this node
    mem_rate = bandwidth_share(figs["core_gbs"] * 1e9, figs["node_gbs"] * 1e9, 2)
    alpha = fit_collective_latency(mpi, mem_rate) or pingpong_alpha
    beta = 1.0 / (fit_collective_bandwidth(mpi, alpha, mem_rate) or pingpong_bw)
    eager, rdv = fit_rendezvous(mpi, alpha, beta, mem_rate)
    bw = fit_collective_bandwidth(mpi, alpha, mem_rate, eager, rdv) or 1.0 / beta
    figs.update(alpha=alpha, bandwidth=bw, eager=eager, rendezvous=rdv)
    log(
        f"MPI ping-pong             latency {pingpong_alpha * 1e6:.2f} us, bandwidth "
        f"{pingpong_bw / 1e9:.2f} GB/s; collectives imply {alpha * 1e6:.2f} us per message, "
        f"{bw / 1e9:.2f} GB/s, {rdv * 1e6:.1f} us more above {eager:.0f} B"
    )
    return mpi


def _measure_kernels(figs: dict, quick: bool, log) -> None:
    """Memory bandwidth, kernel rates and thread scaling (`gcntrain.simulate.measure`)."""
    cores = figs["cores"]
    n = 1 << (23 if quick else 25)
    with status.phase("measuring the memory bandwidth"):
        figs["core_gbs"] = M.triad_gbs(n, 3 if quick else 5)
        figs["node_gbs"] = max(M.node_triad_gbs(cores, n, 3 if quick else 5), figs["core_gbs"])
    log(
        f"memory bandwidth (triad)  one core {figs['core_gbs']:.1f} GB/s, all {cores} cores "
        f"{figs['node_gbs']:.1f} GB/s"
    )
    figs["spmm_scale"] = 16 if quick else 17
    figs["spmm_edge_factors"] = M.SPMM_EDGE_FACTORS
    widths = M.QUICK_WIDTHS if quick else M.SPMM_WIDTHS
    with status.phase("measuring the SpMM rates"):
        figs["spmm"], figs["spmm_row_ns"] = M.spmm_fit(
            figs["spmm_scale"], widths, figs["spmm_edge_factors"]
        )
    rows = figs["spmm_row_ns"]
    log(
        "SpMM, one thread          "
        + ", ".join(f"w{w} {r:.2f}" for w, r in figs["spmm"].items())
        + " GFLOP/s"
        + (
            " per entry; per row " + ", ".join(f"{v:.1f}" for v in rows.values()) + " ns"
            if rows
            else ""
        )
    )
    with status.phase("measuring the GEMM rates"):
        figs["gemm"] = M.gemm_gflops(1 << 16, QUICK_GEMM) if quick else M.gemm_gflops()
    log(
        "GEMM, one thread          "
        + ", ".join(f"kn{k} {r:.1f}" for k, r in figs["gemm"].items())
        + " GFLOP/s"
    )
    figs["quant"] = M.quant_gelems()
    log(f"quantize + dequantize     {figs['quant']:.3f} G elements/s")
    with status.phase("measuring the thread and process scaling"):
        figs["threads"] = M.thread_scaling(cores, figs["spmm_scale"], 3, 2 if quick else 5)
        figs["node_scaling"] = M.node_scaling(cores, figs["spmm_scale"], 3 if quick else 5)
    rows = (("threads, one process", "threads"), ("processes, one thread", "node_scaling"))
    for what, key in rows:
        log(
            f"{what:<26}"
            + "; ".join(
                f"{k} " + ", ".join(f"x{s:.2f} at {T}" for T, s in sorted(t.items()))
                for k, t in figs[key].items()
            )
        )


def calibrate(
    name: str = "local", mpiexec: str | None = None, log=print, quick: bool = False
) -> tuple[str, dict]:
    """Measure this machine (`quick`: the short form); (profile TOML text, figures)."""
    from gcntrain import __version__
    from gcntrain.comm.env import host_cores
    from gcntrain.kernels.threads import get_threads, set_threads
    from gcntrain.simulate.machine import parse_machine

    t0 = time.perf_counter()
    cores = host_cores()
    figs: dict = {
        "host": platform.node() or "this machine",
        "when": time.strftime("%Y-%m-%d %H:%M"),
        "cores": cores,
        "version": __version__,
        "quick": quick,
        "memory_gib": memory_gib(),
    }
    for note in busy_notes(cores):
        log(f"busy machine              {note}: its figures will be low")
    was, affinity = get_threads(), _widen_affinity()
    try:
        _measure_kernels(figs, quick, log)
        set_threads(was)
        exe = find_mpiexec(mpiexec)
        mpi = _network(figs, exe, quick, log)
        figs["scales"] = [12] if quick else [12, 14, 16]
        runs, epochs = (1, 4) if quick else (FIT_RUNS, 8)
        with tempfile.TemporaryDirectory() as tmp:
            with status.phase("timing serial epochs"):
                serial_fits(figs, name, tmp, epochs, runs, exe, log, epoch_threads=not quick)
            fit = figs["scales"][:2]
            if exe is not None and 2 <= cores <= MAX_OVERSUBSCRIBE_CORES:
                graphs = [figs["graphs"][sc] for sc in fit]
                with messages_only(), status.phase("timing oversubscribed runs"):
                    figs["floor"], figs["sync"], figs["slice"], got, base = oversubscribed_fit(
                        exe, graphs, name, figs, epochs, runs, figs["graphs"][TINY_SCALE]
                    )
                runs_text = "quick: the floor only"
                if got:
                    runs_text = _fit_runs(fit, got, base, "without it")
                log(
                    f"oversubscribed sync       {2 * cores} ranks on {cores} cores, {AUTO[1]}: "
                    f"{runs_text}: at least "
                    f"{figs['floor'] * 1e6:.0f} us (R-MAT {TINY_SCALE}), up to "
                    f"{figs['sync'] * 1e6:.0f} us more per synchronisation, reached at "
                    f"{figs['slice'] * 1e6:.0f} us of compute since the previous one"
                )
    finally:
        set_threads(was)
        _restore_affinity(affinity)
    figs.pop("graphs", None)
    figs.pop("plans", None)
    text = profile_text(name, figs)
    if mpi is not None:
        _log_collectives(parse_machine(text, "<bench>"), mpi, log)
        figs["mpi"] = mpi
    figs["busy"] = busy_notes(cores, mpi)
    for note in figs["busy"]:
        log(f"busy machine              {note}: rerun on an idle machine for its own figures")
    figs["seconds"] = time.perf_counter() - t0
    log(f"measured in {figs['seconds']:.1f} s")
    return text, figs


def _log_collectives(m, mpi: dict, log) -> None:
    """Every measured collective beside the model's price on two ranks of this node."""
    from gcntrain.simulate.placement import Placement

    place = Placement(2, 2, m)
    for kind, fn in _collective_fns(place.memory_rate).items():
        model = [float(fn(mpi["ranks"], b, place.intra)) for b, _ in mpi[kind]]
        rows = [
            f"{int(b)} B {t * 1e6:.1f} us (model {x * 1e6:.1f})"
            for (b, t), x in zip(mpi[kind], model)
        ]
        log(f"MPI {kind:<22}" + "; ".join(rows))


def _widen_affinity():
    """Inside an MPI job whose launcher bound this rank to a few cores, let the bench (and
    the processes it starts) run on all of the node's; the mask to restore, or None."""
    from gcntrain.comm.env import is_bound, launcher_local_size

    if not hasattr(os, "sched_setaffinity") or not (is_bound() and launcher_local_size() > 1):
        return None
    was = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, range(os.cpu_count() or 1))
    except OSError:
        return None
    return was


def _restore_affinity(mask) -> None:
    if mask is not None:
        try:
            os.sched_setaffinity(0, mask)
        except OSError:
            pass
