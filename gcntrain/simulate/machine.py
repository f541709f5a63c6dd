"""Machine profiles: the parameters the simulator's time model prices a plan with.

A profile is a TOML file (the shipped ones live in ``gcntrain/simulate/machines``: `fugaku`,
`abci`, each listing its sources; ``local`` is this machine, measured once and cached:
`gcntrain.simulate.local`).  Schema::

    name = "fugaku"
    description = "..."
    sources = ["...", ...]
    measured = "2026-01-31 14:05"   (optional: when `gcntrain bench` measured it)
    measured_by = "gcntrain 0.4.0 from /path"   (optional: the version and directory that did)
    [node]            cores, ranks (default ranks per node), memory_bandwidth_gbs (the node's, every
                      core streaming), core_bandwidth_gbs (optional: what one core streams; default
                      the node's), oversubscribed_sync_us (optional, default 0: what each
                      synchronising step adds when a node runs more ranks than cores, as MPI ranks
                      busy-polling on shared cores wait for a descheduled partner),
                      oversubscribed_slice_us (optional, default 0: with it, a step adds
                      ``oversubscribed_sync_us x min(1, w / slice)``, w the compute the rank did
                      since its previous synchronisation), oversubscribed_floor_us (optional,
                      default 0: what such a step adds at least: a waiting rank sleeps, and wakes no
                      sooner than the kernel's timer allows; the figure of a step over twice the
                      node's cores in ranks, as `gcntrain bench` fits it, scaled by the wake-up
                      rounds of each step's group: `gcntrain.simulate.oversubscribed`),
                      scheduler_slice_us (optional, default Linux's base slice for the node's cores:
                      how long a rank outside a synchronising group keeps a core on an
                      oversubscribed node), memory_gib (optional, 0 = unknown: memory per node, for
                      the sweep's check that a configuration fits), busy_compute_factor (written by
                      older benches only: read to derive the thread scaling,
                      `gcntrain.simulate.node`)
    [network]         mpi_rules (optional, "min"): whose collective algorithms are priced
                      ("mpich", "openmpi": `gcntrain.simulate.mpi_rules`)
    [network.intra]   latency_us, bandwidth_gbs (ranks of one node); optional eager_bytes,
                      rendezvous_us: a message above eager_bytes pays rendezvous_us more (MPI's
                      handshake before a large message)
    [network.inter]   latency_us, bandwidth_gbs (per rank pair), injection_gbs (per node)
    [network.topology] (optional) kind = "torus" (link_gbs, wraparound, unit, shape) or "fattree"
                      (taper, rack_nodes): the bisection all-to-all traffic crosses
                      (`gcntrain.simulate.topology`)
    [compute]         per core: spmm_gflops = {width = rate, ...} (2 * nnz * width flops / s),
                      gemm_gflops (a number, or {kn = rate, ...} by the product k * n of a GEMM's
                      two short dimensions: (m x k) @ (k x n) and its transposed forms),
                      quant_gelems (elements quantized or dequantized / s), other_gelems (the
                      model's element-wise work: local rows x the sum of the layer widths, per
                      epoch, / s), call_overhead_us (per Ops call on one thread),
                      call_overhead_all_us (optional: per call with a thread on every core; linear
                      between), mpi_op_us (optional: what each MPI operation costs a rank beyond the
                      link model), spmm_row_ns (optional: {width = ns, ...}, what an SpMM kernel
                      spends on each row it sweeps, whatever its entries; with it, spmm_gflops is
                      the rate per stored entry net of the rows; an older profile without it has the
                      row sweep folded into its rates at its bench graphs' density, and prices rows
                      at zero)
    [compute.threads] (optional) spmm, gemm, other = {T = S(T), ...}: one process's
                      throughput with T threads over one thread's; [compute.node]
                      (optional) the same for T one-thread processes at once (the node
                      shared by its ranks); default: the threads' tables
    [device]          (optional) the node's GPUs, for ``simulate --device gpu``: count (GPUs per
                      node: one rank each by default), model (optional string), memory_gib (per
                      GPU), memory_bandwidth_gbs (per GPU: the rate of a call's streamed bytes),
                      spmm_gflops, spmm_row_ns (optional) and gemm_gflops per GPU as in [compute],
                      other_gelems (element-wise work, quantization included), launch_us (optional:
                      what each Ops call costs on the device beyond its kernels' work)
    [device.host_link] kind ("pcie" or "nvlink"), latency_us, bandwidth_gbs: the host <->
                      device link a message staged through host buffers crosses twice

A rank computes at its one-core rates times S(t) of its t threads, slowed while the node's
other ranks compute (`gcntrain.simulate.node`); a profile without the tables derives them
(an older bench's ``busy_compute_factor``, else a roofline of the node's bandwidth). On its
GPUs (`on_device`) a rank computes at its GPU's rates, alone on it.

`load_machine` takes ``local``, a shipped name or a path; any problem is one `InputError`
line naming the file and the key."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from gcntrain.errors import InputError
from gcntrain.simulate.mpi_rules import rules_of
from gcntrain.simulate.node import (
    ELEMENTWISE_BYTES,
    KINDS,
    SPMM_BYTES_PER_FLOP,
    ThreadScaling,
    derive_scaling,
    linear,
    threads_per_rank,
)
from gcntrain.simulate.topology import Topology, parse_topology

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib

#: the shipped profiles
MACHINES_DIR = Path(__file__).resolve().parent / "machines"


@dataclass(frozen=True)
class Link:
    """Point-to-point cost ``alpha + nbytes * beta`` (seconds, seconds per byte), plus
    `rendezvous` seconds for a message of more than `eager` bytes (MPI sends such messages
    only after a handshake with the receiver; 0: no such threshold)."""

    alpha: float
    beta: float
    eager: float = 0.0
    rendezvous: float = 0.0

    def latency(self, nbytes) -> np.ndarray:
        """Seconds of one message of `nbytes` bytes besides its bytes (array)."""
        n = np.asarray(nbytes, dtype=np.float64)
        if self.rendezvous <= 0:
            return np.full(n.shape, self.alpha)
        return self.alpha + np.where(n > self.eager, self.rendezvous, 0.0)


class KernelRates:
    """The kernel rates a `Machine` (per core) and a `Device` (per GPU) share: SpMM flops per
    second by dense width, the cost per row an SpMM kernel sweeps, GEMM flops per second by
    k * n; the class using it has the fields ``spmm_widths``, ``spmm_rates``,
    ``spmm_row_widths``, ``spmm_row_seconds``, ``gemm_points`` and ``gemm_rates``."""

    def spmm_rate(self, width) -> np.ndarray:
        """SpMM flops per second at dense `width` (array): interpolated in log2 of
        the width between the profile's points; constant above the widest; below the
        narrowest the time per stored entry stays the narrowest's (a narrow product is bound
        by reading the indices and values, not by its flops)."""
        w = np.maximum(np.asarray(width, dtype=np.float64), 1.0)
        rate = np.interp(np.log2(w), np.log2(self.spmm_widths), self.spmm_rates)
        w0 = float(self.spmm_widths[0])
        return np.where(w < w0, rate * w / w0, rate)

    def spmm_row_cost(self, width) -> np.ndarray:
        """Seconds per row an SpMM kernel sweeps at dense `width` (array), one core or GPU:
        interpolated in log2 of the width, constant beyond either end; zero for a profile
        without ``spmm_row_ns``."""
        w = np.maximum(np.asarray(width, dtype=np.float64), 1.0)
        if not self.spmm_row_widths:
            return np.zeros_like(w)
        return np.interp(np.log2(w), np.log2(self.spmm_row_widths), self.spmm_row_seconds)

    def gemm_rate(self, kn) -> np.ndarray:
        """GEMM flops per second (per core or GPU) for products whose two short dimensions multiply
        to `kn` (array): interpolated in log2 of kn between the profile's points, constant
        beyond either end (one point: a constant rate)."""
        kn = np.log2(np.maximum(np.asarray(kn, dtype=np.float64), 1.0))
        return np.interp(kn, np.log2(self.gemm_points), self.gemm_rates)


@dataclass(frozen=True)
class Device(KernelRates):
    """The GPUs of a node (a profile's ``[device]`` table), rates per GPU in SI units."""

    count: int
    memory: float
    memory_bandwidth: float
    spmm_widths: tuple[int, ...]
    spmm_rates: tuple[float, ...]
    gemm_points: tuple[int, ...]
    gemm_rates: tuple[float, ...]
    other_rate: float
    #: seconds each Ops call costs on the device beyond its kernels' work (launches, the
    #: stream's synchronisation)
    launch: float
    #: the host <-> device link a staged message crosses twice (host buffer out, in)
    host_link: Link
    #: what the host link is (``pcie``, ``nvlink``) and the GPU (for the reader)
    link_kind: str = "pcie"
    model: str = ""
    spmm_row_widths: tuple[int, ...] = ()
    spmm_row_seconds: tuple[float, ...] = ()

    @property
    def quant_rate(self) -> float:
        """Elements quantized or dequantized per second: the element-wise rate."""
        return self.other_rate

    def staged(self, link: Link) -> Link:
        """`link` for messages staged through host buffers: each message's bytes also cross
        the host link twice (device to host at the sender, host to device at the
        receiver), each copy with its latency."""
        return replace(
            link,
            alpha=link.alpha + 2.0 * self.host_link.alpha,
            beta=link.beta + 2.0 * self.host_link.beta,
        )


@dataclass(frozen=True)
class Machine(KernelRates):
    """A machine profile (see the module docstring); rates in SI units (bytes, seconds)."""

    name: str
    description: str
    sources: tuple[str, ...]
    cores: int
    ranks_per_node: int
    memory_bandwidth: float
    intra: Link
    inter: Link
    injection: float
    spmm_widths: tuple[int, ...]
    spmm_rates: tuple[float, ...]
    gemm_points: tuple[int, ...]
    gemm_rates: tuple[float, ...]
    quant_rate: float
    other_rate: float
    call_overhead: float
    oversubscribed_sync: float = 0.0
    #: what a synchronising step over twice the cores in ranks costs at least on an
    #: oversubscribed node (a waiting rank sleeps, and wakes no sooner than the kernel's
    #: timer allows); smaller groups pay it by wake-up rounds (`simulate.oversubscribed`)
    oversubscribed_floor: float = 0.0
    #: compute between synchronisations at which the oversubscribed cost saturates (0: constant)
    oversubscribed_slice: float = 0.0
    #: how long a runnable rank keeps a core once it has it (0: Linux's default base slice
    #: for the node's cores, `gcntrain.simulate.oversubscribed.scheduler_slice`)
    scheduler_slice: float = 0.0
    #: bytes of memory per node (0: unknown)
    memory: float = 0.0
    #: cost per Ops call with a thread on every core (default: `call_overhead`)
    call_overhead_all: float = 0.0
    #: what each MPI operation a rank makes costs it beyond the link model (the counted
    #: communication wrappers around the call)
    mpi_op: float = 0.0
    #: {kind: ThreadScaling}: one process's throughput with T threads over one thread's
    threads: dict = field(default_factory=dict)
    #: {kind: ThreadScaling}: the node's throughput with T one-thread processes busy over one's
    node_scaling: dict = field(default_factory=dict)
    #: where `threads` came from (measured, or how it was derived)
    threads_source: str = ""
    #: bytes per second one core streams (0: the node's ``memory_bandwidth``)
    core_bandwidth: float = 0.0
    #: ({width}, {seconds}): an SpMM kernel's cost per row it sweeps, by dense width (empty:
    #: an older profile, whose rates include the row sweep)
    spmm_row_widths: tuple[int, ...] = ()
    spmm_row_seconds: tuple[float, ...] = ()
    #: the network's shared middle (`gcntrain.simulate.topology`)
    topology: Topology = field(default_factory=Topology)
    #: whose collective algorithms are priced (`gcntrain.simulate.mpi_rules`)
    mpi_rules: str = "min"
    #: the node's GPUs (the optional ``[device]`` table; None: a profile without one)
    device: Device | None = None
    #: whether a plan's ranks compute on the GPUs (`on_device`: ``simulate --device gpu``)
    on_gpu: bool = False
    path: str = ""
    #: when and by what gcntrain `gcntrain bench` measured it (empty: not recorded)
    measured: str = ""
    measured_by: str = ""

    def cores_per_rank(self, ranks_per_node: int | None = None) -> float:
        """Threads each rank computes with: its share of the node's cores (the runtime gives
        each rank ``cores // k`` threads; oversubscribed ranks share the cores)."""
        return threads_per_rank(self.cores, int(ranks_per_node or self.ranks_per_node))

    def overhead(self, threads: float) -> float:
        """Cost per Ops call of a rank with `threads` threads: linear between the one-thread
        and the all-core figures."""
        top = self.call_overhead_all or self.call_overhead
        f = 0.0
        if self.cores > 1:
            f = min(max((threads - 1.0) / (self.cores - 1.0), 0.0), 1.0)
        return self.call_overhead + f * (top - self.call_overhead)

    def scaling(self, kind: str) -> ThreadScaling:
        """One rank's S(t) of `kind` (``spmm``, ``gemm``, ``other``) over its threads
        (`gcntrain.simulate.node`)."""
        return self.threads.get(kind) or linear(self.cores)

    def sharing(self, kind: str) -> ThreadScaling:
        """The node's S(T) of `kind` over T busy cores of several processes."""
        return self.node_scaling.get(kind) or self.scaling(kind)

    def rank_bandwidth(self, ranks_per_node: int, threads: float = 1.0) -> float:
        """Bytes per second one rank of `ranks_per_node` streams with `threads` threads
        while the others stream too (`bandwidth_share`)."""
        core = self.core_bandwidth or self.memory_bandwidth
        return bandwidth_share(core, self.memory_bandwidth, ranks_per_node, threads)

    def inter_link(self, ranks_per_node: int | None = None) -> Link:
        """The inter-node link of one rank when `ranks_per_node` ranks share the node's
        injection bandwidth: the slower of its pair bandwidth and its share."""
        k = int(ranks_per_node or self.ranks_per_node)
        return replace(self.inter, beta=max(self.inter.beta, k / self.injection))


def on_device(machine: Machine, device: str = "cpu") -> Machine:
    """`machine` as a plan on `device` prices it (``simulate --device``): ``cpu`` as it
    is; ``gpu`` on its ``[device]`` table, one rank per GPU by default; `InputError` (one
    line) for a profile without one."""
    if device == "cpu":
        return machine
    if device != "gpu":
        raise InputError(f"--device must be cpu or gpu for a plan, got {device!r}")
    if machine.device is None:
        raise InputError(
            f"--device gpu: machine profile {machine.name!r} has no [device] table "
            "(`gcntrain bench --device gpu` measures one; docs/simulator.md)",
            machine.path or None,
        )
    return replace(machine, on_gpu=True, ranks_per_node=machine.device.count)


def bandwidth_share(core: float, node: float, ranks_per_node: int, threads: float = 1.0):
    """Bytes per second one of `ranks_per_node` ranks streams with `threads` threads while
    the others stream too: its threads' own rate (`core` each), capped by its share of the
    node's bandwidth `node`."""
    return min(core * max(threads, 1.0), node / max(int(ranks_per_node), 1))


def shipped() -> list[str]:
    """Names of the shipped profiles."""
    return sorted(p.stem for p in MACHINES_DIR.glob("*.toml"))


def _get(d: dict, key: str, where: str, path: str, kind=float):
    if key not in d:
        raise InputError(f"machine profile lacks {where}{key}", path)
    v = d[key]
    if kind is str:
        if not isinstance(v, str):
            raise InputError(f"machine profile: {where}{key} must be a string", path)
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v <= 0:
        raise InputError(f"machine profile: {where}{key} must be a positive number", path)
    if kind is int:
        if int(v) != v:
            raise InputError(f"machine profile: {where}{key} must be an integer", path)
        return int(v)
    return float(v)


def _text(d: dict, key: str, path: str) -> str:
    """A top-level string that may be absent ("")."""
    v = d.get(key, "")
    if not isinstance(v, str):
        raise InputError(f"machine profile: {key} must be a string", path)
    return v


def _optional(d: dict, key: str, where: str, path: str) -> float:
    """A non-negative number that may be absent (0)."""
    v = d.get(key, 0.0)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v) or v < 0:
        raise InputError(f"machine profile: {where}{key} must be a number >= 0", path)
    return float(v)


def _table(d: dict, key: str, where: str, path: str) -> dict:
    v = d.get(key)
    if not isinstance(v, dict):
        raise InputError(f"machine profile lacks the table [{where}{key}]", path)
    return v


def _rate_table(
    table: dict,
    key: str,
    keys_are: str,
    small: str,
    path: str,
    unit: float = 1e9,
    where: str = "compute.",
) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """(points, values x `unit`) of the table `where` + `key` ({point = value, ...};
    GFLOP/s by default): points are integers (`keys_are` names them in errors) >= 1
    (`small` names them then), sorted; values positive."""
    k = where + key
    try:
        points = tuple(sorted(int(x) for x in table))
    except ValueError:
        raise InputError(f"machine profile: {k} keys must be {keys_are}", path) from None
    if not points or points[0] < 1:
        raise InputError(f"machine profile: {k} {small} must be >= 1", path)
    if points[-1] > 2**40:
        raise InputError(f"machine profile: {k} {small} must be <= 2**40", path)
    return points, tuple(_get(table, str(p), f"{k}.", path) * unit for p in points)


def _gemm_table(
    comp: dict, path: str, where: str = "compute."
) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """(kn points, flops / s) of `where` gemm_gflops: a number (one point) or a table."""
    v = comp.get("gemm_gflops")
    if not isinstance(v, dict):
        return (1,), (_get(comp, "gemm_gflops", where, path) * 1e9,)
    return _rate_table(v, "gemm_gflops", "k * n", "keys", path, where=where)


def _spmm_tables(comp: dict, path: str, where: str = "compute."):
    """(widths, flops / s, row widths, seconds per row) of `where` spmm_gflops and the
    optional spmm_row_ns."""
    spmm = comp.get("spmm_gflops")
    if not isinstance(spmm, dict) or not spmm:
        raise InputError(f"machine profile lacks {where}spmm_gflops {{width = rate, ...}}", path)
    widths, rates = _rate_table(spmm, "spmm_gflops", "widths", "widths", path, where=where)
    row_widths, row_ns = (), ()
    if "spmm_row_ns" in comp:
        if not isinstance(comp["spmm_row_ns"], dict) or not comp["spmm_row_ns"]:
            raise InputError(
                f"machine profile: {where}spmm_row_ns must be {{width = ns, ...}}", path
            )
        row_widths, row_ns = _rate_table(
            comp["spmm_row_ns"], "spmm_row_ns", "widths", "widths", path, 1e-9, where
        )
    return widths, rates, row_widths, row_ns


def parse_machine(text: str, path: str = "<profile>") -> Machine:
    """A `Machine` from the TOML text of a profile (`path` names it in errors)."""
    from gcntrain.simulate.profile_keys import check_known, tracked

    try:
        d = tracked(tomllib.loads(text))
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"malformed machine profile (TOML: {e})", path) from None
    name = _get(d, "name", "", path, str)
    sources = d.get("sources", [])
    if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
        raise InputError("machine profile: sources must be a list of strings", path)
    node = _table(d, "node", "", path)
    net = _table(d, "network", "", path)
    intra = _table(net, "intra", "network.", path)
    inter = _table(net, "inter", "network.", path)
    comp = _table(d, "compute", "", path)
    widths, rates, row_widths, row_ns = _spmm_tables(comp, path)
    gemm_points, gemm_rates = _gemm_table(comp, path)

    def link(t: dict, where: str) -> Link:
        lat = _get(t, "latency_us", where, path) * 1e-6
        return Link(
            lat,
            1.0 / (_get(t, "bandwidth_gbs", where, path) * 1e9),
            _optional(t, "eager_bytes", where, path),
            _optional(t, "rendezvous_us", where, path) * 1e-6,
        )

    cores = _get(node, "cores", "node.", path, int)
    busy = (
        _get(node, "busy_compute_factor", "node.", path) if "busy_compute_factor" in node else None
    )
    bandwidth = _get(node, "memory_bandwidth_gbs", "node.", path) * 1e9
    core_bandwidth = _optional(node, "core_bandwidth_gbs", "node.", path) * 1e9
    other_rate = _get(comp, "other_gelems", "compute.", path) * 1e9
    if "node" in comp and "threads" not in comp:
        raise InputError("machine profile: compute.node needs compute.threads beside it", path)
    if "threads" in comp:
        threads = _threads_table(comp["threads"], cores, "threads", path)
        node_scaling = threads
        how = "measured"
        if "node" in comp:
            node_scaling = _threads_table(comp["node"], cores, "node", path)
    else:
        demand = {
            "spmm": float(np.interp(4.0, np.log2(widths), rates)) * SPMM_BYTES_PER_FLOP,
            "other": other_rate * ELEMENTWISE_BYTES,
        }
        threads, how = derive_scaling(cores, busy, bandwidth, demand)
        node_scaling = threads
    machine = Machine(
        name=name,
        description=str(d.get("description", "")),
        sources=tuple(sources),
        cores=cores,
        ranks_per_node=_get(node, "ranks", "node.", path, int),
        memory_bandwidth=bandwidth,
        intra=link(intra, "network.intra."),
        inter=link(inter, "network.inter."),
        injection=_get(inter, "injection_gbs", "network.inter.", path) * 1e9,
        spmm_widths=widths,
        spmm_rates=rates,
        gemm_points=gemm_points,
        gemm_rates=gemm_rates,
        quant_rate=_get(comp, "quant_gelems", "compute.", path) * 1e9,
        other_rate=other_rate,
        call_overhead=_get(comp, "call_overhead_us", "compute.", path) * 1e-6,
        call_overhead_all=_optional(comp, "call_overhead_all_us", "compute.", path) * 1e-6,
        mpi_op=_optional(comp, "mpi_op_us", "compute.", path) * 1e-6,
        oversubscribed_sync=_optional(node, "oversubscribed_sync_us", "node.", path) * 1e-6,
        oversubscribed_slice=_optional(node, "oversubscribed_slice_us", "node.", path) * 1e-6,
        oversubscribed_floor=_optional(node, "oversubscribed_floor_us", "node.", path) * 1e-6,
        scheduler_slice=_optional(node, "scheduler_slice_us", "node.", path) * 1e-6,
        memory=_optional(node, "memory_gib", "node.", path) * 2**30,
        threads=threads,
        node_scaling=node_scaling,
        threads_source=how,
        core_bandwidth=core_bandwidth,
        spmm_row_widths=row_widths,
        spmm_row_seconds=row_ns,
        topology=parse_topology(net.get("topology"), path, _get),
        mpi_rules=rules_of(net, path),
        device=_device(d.get("device"), path),
        path=path,
        measured=_text(d, "measured", path),
        measured_by=_text(d, "measured_by", path),
    )
    check_known(d, path)  # after the parse: its look-ups are the keys a profile may hold
    return machine


def _device(v, path: str) -> Device | None:
    """The profile's ``[device]`` table (absent: None)."""
    if v is None:
        return None
    if not isinstance(v, dict):
        raise InputError("machine profile: device must be a table", path)
    w = "device."
    link = v.get("host_link")
    if not isinstance(link, dict):
        raise InputError("machine profile lacks the table [device.host_link]", path)
    kind = link.get("kind", "pcie")
    if kind not in ("pcie", "nvlink"):
        raise InputError(
            f"machine profile: device.host_link.kind must be pcie or nvlink, got {kind!r}", path
        )
    model = v.get("model", "")
    if not isinstance(model, str):
        raise InputError("machine profile: device.model must be a string", path)
    widths, rates, row_widths, row_ns = _spmm_tables(v, path, w)
    gemm_points, gemm_rates = _gemm_table(v, path, w)
    lw = "device.host_link."
    return Device(
        count=_get(v, "count", w, path, int),
        memory=_get(v, "memory_gib", w, path) * 2**30,
        memory_bandwidth=_get(v, "memory_bandwidth_gbs", w, path) * 1e9,
        spmm_widths=widths,
        spmm_rates=rates,
        gemm_points=gemm_points,
        gemm_rates=gemm_rates,
        other_rate=_get(v, "other_gelems", w, path) * 1e9,
        launch=_optional(v, "launch_us", w, path) * 1e-6,
        host_link=Link(
            _get(link, "latency_us", lw, path) * 1e-6,
            1.0 / (_get(link, "bandwidth_gbs", lw, path) * 1e9),
        ),
        link_kind=kind,
        model=model,
        spmm_row_widths=row_widths,
        spmm_row_seconds=row_ns,
    )


def _threads_table(v, cores: int, key: str, path: str) -> dict:
    """{kind: ThreadScaling} of compute.`key` ({kind = {threads = speedup, ...}}): every
    kind of `KINDS`, thread counts 1 to the node's cores, speedups positive."""
    if not isinstance(v, dict):
        raise InputError(f"machine profile: compute.{key} must be a table", path)
    out = {}
    for kind in KINDS:
        t = v.get(kind)
        if not isinstance(t, dict) or not t:
            raise InputError(
                f"machine profile lacks compute.{key}.{kind} {{threads = speedup, ...}}", path
            )
        pts, speedups = _rate_table(
            t, f"{key}.{kind}", "thread counts", "thread counts", path, unit=1.0
        )
        if pts[-1] > cores:
            raise InputError(
                f"machine profile: compute.{key}.{kind} names {pts[-1]} threads, more than "
                f"node.cores = {cores}",
                path,
            )
        out[kind] = ThreadScaling(tuple(map(float, pts)), speedups)
    return out
