"""The vectorised exchange steps equal the scalar counting convention rank by rank.

`gcntrain.comm.volume` is what the runtime counters apply to every buffer they move; the
steps of `gcntrain.comm.exchange` price the same collectives for all ranks at once.  Each
test draws random groups and sizes and compares every rank's row with the scalar function.
"""

from __future__ import annotations

import numpy as np
import pytest

from gcntrain.comm import volume as V
from gcntrain.comm.exchange import (
    Allgatherv,
    Allreduce,
    BcastStages,
    Groups,
    Pairs,
    ReduceScatterv,
    Uniform,
)

SHAPES = [(1, 1), (1, 5), (5, 1), (3, 4), (2, 3)]


def members(g: Groups, r: int) -> np.ndarray:
    """World ranks of rank r's group, ordered by position."""
    same = np.flatnonzero(g.gid == g.gid[r])
    return same[np.argsort(g.pos[same])]


@pytest.mark.parametrize("dims", SHAPES)
@pytest.mark.parametrize("axis", [0, 1])
def test_groups_axis_places_ranks_row_major(dims, axis):
    g = Groups.axis(dims, axis)
    P = dims[0] * dims[1]
    for r in range(P):
        i, j = divmod(r, dims[1])
        assert g.pos[r] == (i if axis == 0 else j)
        mem = members(g, r)
        assert len(mem) == dims[axis]
        assert all(divmod(int(q), dims[1])[1 - axis] == (j if axis == 0 else i) for q in mem)
        assert g.rank_at(g.gid[r], g.pos[r]) == r


@pytest.mark.parametrize("dims", SHAPES)
@pytest.mark.parametrize("axis", [0, 1])
def test_bcast_stages(dims, axis):
    rng = np.random.default_rng(sum(dims) * 7 + axis)
    g = Groups.axis(dims, axis)
    G, size = g.sizes.shape[0], dims[axis]
    S = 9
    group = rng.integers(0, G, S)
    root = rng.integers(0, size, S)
    nbytes = rng.integers(0, 3, S) * rng.integers(1, 100, S)
    got = BcastStages(g, group, root, nbytes).volumes()
    for r in range(g.P):
        want = V.zero()
        for s in range(S):
            if group[s] == g.gid[r]:
                want += V.bcast(int(nbytes[s]), int(g.pos[r]), size, int(root[s]))
        assert np.array_equal(got[r], want), (r, got[r], want)


@pytest.mark.parametrize("dims", SHAPES)
@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("itemsize", [4, 8])
def test_allreduce_all_element_counts(dims, axis, itemsize):
    g = Groups.axis(dims, axis)
    size = dims[axis]
    for m in (0, 1, size - 1, size, size + 3, 7 * size + 2):
        m = max(m, 0)
        nelems = np.full(g.sizes.shape[0], m)
        got = Allreduce(g, nelems, itemsize).volumes()
        for r in range(g.P):
            want = V.allreduce(m, itemsize, int(g.pos[r]), size)
            assert np.array_equal(got[r], want), (m, r, got[r], want)


@pytest.mark.parametrize("dims", SHAPES)
@pytest.mark.parametrize("axis", [0, 1])
def test_allgatherv_and_reduce_scatterv(dims, axis):
    rng = np.random.default_rng(3 + axis)
    g = Groups.axis(dims, axis)
    nbytes = rng.integers(0, 2, g.P) * rng.integers(1, 50, g.P)
    ag = Allgatherv(g, nbytes).volumes()
    rs = ReduceScatterv(g, nbytes).volumes()
    for r in range(g.P):
        blocks = nbytes[members(g, r)]
        assert np.array_equal(ag[r], V.allgatherv(blocks, int(g.pos[r])))
        assert np.array_equal(rs[r], V.reduce_scatterv(blocks, int(g.pos[r])))


def test_uniform_is_an_alltoall_of_fixed_items():
    g = Groups.world(5)
    got = Uniform(g, 8).volumes()
    for r in range(5):
        assert np.array_equal(got[r], V.alltoallv(np.full(5, 8), np.full(5, 8), r))


def test_pairs_equal_alltoallv_rank_by_rank():
    rng = np.random.default_rng(11)
    P = 6
    M = rng.integers(0, 3, (P, P)) * rng.integers(1, 40, (P, P))
    src, dst = np.nonzero(np.ones((P, P), dtype=bool))
    got = Pairs(P, src, dst, M[src, dst]).volumes()
    for r in range(P):
        assert np.array_equal(got[r], V.alltoallv(M[r, :], M[:, r], r))


class _PostingComm:
    """A one-rank stand-in for `Comm` that records the broadcasts `run_ahead` posts and
    completes them only when waited for (a member that never progresses on its own)."""

    def __init__(self, rank: int):
        self.rank = rank
        self.log: list[tuple] = []
        self.in_flight: set[int] = set()
        self.most_in_flight = 0

    def ibcast_flat(self, buf, root, tag, phase):
        self.log.append(("post", tag, root))
        if root != self.rank:
            self.in_flight.add(tag)
            self.most_in_flight = max(self.most_in_flight, len(self.in_flight))
        return [tag]

    def waitall(self, reqs, phase):
        for tag in reqs:
            self.log.append(("wait", tag))
            self.in_flight.discard(tag)


@pytest.mark.parametrize("me", [0, 2, 5])
@pytest.mark.parametrize("depth", [1, 2, 3])
def test_run_ahead_posts_in_order_within_depth(me, depth):
    """Every member posts the stages in array order (MPI's rule for collectives), never has
    more than `depth` receives in flight, consumes its own stage first and every other once,
    after its wait, in stage order, and completes its own send last; empty stages are
    skipped; a receive slot is reused only once its stage is consumed."""
    P = 6
    nbytes = np.array([5, 3, 0, 4, 7, 2], dtype=np.int64)
    stages = BcastStages(Groups.world(P), np.zeros(P, np.int64), np.arange(P), nbytes)
    comm = _PostingComm(me)
    consumed, slots = [], {}

    def provide(s, slot):
        if s != me:
            assert 0 <= slot < depth
            busy = [t for t, k in slots.items() if k == slot and t not in consumed]
            assert busy in ([], [s])  # the slot is free, or already this stage's
            slots[s] = slot
        return np.zeros(int(nbytes[s]))

    def consume(s, buf):
        assert s not in consumed and buf.shape == (int(nbytes[s]),)
        if s != me:
            assert ("wait", s) in comm.log
        consumed.append(s)

    first = me if nbytes[me] else None
    stages.run_ahead(comm, 0, provide, consume, "x", first=first, depth=depth)
    live = [s for s in range(P) if nbytes[s]]
    assert [e[1] for e in comm.log if e[0] == "post"] == live
    # receives completed in stage order, the rank's own send last
    own = [me] if nbytes[me] else []
    assert [e[1] for e in comm.log if e[0] == "wait"] == [s for s in live if s != me] + own
    assert comm.most_in_flight <= depth and not comm.in_flight
    others = [s for s in live if s != me]
    assert consumed == ([me] if first is not None else []) + others
