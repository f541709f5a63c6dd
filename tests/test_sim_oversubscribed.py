"""An oversubscribed node (more ranks than cores): a synchronisation waits one wake-up round
per `cores` members of its group (`gcntrain.simulate.oversubscribed`), so the profile's
floor, fitted on a step over twice the cores, is halved for a two-rank group on a 2-core
node and unchanged where the ranks fit the cores; a group that leaves some of the node's
ranks out loses up to half a scheduler slice per synchronisation; intra-node bytes move at
the rank's share of a core."""

from __future__ import annotations

import numpy as np
import pytest

from gcntrain.comm.exchange import Allreduce, BcastStages, Groups, Pairs
from gcntrain.simulate.machine import parse_machine
from gcntrain.simulate.oversubscribed import (
    FIT_ROUNDS,
    intra_link,
    members_on_node,
    scheduler_slice,
    subset_loss,
    wake_rounds,
)
from gcntrain.simulate.timing import Placement, step_timing
from tests.test_machine import GOOD

FLOOR_US = 142.0


def _machine(cores: int, floor_us: float = FLOOR_US, bandwidth: float = 50.0):
    text = GOOD.replace("cores = 8", f"cores = {cores}").replace(
        "ranks = 2", f"ranks = 2\noversubscribed_floor_us = {floor_us}"
    )
    return parse_machine(
        text.replace("memory_bandwidth_gbs = 50", f"memory_bandwidth_gbs = {bandwidth}")
    )


def _sync_part(step, place: Placement) -> np.ndarray:
    """(P,) what the synchronisation adds to each rank's part of `step` (its cost with the
    profile's floor less its cost with none)."""
    bare = Placement(place.P, place.ranks_per_node, _machine(place.machine.cores, 0.0))
    clock = np.zeros(place.P)
    sync, none = place.sync_cost_for(clock), bare.sync_cost_for(clock)
    return step_timing(step, place, clock, sync)[1] - step_timing(step, bare, clock, none)[1]


def test_wake_rounds_count_the_cores_a_group_needs():
    np.testing.assert_array_equal(wake_rounds([1, 2, 3, 4, 5, 8], 2), [1, 1, 2, 2, 3, 4])
    np.testing.assert_array_equal(wake_rounds([1, 4, 16], 16), [1, 1, 1])
    gid, node = np.array([0, 0, 1, 1, 0, 0]), np.array([0, 0, 0, 0, 1, 1])
    np.testing.assert_array_equal(members_on_node(gid, node), [2, 2, 2, 2, 2, 2])
    np.testing.assert_array_equal(members_on_node(np.zeros(4, int), np.zeros(4, int)), [4] * 4)


def test_a_two_rank_group_pays_half_the_floor_of_a_four_rank_one_on_two_cores():
    place = Placement(4, 4, _machine(cores=2))  # 4 ranks on 2 cores
    floor = FLOOR_US * 1e-6
    world = Allreduce(Groups.world(4), np.array([16]), 4)
    two = Groups(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]))
    pairs = Allreduce(two, np.array([16, 16]), 4)
    # the bench's geometry (every step over 2 x cores ranks) pays the floor as fitted
    np.testing.assert_allclose(_sync_part(world, place), floor)
    np.testing.assert_allclose(_sync_part(pairs, place), floor / FIT_ROUNDS)
    assert np.all(_sync_part(pairs, place) < _sync_part(world, place))
    # a broadcast stage of a two-rank group, and a point-to-point exchange with one partner
    stages = BcastStages(pairs.groups, np.array([0, 1]), np.array([0, 1]), np.array([64, 64]))
    np.testing.assert_allclose(_sync_part(stages, place), floor / FIT_ROUNDS)
    one = Pairs(4, np.array([0, 1]), np.array([1, 0]), np.array([64, 64]), kind="p2p")
    three = Pairs(4, *np.nonzero(~np.eye(4, dtype=bool)), np.full(12, 64), kind="p2p")
    np.testing.assert_allclose(_sync_part(one, place)[:2], floor / FIT_ROUNDS)
    np.testing.assert_allclose(_sync_part(three, place), floor)


def test_the_floor_is_unchanged_where_the_ranks_fit_the_cores():
    # 4 ranks on 4 cores: not oversubscribed, no floor whatever the group
    place = Placement(4, 4, _machine(cores=4))
    for gid in ([0, 0, 1, 1], [0, 0, 0, 0]):
        g = Groups(np.array(gid), np.array([0, 1, 0, 1]) if gid[2] else np.arange(4))
        step = Allreduce(g, np.full(g.sizes.shape[0], 16), 4)
        assert not _sync_part(step, place).any()
    # 8 ranks on 4 cores: a group of the node's 8 pays the fitted floor, one of 4 half of it
    place = Placement(8, 8, _machine(cores=4))
    np.testing.assert_allclose(
        _sync_part(Allreduce(Groups.world(8), np.array([16]), 4), place), FLOOR_US * 1e-6
    )
    halves = Groups(np.repeat([0, 1], 4), np.tile(np.arange(4), 2))
    np.testing.assert_allclose(
        _sync_part(Allreduce(halves, np.array([16, 16]), 4), place), FLOOR_US * 1e-6 / 2
    )


def test_intra_node_bytes_move_at_the_ranks_share_of_a_core_when_oversubscribed():
    m = _machine(cores=2, bandwidth=5000.0)  # the memory bandwidth does not bind
    fits = Placement(2, 2, m)
    assert intra_link(fits) == fits.intra
    over = Placement(4, 4, m)
    assert intra_link(over).beta == pytest.approx(2 * m.intra.beta)  # half a core each
    assert intra_link(over).alpha == m.intra.alpha
    # where the node's memory bandwidth is the slower limit, it stays the limit
    narrow = Placement(4, 4, _machine(cores=2, bandwidth=10.0))
    assert intra_link(narrow).beta == pytest.approx(narrow.intra.beta)


def test_a_group_that_leaves_ranks_of_the_node_out_loses_up_to_half_a_slice():
    m = _machine(cores=2, floor_us=0.0)
    over, fits = Placement(4, 4, m), Placement(2, 2, m)
    # Linux's default base slice on 2 cores: 0.75 ms x (1 + log2 2)
    assert scheduler_slice(over) == pytest.approx(1.5e-3)
    since = np.array([0.0, 1e-4, 1e-3, 5e-3])
    np.testing.assert_allclose(subset_loss(since, over), [0.0, 5e-5, 5e-4, 7.5e-4])
    assert not subset_loss(since[:2], fits).any()  # a core per rank: nothing to lose
    text = GOOD.replace("cores = 8", "cores = 2").replace(
        "ranks = 2", "ranks = 2\nscheduler_slice_us = 3000"
    )
    assert scheduler_slice(Placement(4, 4, parse_machine(text))) == pytest.approx(3e-3)
    # the loss rides on the synchronisation cost: paid by a two-rank group of the four
    # ranks, not by a step over all of them
    lost = subset_loss(np.full(4, 5e-3), over)
    sync = np.stack([np.zeros(4), lost])
    two = Groups(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]))
    clock = np.zeros(4)
    for groups, paid in ((two, 7.5e-4), (Groups.world(4), 0.0)):
        step = Allreduce(groups, np.full(groups.sizes.shape[0], 16), 4)
        bare = step_timing(step, over, clock, np.zeros(4))[1]
        np.testing.assert_allclose(step_timing(step, over, clock, sync)[1] - bare, paid)
