"""Plans from a rows shard store, read a block of rows at a time, equal the plans of the
graph file and of the graph in memory to the byte (`gcntrain.simulate.heldstore`,
`gcntrain.data.store_rows`); `simulate --max-memory` chooses the block size and refuses a
graph whose smallest block cannot fit."""

from __future__ import annotations

import json

import numpy as np
import pytest

import gcntrain.simulate.run as run
import gcntrain.simulate.support as support
from gcntrain.cli.main import run as main
from gcntrain.data.generate import rmat
from gcntrain.data.partition_file import write_partition
from gcntrain.data.shards import write_row_shards
from gcntrain.data.store import write_graph
from gcntrain.model.trainer import TrainConfig
from gcntrain.partition.basic import random_partition
from gcntrain.partition.result import PartitionResult
from gcntrain.simulate.run import plan_training, simulation_summary
from gcntrain.simulate.target import PlanTarget

P = 6
#: the acceptance list: (scheme, options, partition: None, "random" or "file")
PLANS = [
    ("1d", {}, None),
    ("p2p", {}, "random"),
    ("p2p", {}, "file"),
    ("2d", {"grid": "2x3"}, None),
    ("3d", {"grid": "1x2x3"}, None),
    ("plexus", {"grid": "1x2x3"}, None),
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("planstore")
    g = rmat(8, edge_factor=4, seed=5, num_features=6, num_classes=3)
    write_graph(d / "g.h5", g)
    # a store of another part count and partition: every plan numbers the held graph as
    # the file's; and one whose shards are the 1d run's own parts
    write_row_shards(g, random_partition(g.n, 4, seed=2), d / "st4", num_parts=4)
    write_row_shards(g, np.repeat(np.arange(P), -(-g.n // P))[: g.n], d / "st6", num_parts=P)
    part = random_partition(g.n, P, seed=7)
    res = PartitionResult("random", P, part=part, graph_content_hash=g.content_hash())
    write_partition(d / "part.h5", res)
    return {"graph": g, "dir": d}


def _plan(source, scheme, opts, partition, max_memory=None):
    config = TrainConfig(epochs=3, early_stopping=0)
    target = PlanTarget(source, config, scheme, P, dict(opts), partition)
    sim = plan_training(target, max_memory=max_memory)
    out = simulation_summary(sim, config, partition, 0.0)
    del out["simulate_seconds"], out["peak_rss_bytes"]
    return out, sim.table.phases(), sim.table.epoch_totals("work")


def _same(a, b):
    assert a[0] == b[0]
    assert a[1].keys() == b[1].keys()
    for k in a[1]:
        assert np.array_equal(a[1][k], b[1][k]), k
    assert np.array_equal(a[2], b[2])


@pytest.mark.parametrize(("scheme", "opts", "partition"), PLANS)
def test_store_file_and_memory_plans_are_equal(inputs, monkeypatch, scheme, opts, partition):
    d = inputs["dir"]
    spec = str(d / "part.h5") if partition == "file" else partition
    ref = _plan(inputs["graph"], scheme, opts, spec)
    _same(_plan(str(d / "g.h5"), scheme, opts, spec), ref)
    reads = []
    real = run.plan_graph

    def counted(src, numbering):
        reads.append(getattr(src, "held_rows", False))
        return real(src, numbering)

    monkeypatch.setattr(run, "plan_graph", counted)
    monkeypatch.setattr(support, "BLOCK_ENTRIES", 37)  # many blocks inside each shard
    _same(_plan(str(d / "st4"), scheme, opts, spec), ref)
    _same(_plan(str(d / "st4"), scheme, opts, spec, max_memory=4 << 30), ref)
    assert reads == [True, True]  # read block by block, never assembled whole


def test_store_own_numbering_equals_the_assembled_store(inputs, monkeypatch):
    """A store whose shards are the run's parts is planned in its own numbering (as train
    reads it): the figures of the whole store assembled in memory, the pre-issue path."""
    st = str(inputs["dir"] / "st6")
    got = _plan(st, "1d", {}, None)
    monkeypatch.setattr(run, "held_source", lambda src: src)  # the assembled store
    _same(got, _plan(st, "1d", {}, None))


def test_block_store_written_a_shard_at_a_time_equals_the_whole_writer(inputs, tmp_path):
    """`gcntrain shard --parts B` (block partition) streams the graph file a shard at a time
    (`gcntrain.data.shard_stream`): the store `write_row_shards` writes from the whole
    graph, manifest for manifest (every shard's content hash), and it plans the same."""
    g, d = inputs["graph"], inputs["dir"]
    assert main(["shard", str(d / "g.h5"), "-o", str(tmp_path / "a"), "--parts", "5"]) == 0
    write_row_shards(g, (np.arange(g.n) * 5) // g.n, tmp_path / "b", num_parts=5)
    man = [json.loads((tmp_path / x / "manifest.json").read_text()) for x in "ab"]
    assert man[0] == man[1] and len(man[0]["shards"]) == 5
    _same(
        _plan(str(tmp_path / "a"), "2d", {"grid": "2x3"}, None),
        _plan(g, "2d", {"grid": "2x3"}, None),
    )


def test_max_memory_too_small_is_one_line_exit_2(inputs, capsys):
    g = str(inputs["dir"] / "g.h5")
    argv = ["simulate", g, "-P", "4", "--scheme", "1d", "--epochs", "2", "--json"]
    assert main([*argv, "--max-memory", "1M"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs at least" in err[0] and "--max-memory is 1.0 MiB" in err[0]
    assert main([*argv, "--max-memory", "2G"]) == 0
    assert json.loads(capsys.readouterr().out)["scheme"] == "1d"


@pytest.mark.parametrize(("P", "n"), [(9, 500), (300, 40)])  # a byte per pair; sorted keys
def test_unordered_pairs_counts_what_unique_counts(P, n):
    from gcntrain.schemes.p2p import unordered_pairs

    rng = np.random.default_rng(P)
    src, dst = rng.integers(0, P, n), rng.integers(0, P, n)
    keep = rng.random(n) < 0.7
    want = np.unique(np.minimum(src, dst)[keep] * P + np.maximum(src, dst)[keep]).size
    assert unordered_pairs(src, dst, P, keep, block=7) == want > 0


def test_a_plan_from_a_store_names_its_numbering_as_train_does(inputs, capsys):
    """simulate STORE names the store's own numbering "store", as `train` does; a rank
    count the store's shards do not fit is planned as the graph it holds and says that
    `train` would refuse it (issue 51, item 10)."""
    st4 = str(inputs["dir"] / "st4")
    assert main(["simulate", st4, "--ranks", "4", "--scheme", "1d", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["partition"] == "store" and err == ""
    assert main(["simulate", st4, "--ranks", "3", "--scheme", "1d", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["partition"] == "block"
    assert f"simulate: planned the graph {st4} holds, numbered as its graph file" in err
    assert "`train` reads this store as it is only on 4 ranks" in err
    g = str(inputs["dir"] / "g.h5")
    assert main(["simulate", g, "--ranks", "3", "--scheme", "1d", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["partition"] == "block" and "planned the graph" not in err
