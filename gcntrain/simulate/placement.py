"""Ranks on nodes: where each rank runs, how many threads it has, and what it shares with
the other ranks of its node (compute, memory bandwidth, the node's links) for the time
model (`gcntrain.simulate.timing`).  On a profile priced on its GPUs
(`gcntrain.simulate.machine.on_device`) a rank computes on a GPU of its node at the GPU's
rates (ranks beyond the node's GPUs share them in turn) and its messages are staged
through host buffers (`Device.staged`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from gcntrain.errors import InputError
from gcntrain.simulate.machine import Link, Machine
from gcntrain.simulate.node import fluid_finish


@dataclass(frozen=True)
class Placement:
    """Ranks on nodes: rank r on node ``r // ranks_per_node``."""

    P: int
    ranks_per_node: int
    machine: Machine

    @property
    def nodes(self) -> int:
        return -(-self.P // self.ranks_per_node)

    @property
    def node(self) -> np.ndarray:
        return np.arange(self.P, dtype=np.int64) // self.ranks_per_node

    @property
    def local_ranks(self) -> int:
        """Ranks sharing a node (fewer than ``ranks_per_node`` when P is smaller)."""
        return min(self.ranks_per_node, self.P)

    @property
    def intra(self) -> Link:
        """The intra-node link while every rank of the node copies: MPI moves a message
        within a node as a memory copy (read and write, two bytes of traffic per byte), so
        the node's ranks share its memory bandwidth; the slower of that share and the
        profile's link."""
        m = self.machine
        share = m.memory_bandwidth / (2.0 * self.local_ranks)
        return self._staged(replace(m.intra, beta=max(m.intra.beta, 1.0 / share)))

    @property
    def inter(self) -> Link:
        return self._staged(self.machine.inter_link(self.local_ranks))

    def _staged(self, link: Link) -> Link:
        """`link`, for ranks on GPUs with every message's two host-link copies."""
        return self.machine.device.staged(link) if self.gpu else link

    @property
    def gpu(self) -> bool:
        """Whether the ranks compute on the node's GPUs (``simulate --device gpu``)."""
        return self.machine.on_gpu and self.machine.device is not None

    @property
    def per_gpu(self) -> int:
        """Ranks that share one GPU at most (consecutive ranks of a node share where it
        runs more ranks than GPUs, as `gcntrain.device.choice.gpu_for_rank` assigns them)."""
        return math.ceil(self.local_ranks / self.machine.device.count) if self.gpu else 1

    @property
    def rates(self):
        """Whose kernel rates price the ranks' compute: the GPU's (`Device`) or one core's
        (`Machine`); both have ``spmm_rate``, ``spmm_row_cost``, ``gemm_rate``,
        ``quant_rate`` and ``other_rate``."""
        return self.machine.device if self.gpu else self.machine

    @property
    def call_cost(self) -> float:
        """Seconds each Ops call costs beyond its work: the rank's host threads' figure
        (`Machine.overhead`); on a GPU, one thread's plus the device's ``launch_us``."""
        m = self.machine
        return m.call_overhead + m.device.launch if self.gpu else m.overhead(self.cores)

    @property
    def cores(self) -> float:
        """Threads of one rank (`gcntrain.simulate.node.threads_per_rank`)."""
        return self.machine.cores_per_rank(self.local_ranks)

    def working(self, threads: float | None = None) -> float:
        """Threads of a rank that work: all of them, or at most `threads`."""
        return self.cores if threads is None else min(self.cores, threads)

    def speed(self, kind: str, threads: float | None = None) -> float:
        """How many cores' worth of `kind` work a rank does computing alone: S(t) of its t
        threads (`gcntrain.simulate.node`; `threads`: at most that many of them work); on
        a GPU 1 (the device's rates are a whole GPU's)."""
        if self.gpu:
            return 1.0
        return float(self.machine.scaling(kind)(self.working(threads)))

    def shared(self, kind: str, solo, threads: float | None = None) -> np.ndarray:
        """(P,) seconds of `kind` work that takes each rank `solo` seconds alone, while the
        other ranks of its node do theirs (`gcntrain.simulate.node.fluid_finish`;
        `threads`: at most that many of each rank's threads work); on GPUs, `solo` times
        the ranks sharing a GPU (they take turns)."""
        if self.gpu:
            return np.asarray(solo, np.float64) * float(self.per_gpu)
        m = self.machine
        return fluid_finish(
            np.asarray(solo, np.float64),
            self.node,
            m.sharing(kind),
            self.working(threads),
            m.cores,
            self.local_ranks,
        )

    @property
    def memory_rate(self) -> float:
        """Bytes per second one rank's single-threaded reduction streams while the node's
        other ranks stream too (`Machine.rank_bandwidth`)."""
        return self.machine.rank_bandwidth(self.local_ranks)

    @property
    def stream_rate(self) -> float:
        """Bytes per second one rank's threads stream while the others stream too (on a
        GPU: its share of the GPU's memory bandwidth)."""
        if self.gpu:
            return self.machine.device.memory_bandwidth / self.per_gpu
        return self.machine.rank_bandwidth(self.local_ranks, self.cores)

    @property
    def sync_cost(self) -> float:
        """What each synchronising step adds at most (the profile's oversubscribed figure
        when the node runs more ranks than cores, else nothing)."""
        return self.machine.oversubscribed_sync if self.oversubscribed else 0.0

    def sync_cost_for(self, since: np.ndarray) -> np.ndarray:
        """(P,) what each rank's next synchronising step adds, given the compute seconds it
        did since its previous one: busy-polling ranks on shared cores lose up to a scheduler
        slice to a partner still computing, so the cost grows with that compute up to the
        slice (``oversubscribed_slice_us``; without it, the constant `sync_cost`), on top of
        the profile's ``oversubscribed_floor_us`` (a waiting rank sleeps, and wakes no
        sooner than the kernel's timer allows)."""
        cost, tau = self.sync_cost, self.machine.oversubscribed_slice
        floor = self.machine.oversubscribed_floor if self.oversubscribed else 0.0
        since = np.asarray(since, np.float64)
        if cost == 0.0 or tau <= 0.0:
            return np.full(since.shape, cost + floor)
        return floor + cost * np.minimum(1.0, since / tau)

    @property
    def oversubscribed(self) -> bool:
        """Whether the node runs more ranks than cores."""
        return self.local_ranks > self.machine.cores


def placement(machine: Machine, P: int, nodes: int | None, ranks_per_node: int | None):
    """The `Placement` of `P` ranks from ``--nodes`` / ``--ranks-per-node`` (either, both or
    neither: the profile's ranks per node); `InputError` when they disagree with P."""
    if nodes is not None and ranks_per_node is not None and nodes * ranks_per_node != P:
        raise InputError(f"--nodes {nodes} x --ranks-per-node {ranks_per_node} is not --ranks {P}")
    if ranks_per_node is None:
        if nodes is not None:
            if P % nodes:
                raise InputError(f"--ranks {P} does not fill --nodes {nodes} evenly")
            ranks_per_node = P // nodes
        else:
            ranks_per_node = min(machine.ranks_per_node, P)
    if ranks_per_node < 1 or (nodes is not None and nodes < 1):
        raise InputError("--nodes and --ranks-per-node must be positive")
    return Placement(P, int(ranks_per_node), machine)
