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
