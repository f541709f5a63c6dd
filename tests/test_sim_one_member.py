"""Collectives over one member (issue 33): the runtime still calls its counted layer for
them (2D's broadcasts down a one-rank process column at ``--grid 1x2``, 3D's row gathers and
reduce-scatters at ``1x1x2``, Plexus's one-rank axes), which copies the buffer of an
Allreduce, Allgather or Reduce-scatter into its result and leaves a broadcast in place; the
time model prices that copy (and nothing in a one-rank job, whose runtime sums in place)."""

from __future__ import annotations

import numpy as np

from gcntrain.comm.exchange import Allgatherv, Allreduce, BcastStages, Groups, ReduceScatterv
from gcntrain.simulate import collectives as C
from gcntrain.simulate.machine import parse_machine
from gcntrain.simulate.timing import Placement, step_timing
from tests.test_machine import GOOD


def _machine():
    return parse_machine(GOOD.replace("cores = 8", "cores = 2"), "one-member")


def test_a_one_member_collective_copies_its_bytes_and_a_broadcast_does_not():
    m = _machine()
    place = Placement(2, 2, m)
    alone = Groups(np.array([0, 1]), np.array([1, 1]))  # each rank its own group
    clock = np.array([0.0, 2.0])
    rate = place.memory_rate
    want = 2.0 * np.array([800.0, 400.0]) / rate  # read and write each byte
    for step in (
        Allreduce(alone, np.array([100, 50]), 8),
        Allgatherv(alone, np.array([800, 400])),
        ReduceScatterv(alone, np.array([800, 400])),
    ):
        start, cost, _ = step_timing(step, place, clock)
        np.testing.assert_allclose(start, clock)  # nobody to wait for
        np.testing.assert_allclose(cost, want)
    stages = BcastStages(alone, np.array([0, 1]), np.array([0, 0]), np.array([800, 400]))
    np.testing.assert_allclose(step_timing(stages, place, clock)[1], 0.0)
    # two members move the bytes by the algorithm and copy nothing more
    two = Allgatherv(Groups.world(2), np.array([800, 800]))
    got = step_timing(two, place, np.zeros(2))[1]
    np.testing.assert_allclose(got, C.allgather(2, 800, place.intra))
    np.testing.assert_allclose(C.local_copy([1, 2, 3], 1000, 1e9), [2e-6, 0.0, 0.0])


def test_a_one_rank_job_copies_nothing():
    place = Placement(1, 1, _machine())
    step = Allgatherv(Groups.world(1), np.array([800]))
    np.testing.assert_allclose(step_timing(step, place, np.zeros(1))[1], 0.0)
