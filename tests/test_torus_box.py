"""A torus job's box: the profile's allocation unit, a requested shape, and where each
reaches the plan (`gcntrain.simulate.topology`, ``simulate --node-shape``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gcntrain.cli.main import run
from gcntrain.comm.exchange import Groups, Uniform
from gcntrain.simulate.local import load_machine
from gcntrain.simulate.machine import parse_machine
from gcntrain.simulate.timing import placement, step_timing
from gcntrain.simulate.topology import Topology, crossing_bytes, unit_box


@pytest.mark.parametrize("nodes", [1, 2, 5, 12, 13, 100, 384, 385, 512, 1000, 2048, 4096])
def test_unit_box_holds_the_job_in_whole_units_with_the_shortest_longest_side(nodes):
    box = unit_box(nodes, (2, 3, 2))
    held = box[0] * box[1] * box[2]
    assert held >= nodes and list(box) == sorted(box, reverse=True)
    # whole units: some assignment of the sides to the axes is a multiple of (2, 3, 2)
    from itertools import permutations

    assert any(a % 2 == 0 and b % 3 == 0 and c % 2 == 0 for a, b, c in permutations(box))
    # no box of whole units with a shorter longest side holds the job (exhaustive check)
    L = box[0]
    for a in range(2, L, 2):
        for b in range(3, L, 3):
            for c in range(2, L, 2):
                assert a * b * c < nodes


def test_unit_box_examples():
    assert unit_box(512, (2, 3, 2)) == (9, 8, 8)
    assert unit_box(384, (2, 3, 2)) == (8, 8, 6)
    assert unit_box(12, (2, 3, 2)) == (3, 2, 2)


def test_a_requested_shape_sets_the_cut_and_the_halves():
    topo = Topology("torus", link=1.0, shape=(4, 8, 16))
    assert topo.box(512) == (16, 8, 4)
    assert topo.cut_capacity(512, 1.0) == 2 * 512 // 16
    assert topo.half(300) == 256
    with pytest.raises(ValueError, match="holds 512 nodes, the job needs 600"):
        topo.box(600)
    # without a unit or a shape: the most nearly cubic box of exactly the job's nodes
    assert Topology("torus", link=1.0).box(512) == (8, 8, 8)
    assert Topology("torus", link=1.0).half(512) == 256
    # the halves decide which bytes cross: nodes 0..255 below a cut at 256
    assert crossing_bytes([0, 255, 256], [300, 10, 0], [1.0, 2.0, 4.0], 300, 256) == 5.0


def test_fugaku_prices_a_longer_box_slower_by_its_cut():
    """The same world Alltoall on 512 nodes: a 16x8x4 box has half the links across its cut
    of the 9x8x8 the unit rule picks, and every node of the job on one side or the other."""
    m = load_machine("fugaku")
    from dataclasses import replace

    P, b = 2048, 1 << 16
    step = Uniform(Groups.world(P), b)
    _, rule, _ = step_timing(step, placement(m, P, None, 4), np.zeros(P))
    long = replace(m, topology=replace(m.topology, shape=(4, 8, 16)))
    _, boxed, _ = step_timing(step, placement(long, P, None, 4), np.zeros(P))
    assert boxed.max() == pytest.approx(2 * 1024 * 1024 * b / (64 * 6.8e9), rel=1e-6)
    assert rule.max() == pytest.approx(2 * 1152 * 896 * b / (128 * 6.8e9), rel=1e-6)


@pytest.mark.parametrize(
    "line, message",
    [
        ("unit = [2, 3]", "network.topology.unit must be three positive integers"),
        ("shape = [4, 0, 4]", "network.topology.shape must be three positive integers"),
        ("unit = [2, 3, true]", "network.topology.unit must be three positive integers"),
    ],
)
def test_profile_refuses_a_malformed_unit_or_shape(tmp_path, line, message):
    from gcntrain.errors import InputError

    text = (tmp_path / "p.toml").write_text
    base = open(load_machine("fugaku").path).read()
    text(base.replace("unit = [2, 3, 2]", line))
    with pytest.raises(InputError, match=message):
        parse_machine(open(tmp_path / "p.toml").read(), str(tmp_path / "p.toml"))


def test_simulate_node_shape_reaches_the_plan_and_is_refused_where_it_cannot_hold(capsys):
    capsys.readouterr()
    assert run(["simulate", "--ranks", "64", "--machine", "fugaku", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["network"] == "torus 4x3x2 (24 nodes allocated)"
    argv = ["simulate", "--ranks", "64", "--machine", "fugaku", "--node-shape", "2x8x2"]
    assert run([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["network"] == "torus 8x2x2 (32 nodes allocated)"
    for args, words in [
        (["--machine", "fugaku", "--node-shape", "2x2x2"], "2x2x2 holds 8 nodes, the job needs 16"),
        (["--machine", "abci", "--node-shape", "2x2x4"], "profile abci's topology is fattree"),
        (["--node-shape", "2x2x4"], "--node-shape need --machine PROFILE"),
        (["--machine", "fugaku", "--node-shape", "2x2"], "not three positive integers"),
    ]:
        assert run(["simulate", "--ranks", "64", *args]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        errors = [e for e in err if e.startswith("gcntrain: error") or "Error:" in e]
        assert len(errors) == 1 and words in errors[0], err


def test_api_takes_node_shape_as_a_tuple():
    from gcntrain import api

    s = api.simulate(None, 64, scheme="1d", machine="fugaku", node_shape=(2, 8, 2))
    assert s["network"] == "torus 8x2x2 (32 nodes allocated)"
