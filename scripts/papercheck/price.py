"""Predictions behind a recipe: plans of the stand-ins priced by gcntrain's time model,
partition statistics from gcntrain's partitioners, single steps on a profile.

`Pricer.run` plans one `papercheck.rows.Run` (``gcntrain simulate``'s plan and time
model: `plan_training`, `TimeModel`) and keeps, for the median planned epoch, the critical
rank's parts (what dominates) and every rank's communication seconds; a run is planned once
per process whatever rows share it. What dominates is the largest part of the critical
rank's epoch (a compute kind, a named collective or waiting); where it is communication,
its latency share is the part that goes when the profile's per-message costs (its links'
``latency_us`` and rendezvous, ``mpi_op_us``) are set to zero and the epoch re-priced.

Two placements are this module's own (`socket_placement`): one rank on one socket of a node,
for the papers' single-socket baselines (gcntrain places a one-rank run alone on a whole
node).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from papercheck import standins
from papercheck.rows import Run

#: names of the breakdown's parts, as printed
PART_NAMES = {
    "spmm": "SpMM",
    "gemm": "GEMM",
    "quant": "quantization",
    "other": "element-wise",
    "bcast": "Bcast",
    "allreduce": "Allreduce",
    "allgather": "Allgather",
    "reduce_scatter": "Reduce_scatter",
    "alltoall": "Alltoall(v)",
    "p2p": "point-to-point",
    "wait": "waiting",
}


@dataclass
class Priced:
    """One run's prediction (median planned epoch).

    epoch: seconds; parts: the critical rank's seconds by kind (`PART_NAMES`); comm_max:
    the largest rank's communication seconds; latency: the share of the critical rank's
    communication that the profile's per-message costs make; plan_seconds: planning time.
    """

    epoch: float
    parts: dict
    comm_max: float
    latency: float
    plan_seconds: float
    notes: dict = field(default_factory=dict)

    @property
    def comm(self) -> float:
        """The critical rank's communication seconds."""
        return sum(v for k, v in self.parts.items() if k in _COMM)

    def dominant(self) -> str:
        """The largest part of the epoch, its share, and for communication its latency
        share: "Alltoall(v) 54% (latency 12%)"."""
        if not self.parts or self.epoch <= 0:
            return "-"
        k, v = max(self.parts.items(), key=lambda kv: kv[1])
        out = f"{PART_NAMES.get(k, k)} {100 * v / self.epoch:.0f}%"
        if k in _COMM and self.comm > 0:
            out += f" (latency {100 * self.latency:.0f}%)"
        return out


_COMM = ("bcast", "allreduce", "allgather", "reduce_scatter", "alltoall", "p2p")


def latency_free(machine):
    """`machine` without per-message costs: its links' latency and rendezvous and its MPI
    operations' software cost at zero (bandwidths, topology and compute unchanged)."""

    def link(lk):
        return replace(lk, alpha=0.0, rendezvous=0.0)

    return replace(machine, intra=link(machine.intra), inter=link(machine.inter), mpi_op=0.0)


def socket_placement(machine, ranks_per_node: int):
    """One rank alone on one of a node's `ranks_per_node` sockets (the others idle): the
    threads and memory share of one of `ranks_per_node` ranks, no rank beside it."""
    from gcntrain.simulate.placement import Placement

    class _Socket(Placement):
        @property
        def local_ranks(self) -> int:
            return self.ranks_per_node

    return _Socket(1, int(ranks_per_node), machine)


def place_of(run: Run, machine):
    from gcntrain.simulate.placement import placement

    if run.socket:
        return socket_placement(machine, run.rpn)
    return placement(machine, run.P, None, min(run.rpn, run.P))


def train_config(run: Run):
    """The `TrainConfig` of a run: its model, `run.epochs` epochs, evaluation only after the
    last (the papers time training epochs)."""
    from gcntrain.model.trainer import TrainConfig

    m = run.model
    return TrainConfig(
        model=m.name,
        aggregator=m.aggregator,
        hidden=list(m.hidden),
        norm=m.norm,
        epochs=run.epochs,
        eval_every=run.epochs,
        early_stopping=0,
    )


def _epoch_parts(sim, place, widths):
    """(median epoch's EpochTime, its index) as `gcntrain.simulate.timing.predict` picks
    it, and the model's epochs."""
    from gcntrain.simulate.timing import TimeModel

    eps = TimeModel(sim, place, widths).epochs()
    secs = np.array([e.seconds for e in eps])
    i = int(np.argsort(secs, kind="stable")[len(secs) // 2])
    return eps, i


class Pricer:
    """Plans and prices runs, each once; stand-ins and partitions from the cache."""

    def __init__(self, cache=standins.CACHE, log=standins._log):
        self.cache, self.log = cache, log
        self.runs: dict[Run, Priced] = {}
        self.machines: dict[str, object] = {}

    def machine(self, name: str):
        if name not in self.machines:
            from gcntrain.simulate.local import load_machine

            self.machines[name] = load_machine(name)
        return self.machines[name]

    def run(self, run: Run) -> Priced:
        if run not in self.runs:
            self.runs[run] = self._plan(run)
        return self.runs[run]

    def _plan(self, run: Run) -> Priced:
        from gcntrain.simulate.run import plan_training
        from gcntrain.simulate.target import PlanTarget

        path = standins.graph_path(run.graph, self.cache, self.log)
        part = None
        if run.partition is not None:
            part, _ = standins.partition_file(run.graph, run.partition, run.P, 0, self.cache)
            part = str(part)
        cfg = train_config(run)
        m = run.model
        target = PlanTarget(
            str(path), cfg, run.scheme, run.P, dict(run.options), part, 0, m.features, m.classes
        )
        t0 = time.perf_counter()
        sim = plan_training(target)
        seconds = time.perf_counter() - t0
        machine = self.machine(run.profile)
        widths = [sim.num_features, *[int(h) for h in cfg.hidden], sim.num_classes]
        eps, i = _epoch_parts(sim, place_of(run, machine), widths)
        mid = eps[i]
        r = int(np.argmax(mid.clock))
        parts = {k: float(v[r]) for k, v in mid.parts.items() if float(v[r]) > 0}
        comm_rank = sum(mid.parts[k] for k in _COMM if k in mid.parts)
        free, _ = _epoch_parts(sim, place_of(run, latency_free(machine)), widths)
        comm_free = sum(float(free[i].parts[k][r]) for k in _COMM if k in free[i].parts)
        comm = sum(v for k, v in parts.items() if k in _COMM)
        latency = max(0.0, 1.0 - comm_free / comm) if comm > 0 else 0.0
        epoch = float(np.median([e.seconds for e in eps]))
        self.log(f"  {run.describe()}: planned in {seconds:.0f} s, epoch {epoch * 1e3:.2f} ms")
        return Priced(epoch, parts, float(np.max(comm_rank)), latency, seconds)

    # -- partition statistics ----------------------------------------------------------

    def stat(self, params: dict) -> float:
        """A partition statistic (`papercheck.rows` ``stat`` recipes)."""
        g, method, P, stat = params["graph"], params["method"], params["P"], params["stat"]
        _, rep = standins.partition_file(g, method, P, 0, self.cache, self.log)
        if stat in ("single", "double"):
            key = "nnz_max_mean_single" if stat == "single" else "nnz_max_mean_double_uniform"
            return float(rep[key])
        if stat == "rows_with_halo":
            return float(standins.STANDINS[g].n + rep["volume_total"])
        value = float(rep[stat])
        if params.get("base"):
            _, base = standins.partition_file(g, params["base"], P, 0, self.cache, self.log)
            return value / float(base[stat])
        return value

    # -- single steps ------------------------------------------------------------------

    def alltoall(self, gb: float, ranks: int, rpn: int) -> tuple[float, str]:
        """(seconds, what dominates) of one Alltoallv of `gb` GB spread evenly over the
        ordered pairs of `ranks` fugaku ranks, `rpn` per node."""
        m = self.machine("fugaku")
        total, bis = price_alltoall(gb, m, ranks, rpn)
        free, _ = price_alltoall(gb, latency_free(m), ranks, rpn)
        bound = "bisection-bound" if bis > 0 else "link-bound"
        return total, f"Alltoall(v) 100%, {bound} (latency {100 * (1 - free / total):.0f}%)"

    def put(self) -> tuple[float, str]:
        """(seconds, what dominates) of one 8-byte message between ranks on two fugaku
        nodes."""
        from gcntrain.comm.exchange import POINT_TO_POINT, Pairs
        from gcntrain.simulate.placement import placement
        from gcntrain.simulate.timing import step_timing

        m = self.machine("fugaku")
        place = placement(m, 2, 2, 1)
        one = np.array([0]), np.array([1]), np.array([8])
        step = Pairs(2, *one, kind=POINT_TO_POINT)
        start, cost, _ = step_timing(step, place, np.zeros(2))
        t = float((start + cost).max())
        _, free, _ = step_timing(step, placement(latency_free(m), 2, 2, 1), np.zeros(2))
        return t, f"point-to-point (latency {100 * (1 - float(free.max()) / t):.0f}%)"

    def injection(self) -> tuple[float, str]:
        """(bytes per second, what dominates) one fugaku node injects when each of its
        ranks sends 64 MiB to a rank on each of 6 other nodes at once."""
        from gcntrain.comm.exchange import POINT_TO_POINT, Pairs
        from gcntrain.simulate.placement import placement
        from gcntrain.simulate.timing import step_timing

        m = self.machine("fugaku")
        k = m.ranks_per_node
        P = 7 * k
        src = np.repeat(np.arange(k), 6)
        dst = (np.tile(np.arange(1, 7), k)) * k + np.repeat(np.arange(k), 6)
        nbytes = np.full(src.shape[0], 64 << 20)
        step = Pairs(P, src, dst, nbytes, kind=POINT_TO_POINT)
        start, cost, _ = step_timing(step, placement(m, P, 7, k), np.zeros(P))
        t = float((start + cost)[:k].max())
        return float(nbytes.sum()) / t, "point-to-point (the node's links and injection)"


def price_alltoall(gb: float, machine, ranks: int = 2048, per_node: int = 4):
    """(seconds, the same where the topology's bisection sets them, else 0) of one Alltoallv
    of `gb` GB in all over `ranks` ranks on `machine` (SuperGCN Table 5's pricing)."""
    from gcntrain.comm.exchange import Groups, Uniform
    from gcntrain.simulate.timing import placement, step_timing
    from gcntrain.simulate.topology import Topology

    place = placement(machine, ranks, None, per_node)
    per_pair = int(round(gb * 1e9 / (ranks * (ranks - 1))))
    step = Uniform(Groups.world(ranks), per_pair)
    start, cost, _ = step_timing(step, place, np.zeros(ranks))
    flat = placement(replace(machine, topology=Topology()), ranks, None, per_node)
    _, cost_flat, _ = step_timing(step, flat, np.zeros(ranks))
    total = float((start + cost).max())
    return total, total if total > float(cost_flat.max()) else 0.0
