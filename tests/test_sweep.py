"""`simulate --sweep` and the recommender: the candidate set, rows equal to single plans, the
ranking, exactness flags, the memory check, the CLI; and the planning speed-ups the sweep
relies on (owner lookup table, counted peers, cached numberings) against their plain forms."""

from __future__ import annotations

import json

import numpy as np
import pytest

from gcntrain.cli.main import run
from gcntrain.data.generate import rmat
from gcntrain.data.store import write_graph
from gcntrain.errors import InputError
from gcntrain.model.trainer import TrainConfig
from gcntrain.schemes import registry
from gcntrain.schemes.layout import owner_of
from gcntrain.simulate import sweep as S
from gcntrain.simulate.machine import parse_machine
from gcntrain.simulate.run import plan_training
from gcntrain.simulate.target import PlanTarget
from gcntrain.simulate.timing import Placement, _peers, time_summary
from tests.test_machine import GOOD

P = 4


@pytest.fixture(scope="module")
def machine():
    return parse_machine(GOOD, "good")


@pytest.fixture(scope="module")
def graph_file(tmp_path_factory):
    g = rmat(8, edge_factor=6, seed=11, num_features=12, num_classes=3)
    path = tmp_path_factory.mktemp("sweep") / "g.h5"
    write_graph(path, g)
    return path


@pytest.fixture(scope="module")
def result(graph_file, machine):
    return S.sweep(graph_file, TrainConfig(epochs=8), P, Placement(P, 2, machine))


def test_candidates_cover_every_scheme_option_and_partition():
    cands = S.candidates(P)
    assert len(cands) == len(set(cands))
    for name, sch in registry.SCHEMES.items():
        mine = [c for c in cands if c.scheme == name]
        if not sch.uses_mpi:
            assert not mine  # serial is not a P-rank configuration
            continue
        want = {
            (tuple(sorted(o.items())), p)
            for o in sch.sweep_options(P)
            for p in sch.sweep_partitions
        }
        assert {(c.options, c.partition) for c in mine} == want, name
    assert {c.option_dict["replication"] for c in cands if c.scheme == "1.5d"} == {2}


def test_given_options_and_partitions_restrict_the_candidates():
    cands = S.candidates(P, partitions=["metis"], options={"replication": 4, "delay": "5"})
    for c in cands:
        edge = registry.SCHEMES[c.scheme].default_partition in S.EDGE_PARTITIONS
        assert c.partition == ("libra" if edge else "metis")
    assert {c.option_dict["replication"] for c in cands if c.scheme == "1.5d"} == {4}
    assert {c.option_dict["delay"] for c in cands if c.scheme == "vertexcut"} == {"5"}
    only = S.candidates(P, schemes=["2d"])
    assert {c.scheme for c in only} == {"2d"}
    assert {c.option_dict["grid"] for c in only} == set(registry.SCHEMES["2d"].grid_candidates(P))


def test_rows_equal_single_plans_and_are_ranked(result, graph_file, machine):
    rows = result.ranking
    assert rows and not result.refused
    keys = [S.rank_key(r) for r in rows]
    assert keys == sorted(keys)
    place = Placement(P, 2, machine)
    cfg = TrainConfig(epochs=8)
    for r in (rows[0], rows[len(rows) // 2], rows[-1]):
        target = PlanTarget(graph_file, cfg, r["scheme"], P, r["values"], r["partition"])
        sim = plan_training(target)
        t = time_summary(sim, cfg, place)
        assert r["epoch_seconds"] == pytest.approx(t["epoch_seconds"], rel=1e-12)
        assert r["options"] == sim.config.to_dict()
    approx = {(r["scheme"], r["exact"]) for r in rows if not r["exact"]}
    assert approx == {("vertexcut", False), ("hier", False)}
    for r in rows:
        sch = registry.SCHEMES[r["scheme"]]
        assert r["exact"] == sch.is_exact(sch.configure(P, r["options"]))
    assert S.recommend(result) == next(r for r in rows if r["exact"])
    assert result.partition_seconds > 0  # metis and libra ran, once per part count


def test_memory_check_and_no_exact_fit(graph_file):
    tiny = parse_machine(GOOD.replace("[node]", "[node]\nmemory_gib = 1e-9"), "tiny")
    res = S.sweep(graph_file, TrainConfig(epochs=8), P, Placement(P, 2, tiny), schemes=["1d"])
    assert all(not r["fits"] for r in res.ranking)
    with pytest.raises(InputError, match="no exact configuration fits"):
        S.recommend(res)


def test_exact_only_skips_approximate_modes(graph_file, machine):
    res = S.sweep(
        graph_file,
        TrainConfig(epochs=8),
        P,
        Placement(P, 2, machine),
        schemes=["vertexcut", "hier"],
        exact_only=True,
    )
    assert res.ranking and all(r["exact"] for r in res.ranking)


def test_simulate_sweep_cli(graph_file, capsys):
    argv = ["simulate", str(graph_file), "-P", "4", "--epochs", "8", "--machine", "local"]
    assert run([*argv, "--sweep", "--scheme", "1.5d", "--json"]) == 0
    out, err = capsys.readouterr()
    d = json.loads(out)
    assert d["configurations"] == len(d["ranking"]) == 3  # c = 2 x block, random, metis
    # no placement given: what `train --scheme auto` prices on this machine, said on stderr
    assert d["recommended"] == d["ranking"][0] and (d["nodes"], d["ranks_per_node"]) == (1, 4)
    assert "1 node x 4 ranks assumed" in err
    assert run([*argv, "--sweep", "--scheme", "1.5d", "--json", "--ranks-per-node", "2"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["nodes"] == 2 and "assumed" not in err
    assert run([*argv, "--sweep", "--top", "2"]) == 0
    out = capsys.readouterr().out
    assert "recommended" in out and "more (--top N" in out
    for bad, needle in (
        (["simulate", str(graph_file), "-P", "4", "--sweep"], "give --machine"),
        ([*argv, "--sweep", "--per-rank", "x.csv"], "does not combine with --sweep"),
    ):
        assert run(bad) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0]


def test_owner_table_equals_searchsorted():
    rng = np.random.default_rng(5)
    for trial in range(60):
        parts, n = int(rng.integers(1, 40)), int(rng.integers(1, 50000))
        off = np.concatenate([[0], np.sort(rng.integers(0, n + 1, parts - 1)), [n]])
        off = off + (trial % 3)  # offsets not starting at 0
        cols = rng.integers(off[0], off[-1], int(rng.integers(0, 100000)))
        if trial % 4 == 0:
            cols = cols.astype(np.int32)
        got = owner_of(cols, off)
        want = np.searchsorted(off, cols, side="right") - 1
        assert np.array_equal(got, want) and got.dtype == want.dtype


def test_peer_counts_equal_distinct_partners():
    rng = np.random.default_rng(6)
    n = 64
    for m in (0, 5, 3000):
        k = rng.integers(0, n * n, m)
        s, d = k // n, k % n
        s, d = s[s != d], d[s != d]
        key = np.unique(np.concatenate([s * n + d, d * n + s]))
        assert np.array_equal(_peers(s, d, n), np.bincount(key // n, minlength=n))


def test_numbering_cache_computes_each_partition_once(graph_file):
    cache: dict = {}
    cfg = TrainConfig(epochs=2)
    a = plan_training(PlanTarget(graph_file, cfg, "1d", 3, {}, "metis"), numberings=cache)
    b = plan_training(PlanTarget(graph_file, cfg, "p2p", 3, {}, "metis"), numberings=cache)
    assert len(cache) == 1
    ((numbering, seconds),) = cache.values()
    assert seconds > 0
    np.testing.assert_array_equal(a.ctx.layout.offsets, b.ctx.layout.offsets)
    fresh = plan_training(PlanTarget(graph_file, cfg, "1d", 3, {}, "metis"))
    assert a.table.epoch_totals().tolist() == fresh.table.epoch_totals().tolist()


@pytest.mark.parametrize("size", [1, 2, 4, 6, 8])
def test_configure_accepts_its_own_configuration(size):
    """A run's stored configuration (config.json's scheme_options) configures the same run
    again: what `plot measured` and a resumed or re-planned run rely on."""
    checked = 0
    for name, sch in registry.SCHEMES.items():
        for vals in sch.sweep_options(size):
            try:
                first = sch.configure(size, vals)
            except InputError:
                continue  # this option set does not run on `size` ranks
            again = sch.configure(size, json.loads(json.dumps(first.to_dict())))
            assert again == first, name
            checked += 1
    assert checked >= len(registry.SCHEMES)
