"""The time half of the simulator: placements, the per-step prices against the collective
closed forms, synchronisation at the slowest member, overlap, the oversubscription and
reduction terms, and `simulate --machine` / `gcntrain bench` on the command line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gcntrain.cli.main import run
from gcntrain.comm.exchange import Allreduce, BcastStages, Groups, Pairs, ReduceScatterv
from gcntrain.data.generate import rmat
from gcntrain.data.store import write_graph
from gcntrain.errors import InputError
from gcntrain.model.trainer import TrainConfig
from gcntrain.simulate import calibrate as K
from gcntrain.simulate import collectives as C
from gcntrain.simulate import fits as F
from gcntrain.simulate.local import load_machine
from gcntrain.simulate.machine import parse_machine
from gcntrain.simulate.run import plan_training
from gcntrain.simulate.target import PlanTarget
from gcntrain.simulate.timing import (
    COMPUTE_KINDS,
    Placement,
    TimeModel,
    epoch_calls,
    placement,
    predict,
    step_timing,
)
from tests.test_machine import GOOD


@pytest.fixture(scope="module")
def machine():
    return parse_machine(GOOD, "good")


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    g = rmat(9, edge_factor=6, seed=3, num_features=16, num_classes=4)
    path = tmp_path_factory.mktemp("timing") / "g.h5"
    write_graph(path, g)
    return path


def test_placement_from_nodes_and_ranks_per_node(machine):
    assert placement(machine, 8, None, None).ranks_per_node == 2  # the profile's
    assert placement(machine, 8, 2, None).ranks_per_node == 4
    p = placement(machine, 6, None, 3)
    assert p.nodes == 2 and list(p.node) == [0, 0, 0, 1, 1, 1]
    for nodes, rpn in ((3, 2), (5, None)):
        with pytest.raises(InputError):
            placement(machine, 8, nodes, rpn)


def test_collective_steps_priced_by_their_closed_forms(machine):
    place = Placement(4, 2, machine)  # two nodes of two ranks
    clock = np.array([1.0, 3.0, 2.0, 0.5])
    # an Allreduce over the world: everybody starts at the latest arrival
    step = Allreduce(Groups.world(4), np.array([1000]), 8)
    start, cost, kind = step_timing(step, place, clock)
    assert kind == "allreduce" and np.all(start == 3.0)
    link = machine.inter_link(2)
    red = C.reduction(4, 8000, machine.memory_bandwidth / 2)
    np.testing.assert_allclose(cost, C.allreduce(4, 8000, link) + red)
    # Allreduce within each node: the intra link, each node at its own latest arrival
    node_groups = Groups(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]))
    start, cost, _ = step_timing(Allreduce(node_groups, np.array([10, 10]), 4), place, clock)
    np.testing.assert_allclose(start, [3.0, 3.0, 2.0, 2.0])
    red = C.reduction(2, 40, machine.memory_bandwidth / 2)
    np.testing.assert_allclose(cost, C.allreduce(2, 40, machine.intra) + red)
    # Reduce-scatter: the whole vector per member
    rs = ReduceScatterv(node_groups, np.array([100, 300, 200, 200]))
    _, cost, kind = step_timing(rs, place, clock)
    assert kind == "reduce_scatter"
    red = C.reduction(2, 400, machine.memory_bandwidth / 2)
    np.testing.assert_allclose(cost, C.reduce_scatter(2, 400, machine.intra) + red)


def test_broadcast_stages_sum_per_group(machine):
    place = Placement(2, 2, machine)
    st = BcastStages(
        Groups.world(2), np.zeros(3, np.int64), np.array([0, 1, 0]), np.array([1000, 0, 5000])
    )
    _, cost, kind = step_timing(st, place, np.zeros(2))
    # the empty stage is skipped
    want = C.bcast(2, 1000, machine.intra) + C.bcast(2, 5000, machine.intra)
    assert kind == "bcast"
    np.testing.assert_allclose(cost, [want, want])


def test_point_to_point_waits_for_partners_only(machine):
    place = Placement(4, 4, machine)
    clock = np.array([0.0, 5.0, 1.0, 2.0])
    step = Pairs(4, np.array([0, 2]), np.array([1, 3]), np.array([800, 0]), kind="p2p")
    start, cost, kind = step_timing(step, place, clock)
    assert kind == "p2p"
    np.testing.assert_allclose(start, [5.0, 5.0, 1.0, 2.0])  # 2 -> 3 carries nothing
    np.testing.assert_allclose(cost[:2], C.alltoallv(1, 800, 800, machine.intra))
    assert cost[2] == cost[3] == 0


def test_oversubscription_adds_a_cost_per_synchronisation():
    text = GOOD.replace("ranks = 2", "ranks = 2\noversubscribed_sync_us = 500")
    m = parse_machine(text, "x")
    assert m.oversubscribed_sync == pytest.approx(5e-4)
    step = Allreduce(Groups.world(16), np.array([1]), 8)
    fits = step_timing(step, Placement(16, 8, m), np.zeros(16))[1]
    over = step_timing(step, Placement(16, 16, m), np.zeros(16))[1]  # 16 ranks, 8 cores
    # 16 ranks copying share the node's memory bandwidth: the link of the contended node
    link = Placement(16, 16, m).intra
    assert link.beta == pytest.approx(2 * 16 / m.memory_bandwidth) and link.beta > m.intra.beta
    base = C.allreduce(16, 8, link) + C.reduction(16, 8, m.memory_bandwidth / 16)
    np.testing.assert_allclose(over, base + 5e-4)
    assert np.all(fits < over)
    with pytest.raises(InputError, match="oversubscribed_sync_us"):
        parse_machine(GOOD.replace("ranks = 2", "ranks = 2\noversubscribed_sync_us = -1"))


def test_oversubscribed_cost_grows_with_the_compute_since_the_last_sync_up_to_the_slice():
    text = GOOD.replace(
        "ranks = 2", "ranks = 2\noversubscribed_sync_us = 500\noversubscribed_slice_us = 2000"
    )
    m = parse_machine(text, "x")
    assert m.oversubscribed_slice == pytest.approx(2e-3)
    since = np.array([0.0, 1e-3, 2e-3, 5e-3])
    np.testing.assert_allclose(Placement(16, 16, m).sync_cost_for(since), [0, 2.5e-4, 5e-4, 5e-4])
    assert not Placement(16, 8, m).sync_cost_for(since).any()  # not oversubscribed: nothing
    const = parse_machine(GOOD.replace("ranks = 2", "ranks = 2\noversubscribed_sync_us = 500"))
    np.testing.assert_allclose(Placement(16, 16, const).sync_cost_for(since), 5e-4)
    # a collective pays its members' largest cost; an exchange each rank its own
    step = Allreduce(Groups.world(4), np.array([1]), 8)
    sync = np.array([0.0, 1e-4, 3e-4, 2e-4])
    _, cost, _ = step_timing(step, Placement(4, 4, m), np.zeros(4), sync)
    _, bare, _ = step_timing(step, Placement(4, 4, m), np.zeros(4), np.zeros(4))
    np.testing.assert_allclose(cost - bare, 3e-4)
    pairs = Pairs(4, np.array([0, 1]), np.array([1, 0]), np.array([64, 64]), kind="p2p")
    _, cost, _ = step_timing(pairs, Placement(4, 4, m), np.zeros(4), sync)
    _, bare, _ = step_timing(pairs, Placement(4, 4, m), np.zeros(4), np.zeros(4))
    np.testing.assert_allclose(cost - bare, [0.0, 1e-4, 0.0, 0.0])
    with pytest.raises(InputError, match="oversubscribed_slice_us"):
        parse_machine(GOOD.replace("ranks = 2", "ranks = 2\noversubscribed_slice_us = -3"))


def test_an_oversubscribed_epoch_pays_more_for_more_compute_between_syncs(graph_file):
    cfg = TrainConfig(epochs=3)
    sim = plan_training(PlanTarget(str(graph_file), cfg, "1d", 4))  # no overlap to hide the cost
    widths = [sim.num_features, *cfg.hidden, sim.num_classes]
    fast = "spmm_gflops = { 16 = 2.0, 4 = 1.0, 64 = 4.0 }"
    slow = "spmm_gflops = { 16 = 0.02, 4 = 0.01, 64 = 0.04 }"  # 100 x the product time
    assert fast in GOOD
    sliced = "oversubscribed_sync_us = 500\noversubscribed_slice_us = 100"

    def epoch(extra: str, spmm: str) -> float:
        text = GOOD.replace("ranks = 2", "ranks = 2\n" + extra).replace(fast, spmm)
        text = text.replace("cores = 8", "cores = 2")  # 4 ranks on 2 cores
        return predict(sim, Placement(4, 4, parse_machine(text)), widths)["epoch_seconds"]

    for spmm in (fast, slow):
        assert epoch("", spmm) < epoch(sliced, spmm) < epoch("oversubscribed_sync_us = 500", spmm)
    # the same synchronisations cost more with more compute between them
    assert epoch(sliced, slow) - epoch("", slow) > epoch(sliced, fast) - epoch("", fast)


def test_epoch_replay_is_compute_plus_comm_plus_wait(graph_file, machine):
    cfg = TrainConfig(epochs=3)
    sim = plan_training(PlanTarget(graph_file, cfg, "1d", 3))
    widths = [sim.num_features, *cfg.hidden, sim.num_classes]
    place = Placement(3, 3, machine)
    got = predict(sim, place, widths)
    b = got["breakdown"]
    assert got["epoch_seconds"] > 0
    # the critical rank's clock is exactly its compute, its communication and its waits
    assert b["compute"] + b["comm"] + b["wait"] == pytest.approx(got["epoch_seconds"])
    assert set(b["comm_parts"]) <= {"bcast", "allreduce"} and b["comm_parts"]["bcast"] > 0
    # twice the SpMM rate: less time, the same communication; exactly half the SpMM time
    # where the node's bandwidth does not bind (its derived scaling stays linear)
    fast = parse_machine(
        GOOD.replace("{ 16 = 2.0, 4 = 1.0, 64 = 4.0 }", "{ 16 = 4.0, 4 = 2.0, 64 = 8.0 }")
    )
    got2 = predict(sim, Placement(3, 3, fast), widths)
    assert got2["epoch_seconds"] < got["epoch_seconds"]
    wide = GOOD.replace("memory_bandwidth_gbs = 50", "memory_bandwidth_gbs = 5000")
    base = predict(sim, Placement(3, 3, parse_machine(wide)), widths)["breakdown"]
    fast = parse_machine(
        wide.replace("{ 16 = 2.0, 4 = 1.0, 64 = 4.0 }", "{ 16 = 4.0, 4 = 2.0, 64 = 8.0 }")
    )
    got3 = predict(sim, Placement(3, 3, fast), widths)["breakdown"]
    assert got3["compute_parts"]["spmm"] == pytest.approx(base["compute_parts"]["spmm"] / 2)


def _slow_network_epoch(graph_file, scheme, options, nodes, only=None):
    """The middle planned epoch of `scheme` on 2 ranks over `nodes` nodes, on a network so
    slow that the exchanges dominate, and its critical rank."""
    slow = parse_machine(
        GOOD.replace("bandwidth_gbs = 5", "bandwidth_gbs = 0.0001").replace(
            "bandwidth_gbs = 10", "bandwidth_gbs = 0.0001"
        )
    )
    cfg = TrainConfig(epochs=3)
    sim = plan_training(PlanTarget(graph_file, cfg, scheme, 2, options))
    widths = [sim.num_features, *cfg.hidden, sim.num_classes]
    model = TimeModel(sim, Placement(2, 2 // nodes, slow), widths)
    if only is None:
        ep = model.epochs()[1]
    else:
        ep = model.epoch([c for c in epoch_calls(sim)[1] if c.method == only])
    return ep, int(np.argmax(ep.clock))


def _compute(ep, r) -> float:
    return sum(ep.parts[k][r] for k in COMPUTE_KINDS)


def test_overlap_hides_what_the_network_moves_not_what_the_cpu_copies(graph_file, monkeypatch):
    # two nodes: p2p's exchange travels while the local block is multiplied, so the rank's
    # epoch is shorter than its compute plus its exchanges
    ep, r = _slow_network_epoch(graph_file, "p2p", None, nodes=2)
    comm = ep.parts["p2p"][r] + ep.parts["allreduce"][r] + ep.parts["bcast"][r]
    assert ep.clock[r] < _compute(ep, r) + comm
    # one node with messages (GCNTRAIN_NODE_WINDOWS=0): the ranks copy the messages
    # themselves, nothing of the exchange is hidden (the aggregations alone: each is its
    # compute, then its exchange)
    monkeypatch.setenv("GCNTRAIN_NODE_WINDOWS", "0")
    ep, r = _slow_network_epoch(graph_file, "p2p", None, nodes=1, only="aggregate")
    assert ep.parts["p2p"][r] > _compute(ep, r) > 0
    assert ep.clock[r] >= (_compute(ep, r) + ep.parts["p2p"][r]) * (1 - 1e-12)


@pytest.mark.parametrize("scheme", ["1d", "p2p"])
def test_node_windows_cost_a_fence_not_the_bytes(graph_file, machine, monkeypatch, scheme):
    # one node: the rows go through a node window, so an aggregation's exchange costs one
    # barrier of intra-node latencies whatever the network's bandwidth; two nodes: messages
    ep, r = _slow_network_epoch(graph_file, scheme, None, nodes=1, only="aggregate")
    kind = "p2p" if scheme == "p2p" else "bcast"
    sim = plan_training(PlanTarget(graph_file, TrainConfig(epochs=3), scheme, 2))
    calls = [c for c in epoch_calls(sim)[1]]
    n_agg = sum(c.method == "aggregate" for c in calls)
    alpha = parse_machine(GOOD).intra.alpha  # the slow network changed bandwidths only
    # a fence of log2(2) = 1 latency each, counted as wait (as the runtime counts it); the
    # two ranks compute the same here, so nothing else waits
    assert ep.parts[kind][r] == 0
    assert ep.parts["wait"][r] == pytest.approx(n_agg * alpha, rel=0.05)
    monkeypatch.setenv("GCNTRAIN_NODE_WINDOWS", "0")
    msg, r2 = _slow_network_epoch(graph_file, scheme, None, nodes=1, only="aggregate")
    assert msg.parts[kind][r2] > 1000 * ep.parts["wait"][r]
    monkeypatch.delenv("GCNTRAIN_NODE_WINDOWS")
    two, r3 = _slow_network_epoch(graph_file, scheme, None, nodes=2, only="aggregate")
    assert two.parts[kind][r3] > 1000 * ep.parts["wait"][r]


def test_a_windowed_broadcast_starts_when_its_group_has_arrived(machine, monkeypatch):
    # 1D-style stages over two groups of two ranks, one group per node: a fence each,
    # starting at the group's latest arrival, whatever the bytes
    groups = Groups(np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]))
    step = BcastStages(
        groups,
        np.array([0, 0, 1, 1]),
        np.array([0, 1, 0, 1]),
        np.array([10**9, 10**9, 10**9, 10**9]),
        window=True,
    )
    place = Placement(4, 2, machine)
    clock = np.array([1.0, 3.0, 2.0, 0.5])
    from gcntrain.simulate.timing import _window_timing, _windowed

    mask = _windowed(step, place)
    assert mask is not None and mask.all()
    start, cost, kind = _window_timing(step, place, clock, np.zeros(4), mask)
    assert start.tolist() == [3.0, 3.0, 2.0, 2.0] and kind == "wait"
    np.testing.assert_allclose(cost, machine.intra.alpha)
    # the same stages across nodes (one group of four on two nodes): no window
    world = BcastStages(
        Groups.world(4), np.zeros(4, np.int64), np.arange(4), np.full(4, 10**6), window=True
    )
    assert _windowed(world, place) is None
    assert _windowed(BcastStages(groups, step.group, step.root, step.nbytes), place) is None
    # a group without stages (1.5D with c > P/c) fences nothing: no window there
    empty = np.array([10**9, 10**9, 0, 0])
    half = _windowed(BcastStages(groups, step.group, step.root, empty, window=True), place)
    assert half.tolist() == [True, True, False, False]
    # an unknown setting is refused, not read as on
    monkeypatch.setenv("GCNTRAIN_NODE_WINDOWS", "disable")
    with pytest.raises(InputError, match="GCNTRAIN_NODE_WINDOWS"):
        _windowed(step, place)


def test_an_oversubscribed_wait_is_not_hidden_by_the_overlapped_compute(graph_file):
    # p2p on 2 nodes of 16 ranks (8 cores each), products far slower than the network: the
    # inter-node exchanges hide under the compute, but each exchange's oversubscribed wait
    # is time the rank's CPU does not compute, so every aggregation pays it on top
    slow = GOOD.replace("{ 16 = 2.0, 4 = 1.0, 64 = 4.0 }", "{ 16 = 0.002, 4 = 0.001, 64 = 0.004 }")
    cfg = TrainConfig(epochs=3)
    sim = plan_training(PlanTarget(graph_file, cfg, "p2p", 32))
    widths = [sim.num_features, *cfg.hidden, sim.num_classes]
    calls = [c for c in epoch_calls(sim)[1] if c.method == "aggregate"]
    assert calls

    def epoch(sync_us):
        text = slow.replace("ranks = 2", f"ranks = 2\noversubscribed_sync_us = {sync_us}")
        m = parse_machine(text)
        return TimeModel(sim, Placement(32, 16, m), widths).epoch(calls)

    bare, over = epoch(0), epoch(100)
    r = int(np.argmax(bare.clock))
    assert _compute(bare, r) > 100 * bare.parts["p2p"][r]  # the exchanges alone would hide
    np.testing.assert_allclose(over.clock - bare.clock, len(calls) * 1e-4, rtol=1e-9)


def test_delayed_exchanges_hide_even_on_one_node(graph_file):
    # cd-1 posts its exchanges in one epoch and completes them in a later one: on one node
    # the epoch is shorter than compute plus exchange; cd-0 (no overlap) is the sum
    ep, r = _slow_network_epoch(graph_file, "vertexcut", {"delay": "1"}, nodes=1)
    assert ep.parts["alltoall"][r] > 0
    assert ep.clock[r] < _compute(ep, r) + ep.parts["alltoall"][r] + ep.parts["allreduce"][r]
    ep0, r0 = _slow_network_epoch(graph_file, "vertexcut", {"delay": "0"}, nodes=1)
    total = sum(ep0.parts[k][r0] for k in ep0.parts)
    assert ep0.clock[r0] == pytest.approx(total)


def test_elementwise_rate_recovers_a_known_rate_given_the_per_call_cost():
    from gcntrain.simulate.fits import elementwise_rate

    calls = [40, 40, 40]
    elems = [1e5, 4e5, 1.6e6]
    o, rate = 2e-5, 5e7
    unexplained = [c * o + e / rate for c, e in zip(calls, elems)]
    assert elementwise_rate(unexplained, calls, elems, o) == pytest.approx(rate, rel=1e-9)
    # a per-call cost that explains everything leaves a floor, not a negative time
    assert elementwise_rate(unexplained, calls, elems, 1.0) > 0


def test_product_scales_are_the_measured_over_the_predicted_product_times():
    measured = [
        {"epoch_seconds": 0.01, "t_aggregation": 0.004, "t_dense": 0.001},
        {"epoch_seconds": 0.1, "t_aggregation": 0.06, "t_dense": 0.012},
    ]
    predicted = [{"spmm": 0.005, "gemm": 0.001}, {"spmm": 0.075, "gemm": 0.009}]
    k_spmm, k_gemm = F.product_scales(measured, predicted)
    assert k_spmm == pytest.approx(0.064 / 0.08) and k_gemm == pytest.approx(0.013 / 0.01)
    # a part the model does not predict (or the run did not time) keeps the benchmark's rate
    none = [{"spmm": 0.0, "gemm": 0.0}, {"spmm": 0.0, "gemm": 0.0}]
    assert F.product_scales(measured, none) == (1.0, 1.0)


def test_link_and_collective_fits_invert_the_models():
    alpha, beta = 3e-6, 1 / 4e9
    pp = [[n, alpha + n * beta] for n in (8, 1 << 16, 1 << 20, 1 << 22)]
    a, bw = K.fit_link(pp)
    assert a == pytest.approx(alpha + 8 * beta) and bw == pytest.approx(4e9)
    from gcntrain.simulate.machine import Link

    mem = 1e10
    fns = K._collective_fns(mem)
    mpi = {"ranks": 2}
    for kind, fn in fns.items():
        mpi[kind] = [[n, float(fn(2, n, Link(alpha, 1 / 2e9)))] for n in (1 << 20, 1 << 22)]
    assert K.fit_collective_bandwidth(mpi, alpha, mem) == pytest.approx(2e9)


def test_collective_fits_recover_latency_eager_limit_and_rendezvous():
    """Collectives timed from a link with a per-message latency, an eager limit of 1 KiB and
    a rendezvous cost above it: the bench's fits give back all four figures, and the
    priced collectives then meet the timed ones at every size."""
    from gcntrain.simulate.machine import Link

    true = Link(2e-5, 1 / 3e9, 1024.0, 1.5e-5)
    np.testing.assert_allclose(true.latency([8, 1024, 4096]), [2e-5, 2e-5, 3.5e-5])
    mem = 1e10
    sizes = (8, 1024, 16384, 131072, 1 << 20, 1 << 22)
    mpi = {"ranks": 2}
    for kind, fn in K._collective_fns(mem).items():
        mpi[kind] = [[n, float(fn(2, n, true))] for n in sizes]
    alpha = K.fit_collective_latency(mpi, mem)
    assert alpha == pytest.approx(2e-5, rel=1e-3)
    beta = 1 / K.fit_collective_bandwidth(mpi, alpha, mem)
    eager, rdv = K.fit_rendezvous(mpi, alpha, beta, mem)
    assert eager == 1024 and rdv == pytest.approx(1.5e-5, rel=0.05)
    fit = Link(alpha, 1 / K.fit_collective_bandwidth(mpi, alpha, mem, eager, rdv), eager, rdv)
    for kind, fn in K._collective_fns(mem).items():
        for n, t in mpi[kind]:
            assert float(fn(2, n, fit)) == pytest.approx(t, rel=0.02)
    # without a handshake in the timings the fit finds none
    flat = {"ranks": 2}
    for kind, fn in K._collective_fns(mem).items():
        flat[kind] = [[n, float(fn(2, n, Link(2e-5, 1 / 3e9)))] for n in sizes]
    assert K.fit_rendezvous(flat, 2e-5, 1 / 3e9, mem) == (0.0, 0.0)


def sample_figs(host: str = "h") -> dict:
    """The figures `calibrate` gathers, made up (for `profile_text`)."""
    return {
        "host": host,
        "when": "now",
        "cores": 4,
        "version": "0",
        "scales": [12, 14],
        "core_gbs": 10.0,
        "node_gbs": 20.0,
        "alpha": 2e-6,
        "bandwidth": 5e9,
        "sync": 3e-4,
        "spmm": {8: 1.0, 64: 3.0},
        "gemm": {16: 10.0, 1024: 40.0},
        "quant": 0.2,
        "other": 0.1,
        "overhead": 1e-5,
        "threads": {k: {1: 1.0, 2: 1.5, 4: 2.5} for k in ("spmm", "gemm", "other")},
        "node_scaling": {k: {1: 1.0, 2: 1.9, 4: 3.0} for k in ("spmm", "gemm", "other")},
    }


def test_profile_text_round_trips_through_the_parser():
    from gcntrain.simulate.profile_text import profile_text

    figs = sample_figs()
    m = parse_machine(profile_text("mine", figs), "t")
    assert m.name == "mine" and m.cores == 4 and m.ranks_per_node == 4
    assert m.oversubscribed_sync == pytest.approx(3e-4) and m.threads_source == "measured"
    assert m.memory_bandwidth == pytest.approx(2e10) and m.core_bandwidth == pytest.approx(1e10)
    assert m.scaling("spmm")(2) == pytest.approx(1.5) and m.sharing("gemm")(4) == 3.0
    assert m.scaling("other")(3) == pytest.approx(2.0)  # interpolated
    assert m.intra.beta == pytest.approx(1 / 5e9) and m.call_overhead == pytest.approx(1e-5)
    np.testing.assert_allclose(m.spmm_rate([8, 64]), [1e9, 3e9])
    np.testing.assert_allclose(
        m.gemm_rate([4, 16, 128, 1024, 4096]), [1e10, 1e10, 2.5e10, 4e10, 4e10]
    )


def test_simulate_machine_json_and_human(graph_file, capsys):
    base = ["simulate", str(graph_file), "--ranks", "4", "--scheme", "1d", "--epochs", "3"]
    assert run([*base, "--machine", "fugaku", "--nodes", "1", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["machine"] == "fugaku" and d["nodes"] == 1 and d["ranks_per_node"] == 4
    assert d["epoch_seconds"] > 0 and d["breakdown"]["critical_rank"] in range(4)
    r = d["rank_epoch_seconds"]
    assert r["min"] <= r["median"] <= r["max"] == pytest.approx(d["epoch_seconds"])
    assert run([*base, "--machine", "abci", "--ranks-per-node", "2"]) == 0
    out = capsys.readouterr().out
    assert "abci" in out and "epoch" in out


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["--machine", "nosuch"], "unknown machine profile"),
        (["--machine", "fugaku", "--nodes", "3"], "--nodes"),
        (["--machine", "fugaku", "--nodes", "2", "--ranks-per-node", "3"], "--ranks-per-node"),
        (["--nodes", "1"], "--machine"),
    ],
)
def test_simulate_machine_bad_input_is_one_line_exit_2(graph_file, capsys, argv, needle):
    base = ["simulate", str(graph_file), "--ranks", "4", "--scheme", "1d"]
    assert run([*base, *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err


def test_malformed_profile_file_is_one_line_exit_2(graph_file, tmp_path, capsys):
    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD.replace("gemm_gflops = 30", "gemm_gflops = 'fast'"))
    assert run(["simulate", str(graph_file), "-P", "2", "--machine", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "compute.gemm_gflops" in err[0] and "bad.toml" in err[0]
    assert load_machine("local").name == "local"


@pytest.mark.parametrize("scheme", ["1d", "p2p", "1.5d", "hier"])
def test_more_ranks_than_rows_with_machine_is_one_line_exit_2(tmp_path, capsys, scheme):
    """A scheme that needs rows on every rank refuses P > n before pricing anything."""
    path = tmp_path / "tiny.h5"
    write_graph(path, rmat(4, edge_factor=2, seed=1, num_features=3, num_classes=2))
    argv = ["simulate", str(path), "-P", "32", "--scheme", scheme, "--machine", "fugaku"]
    assert run(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("gcntrain: error:") and "32" in err[0], err


def test_bench_recovers_the_cost_and_slice_of_synthetic_runs():
    # two runs: n syncs with w seconds of compute before each; their excess from a known model
    runs = [(120, 0.4e-3), (130, 2.5e-3)]

    def slopes(tau):
        return [n * (min(1.0, w / tau) if tau > 0 else 1.0) for n, w in runs]

    tau = float(F.SLICES[17])
    excess = [5e-4 * s for s in slopes(tau)]
    cost, got = F.fit_sync_slice(excess, slopes)
    assert got == pytest.approx(tau) and cost == pytest.approx(5e-4)
    # a constant cost (the runs' excess in proportion to their syncs) fits a small slice
    cost, got = F.fit_sync_slice([120 * 7e-4, 130 * 7e-4], slopes)
    assert got <= 0.4e-3 and cost == pytest.approx(7e-4)
    # nothing to explain, or one run: the constant model
    assert F.fit_sync_slice([0.0, 0.1], slopes)[1] == 0.0
    assert F.fit_sync_slice([0.1], slopes) == (pytest.approx(0.1 / 120), 0.0)


def test_bench_recovers_the_node_speedup_from_a_critical_ranks_products(graph_file):
    # the process-scaling fit solves the node's speed-up at T one-thread ranks from the
    # critical rank's product seconds: priced with a known speed-up, the solver returns it
    figs = {
        "host": "h",
        "when": "now",
        "cores": 4,
        "version": "0",
        "scales": [12],
        "core_gbs": 10.0,
        "node_gbs": 20.0,
        "alpha": 2e-6,
        "bandwidth": 5e9,
        "spmm": {8: 1.0, 64: 3.0},
        "gemm": {16: 10.0, 1024: 40.0},
        "quant": 0.2,
        "threads": {k: {1: 1.0, 2: 1.8, 4: 3.0} for k in ("spmm", "gemm", "other")},
        "node_scaling": {k: {1: 1.0, 2: 1.9, 4: 3.2} for k in ("spmm", "gemm", "other")},
    }
    g = str(graph_file)
    for kind, true in (("spmm", 2.6), ("gemm", 1.3)):
        measured = F._critical_part(figs, "t", g, kind, 4, true)
        assert measured > 0
        got = F.solve_node_speedup(
            lambda s, k=kind: F._critical_part(figs, "t", g, k, 4, s), measured, 4
        )
        assert got == pytest.approx(true, rel=1e-3)
    # beyond the bracket: no faster than unshared ranks, no slower than an eighth of them
    part = lambda s: 1.0 / s  # noqa: E731
    assert F.solve_node_speedup(part, 0.1, 4) == 4.0
    assert F.solve_node_speedup(part, 100.0, 4) == 0.5
    assert F.solve_node_speedup(part, 1.0 / 3.0, 4) == pytest.approx(3.0, rel=1e-6)
    assert F.solve_node_speedup(part, 0.0, 4) is None


def test_serial_epochs_report_the_time_outside_the_products(graph_file):
    # the element-wise fit reads t_other: the epoch's time outside its graph and dense
    # products, as the run timed it (not the epoch less predicted products)
    from gcntrain.simulate.launch import serial_epochs

    got = serial_epochs(str(graph_file), "serial", epochs=3)
    assert set(got) == {"epoch_seconds", "t_aggregation", "t_dense", "t_other"}
    assert 0 < got["t_other"] < got["epoch_seconds"]
    assert got["t_aggregation"] > 0 and got["t_dense"] > 0


@pytest.mark.parametrize("name", ['a"b', "back\\slash", 'q"\nwarp_speed = 9\n#', "ünï code"])
def test_profile_names_cannot_break_or_inject_toml(name):
    """A name (or host) with quotes, backslashes or line breaks is written escaped: the
    profile parses, with that name and no injected key (issue 51, item 5)."""
    from gcntrain.simulate.profile_text import profile_text

    m = parse_machine(profile_text(name, sample_figs(host=name)), "t")
    assert m.name == name and m.cores == 4


def test_bench_refuses_a_bad_name_before_measuring(capsys, monkeypatch):
    from gcntrain.cli.main import run
    from gcntrain.simulate import calibrate

    def measured(*args, **kwargs):
        raise AssertionError("bench measured before refusing the name")

    monkeypatch.setattr(calibrate, "calibrate", measured)
    assert run(["bench", "--quick", "--name", "a\tb"]) == 2
    assert "--name must be 1-100 printable characters" in capsys.readouterr().err
    assert run(["bench", "--quick", "--name", " "]) == 2
