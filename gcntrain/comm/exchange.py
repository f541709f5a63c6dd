"""Exchange descriptions: who sends what, vectorised over all ranks (pure, except the `run*`
methods).

A scheme describes each communicating operation as a list of steps.  Each step is one
collective pattern over a family of disjoint groups of ranks (`Groups`: the world, or the
process rows / columns / fibers of a grid) and knows

* ``volumes() -> int64 (P, 4)``: bytes sent, bytes received, messages sent, messages
  received of every rank, under the counting convention of `gcntrain.comm.volume` (the one
  the runtime counters apply to the buffers they move; `tests/test_exchange.py` checks that
  the vectorised forms equal the scalar ones rank by rank);
* for the steps that iterate (`BcastStages`, point-to-point `Pairs`), ``run(...)``, which the
  runtime Ops call to execute the step on one rank: the step decides who sends what and in
  which order, the Ops supply the buffers and what to do with them.

Plans (`gcntrain.simulate.plan`) sum ``volumes()`` over the steps of every call.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from gcntrain.comm import volume as V


def _sum_by(index: np.ndarray, values, size: int) -> np.ndarray:
    """Exact int64 sums of `values` grouped by `index` (length `size`)."""
    out = np.zeros(size, dtype=np.int64)
    np.add.at(out, np.asarray(index, dtype=np.int64), np.asarray(values, dtype=np.int64))
    return out


def _count_by(index: np.ndarray, size: int) -> np.ndarray:
    return np.bincount(np.asarray(index, dtype=np.int64), minlength=size).astype(np.int64)


def _table(bs, br, ms, mr) -> np.ndarray:
    return np.stack([bs, br, ms, mr], axis=1).astype(np.int64)


@dataclass(frozen=True)
class Groups:
    """A family of disjoint groups covering ranks 0..P-1: rank r is member ``pos[r]`` of
    group ``gid[r]``."""

    gid: np.ndarray
    pos: np.ndarray

    @property
    def P(self) -> int:
        return int(self.gid.shape[0])

    @cached_property
    def sizes(self) -> np.ndarray:
        """(G,) members per group."""
        return _count_by(self.gid, int(self.gid.max(initial=-1)) + 1)

    @cached_property
    def _members(self) -> tuple[np.ndarray, np.ndarray]:
        order = np.lexsort((self.pos, self.gid))
        ptr = np.zeros(self.sizes.shape[0] + 1, dtype=np.int64)
        np.cumsum(self.sizes, out=ptr[1:])
        return order.astype(np.int64), ptr

    def rank_at(self, group, pos) -> np.ndarray:
        """World rank of member `pos` of group `group` (vectorised)."""
        order, ptr = self._members
        return order[ptr[np.asarray(group, dtype=np.int64)] + np.asarray(pos, dtype=np.int64)]

    def size_of_rank(self) -> np.ndarray:
        """(P,) size of each rank's group."""
        return self.sizes[self.gid]

    @staticmethod
    def world(P: int) -> Groups:
        return Groups(np.zeros(P, dtype=np.int64), np.arange(P, dtype=np.int64))

    @staticmethod
    def axis(dims: tuple[int, ...], axis: int) -> Groups:
        """Ranks of a row-major grid `dims` that differ only in coordinate `axis` (position =
        that coordinate); e.g. ``axis((pr, pc), 1)`` are the process rows."""
        P = int(np.prod(dims))
        c = np.stack(np.unravel_index(np.arange(P), tuple(dims)), axis=1).astype(np.int64)
        rest = np.delete(c, axis, axis=1)
        others = [d for k, d in enumerate(dims) if k != axis]
        gid = np.zeros(P, dtype=np.int64)
        for k, d in enumerate(others):
            gid = gid * d + rest[:, k]
        return Groups(gid, c[:, axis].copy())


@dataclass
class BcastStages:
    """Broadcast stages: stage s is a broadcast of ``nbytes[s]`` bytes from member
    ``root[s]`` of group ``group[s]`` to the rest of that group.  Stages of one group run in
    array order; empty stages (0 bytes) are skipped.  `window`: where a group lies on one
    node the runtime publishes its blocks through a node window (`gcntrain.comm.shared`)
    instead, one fence per product (the volumes are the same; the time model prices the
    fence)."""

    groups: Groups
    group: np.ndarray
    root: np.ndarray
    nbytes: np.ndarray
    window: bool = False

    def volumes(self) -> np.ndarray:
        g = self.groups
        P, G = g.P, g.sizes.shape[0]
        size = g.sizes[self.group]
        live = (self.nbytes > 0) & (size > 1)
        grp, b, sz = self.group[live], self.nbytes[live], size[live]
        roots = g.rank_at(grp, self.root[live])
        sent = _sum_by(roots, (sz - 1) * b, P)
        msent = _sum_by(roots, sz - 1, P)
        rooted_b = _sum_by(roots, b, P)
        rooted_n = _count_by(roots, P)
        recv = _sum_by(grp, b, G)[g.gid] - rooted_b
        mrecv = _count_by(grp, G)[g.gid] - rooted_n
        return _table(sent, recv, msent, mrecv)

    def stages_of(self, group: int) -> np.ndarray:
        """Indices of the stages of `group`, in order."""
        return np.flatnonzero(self.group == group)

    def run(
        self,
        comm,
        group: int,
        provide: Callable[[int], np.ndarray],
        consume: Callable[[int, np.ndarray], None],
        phase,
    ) -> None:
        """Execute the stages of `group` on one rank: `comm` is that group's communicator
        (rank = position); ``provide(s)`` returns the stage's buffer (the data at the root, a
        receive buffer elsewhere); ``consume(s, buf)`` uses it."""
        for s in self.stages_of(group):
            if self.nbytes[s] <= 0:
                continue
            buf = provide(int(s))
            comm.bcast(buf, int(self.root[s]), phase)
            consume(int(s), buf)

    def count_shared(self, comm, group: int, unit: int, phase) -> None:
        """Tally, on this member of `comm`, the broadcasts of `group` (sizes times `unit`
        bytes) whose blocks went through a node-shared window instead (`Comm.count_shared`):
        the volumes `run` and `run_ahead` count."""
        for s in self.stages_of(group):
            if self.nbytes[s] <= 0:  # skipped by `run`
                continue
            nbytes = int(self.nbytes[s]) * int(unit)
            vol = V.bcast(nbytes, comm.rank, comm.size, int(self.root[s]))
            comm.count_shared(vol, "bcast", phase)

    def run_ahead(
        self,
        comm,
        group: int,
        provide: Callable[[int, int], np.ndarray],
        consume: Callable[[int, np.ndarray], None],
        phase,
        first: int | None = None,
        depth: int = 2,
        finish: Callable[[], None] | None = None,
    ) -> None:
        """`run` with the broadcasts posted ahead as non-blocking point-to-point messages
        (`Comm.ibcast_flat`), so that a rank computes while the other blocks travel.  Every
        member posts the stages of `group` in array order, at most `depth` stages it
        receives in flight; ``provide(s, slot)`` returns the stage's buffer (the root's
        data, or receive buffer ``slot`` in ``range(depth)``, free again once its stage is
        consumed).  Stage `first` (one this rank roots, so its data is local) is consumed
        before the others, which follow in array order as they arrive; the rank's own sends
        are completed last (their receivers copy the data when they reach it, so waiting for
        them earlier would wait for the slowest receiver); ``finish()``, when given, runs once
        every received stage is consumed, before that.  The same messages as `run`; only the
        order of the consumer's work changes."""
        live = [int(s) for s in self.stages_of(group) if self.nbytes[s] > 0]
        me = comm.rank
        posted: dict[int, list] = {}
        free = list(range(depth - 1, -1, -1))
        slot_of: dict[int, int] = {}
        nxt = 0

        def post() -> None:
            nonlocal nxt
            while nxt < len(live):
                s = live[nxt]
                root = int(self.root[s])
                slot = -1
                if root != me:
                    if not free:
                        return
                    slot = slot_of[s] = free.pop()
                posted[s] = comm.ibcast_flat(provide(s, slot), root, s % 32768, phase)
                nxt += 1

        post()
        if first is not None and first in live:
            consume(first, provide(first, -1))
        sends: list = []
        for s in live:
            if int(self.root[s]) == me:  # its receivers pull it: complete it at the end
                sends += posted.pop(s)
                if s != first:
                    consume(s, provide(s, -1))
                continue
            comm.waitall(posted.pop(s), phase)
            consume(s, provide(s, slot_of[s]))
            free.append(slot_of.pop(s))
            post()
        if finish is not None:
            finish()
        comm.waitall(sends, phase)


@dataclass
class Allreduce:
    """One Allreduce in every group: ``nelems[g]`` elements of ``itemsize`` bytes."""

    groups: Groups
    nelems: np.ndarray
    itemsize: int

    def volumes(self) -> np.ndarray:
        g = self.groups
        G = g.size_of_rank()
        m = np.asarray(self.nelems, dtype=np.int64)[g.gid]
        base, extra = m // np.maximum(G, 1), m % np.maximum(G, 1)
        own = base + (g.pos < extra)
        nz_others = np.minimum(m, G) - (own > 0)
        live = (G > 1) & (m > 0)
        b = np.where(live, self.itemsize * ((m - own) + (G - 1) * own), 0)
        n = np.where(live, nz_others + (G - 1) * (own > 0), 0)
        return _table(b, b, n, n)


@dataclass
class Allgatherv:
    """One Allgatherv in every group: rank r contributes ``nbytes[r]`` bytes."""

    groups: Groups
    nbytes: np.ndarray

    def volumes(self) -> np.ndarray:
        g = self.groups
        G, Gn = g.size_of_rank(), g.sizes.shape[0]
        b = np.asarray(self.nbytes, dtype=np.int64)
        tot = _sum_by(g.gid, b, Gn)[g.gid]
        nz = _count_by(g.gid[b > 0], Gn)[g.gid]
        live = G > 1
        sent = np.where(live, (G - 1) * b, 0)
        ms = np.where(live & (b > 0), G - 1, 0)
        recv = np.where(live, tot - b, 0)
        mr = np.where(live, nz - (b > 0), 0)
        return _table(sent, recv, ms, mr)


@dataclass
class ReduceScatterv:
    """One Reduce-scatter in every group: rank r ends with its block of ``nbytes[r]`` bytes
    (the dual of `Allgatherv`)."""

    groups: Groups
    nbytes: np.ndarray

    def volumes(self) -> np.ndarray:
        return Allgatherv(self.groups, self.nbytes).volumes()[:, [1, 0, 3, 2]]


@dataclass
class Uniform:
    """Every member of every group sends ``nbytes`` to every other member (an Alltoall of
    fixed-size items, e.g. counts)."""

    groups: Groups
    nbytes: int

    def volumes(self) -> np.ndarray:
        G = self.groups.size_of_rank()
        live = (G > 1) & (self.nbytes > 0)
        b = np.where(live, (G - 1) * self.nbytes, 0)
        n = np.where(live, G - 1, 0)
        return _table(b, b, n, n)


#: rank pairs whose volumes `Pairs.volumes` adds up at once
PAIR_BLOCK = 1 << 22
#: `Pairs.kind` of point-to-point exchanges (Isend/Irecv), the communicators' counter kind
POINT_TO_POINT = "p2p"


@dataclass
class Pairs:
    """Sparse rank pairs: ``src[k]`` sends ``nbytes[k]`` bytes to ``dst[k]`` (an Alltoallv
    over the world when ``kind == "alltoallv"``, Isend/Irecv when ``kind == "p2p"``).  Pairs
    with src == dst or no bytes move nothing.  `window`: where every rank lies on one node
    the runtime publishes the rows through a node window (`gcntrain.comm.shared`) instead,
    one fence per product (the volumes are the same; the time model prices the fence)."""

    P: int
    src: np.ndarray
    dst: np.ndarray
    nbytes: np.ndarray
    kind: str = "alltoallv"
    ids: list = field(default_factory=list)
    window: bool = False

    def volumes(self) -> np.ndarray:
        out = np.zeros((self.P, 4), dtype=np.int64)
        n = int(np.asarray(self.src).shape[0])
        for a in range(0, n, PAIR_BLOCK):  # blocks of pairs: bounded temporaries, exact sums
            src, dst = self.src[a : a + PAIR_BLOCK], self.dst[a : a + PAIR_BLOCK]
            nbytes = self.nbytes[a : a + PAIR_BLOCK]
            live = (src != dst) & (nbytes > 0)
            s, d, b = src[live], dst[live], nbytes[live]
            out += _table(
                _sum_by(s, b, self.P),
                _sum_by(d, b, self.P),
                _count_by(s, self.P),
                _count_by(d, self.P),
            )
        return out

    def count_shared(self, comm, me: int, unit: int, phase) -> None:
        """Tally, on rank `me`, the messages of the pairs (sizes times `unit` bytes) whose
        rows went through a node-shared window instead (`Comm.count_shared`): the volumes
        `run_p2p` counts."""
        live = (self.src != self.dst) & (self.nbytes > 0)
        for k in np.flatnonzero(live & (self.dst == me)):
            comm.count_shared(V.recv(int(self.nbytes[k]) * int(unit)), "p2p", phase)
        for k in np.flatnonzero(live & (self.src == me)):
            comm.count_shared(V.send(int(self.nbytes[k]) * int(unit)), "p2p", phase)

    def run_p2p(
        self,
        comm,
        me: int,
        send_buf: Callable[[int], np.ndarray],
        recv_buf: Callable[[int], np.ndarray],
        local_work: Callable[[], None],
        consume: Callable[[int, np.ndarray], None],
        phase,
        tag: int = 7,
        finish: Callable[[], None] | None = None,
    ) -> None:
        """Execute the pairs that involve rank `me`: post every receive, send every message
        (``send_buf(k)``), do `local_work` while they travel, then ``consume(k, buf)`` the
        received messages in pair order, each as soon as it and every message before it
        have arrived (Waitany), so the sums are added in one fixed order and a run repeats
        bit for bit; then ``finish()`` when given (work that needs every message but not
        the sends' completion), and wait for the sends."""
        live = (self.src != self.dst) & (self.nbytes > 0)
        rk = np.flatnonzero(live & (self.dst == me))
        sk = np.flatnonzero(live & (self.src == me))
        bufs = [recv_buf(int(k)) for k in rk]
        rreqs = [comm.irecv(b, int(self.src[k]), tag, phase) for k, b in zip(rk, bufs)]
        sbufs = [send_buf(int(k)) for k in sk]
        sreqs = [comm.isend(b, int(self.dst[k]), tag, phase) for k, b in zip(sk, sbufs)]
        local_work()
        arrived = np.zeros(len(rreqs), dtype=bool)
        nxt = 0
        for _ in range(len(rreqs)):
            arrived[comm.waitany(rreqs, phase)] = True
            while nxt < len(rreqs) and arrived[nxt]:
                consume(int(rk[nxt]), bufs[nxt])
                nxt += 1
        if finish is not None:
            finish()
        comm.waitall(sreqs, phase)


def total(steps, P: int) -> np.ndarray:
    """Sum of the volumes of several steps over `P` ranks (an int64 (P, 4) array)."""
    out = np.zeros((P, 4), dtype=np.int64)
    for st in steps:
        out += st.volumes()
    return out
