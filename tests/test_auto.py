"""``--scheme auto``'s cache key (`gcntrain.job.auto.cache_key`): every input of the choice
changes it, a graph without a content hash is not cached, and a stored choice reads back."""

from __future__ import annotations

import dataclasses

from gcntrain.job import auto
from gcntrain.model.trainer import TrainConfig
from gcntrain.schemes.graphs import GraphMeta
from gcntrain.simulate.local import load_machine


def key(**change):
    base = dict(
        meta=GraphMeta(100, 900, 8, 3, "g", "abc"),
        config=TrainConfig(epochs=50),
        size=4,
        per_node=4,
        options={},
        partition=None,
        partition_seed=0,
        prof=load_machine("abci"),
    )
    base.update(change)
    return auto.cache_key(**base)


def test_every_input_changes_the_key(tmp_path):
    k = key()
    assert len(k) == 32 and k == key()
    part = tmp_path / "p.h5"
    part.write_bytes(b"x")
    others = [
        key(meta=GraphMeta(100, 900, 8, 3, "g", "abd")),
        key(config=TrainConfig(epochs=50, hidden=[32])),
        key(size=8),
        key(per_node=2),
        key(options={"replication": 2}),
        key(partition="metis"),
        key(partition=str(part)),
        key(partition_seed=1),
        key(prof=load_machine("fugaku")),
    ]
    assert len({k, *others}) == len(others) + 1
    # epochs beyond what the sweep plans do not change the choice, nor where the profile lies
    assert key(config=TrainConfig(epochs=500)) == k
    moved = dataclasses.replace(load_machine("abci"), path=str(tmp_path / "abci.toml"))
    assert key(prof=moved) == k


def test_a_shard_store_keys_apart_from_its_graph_file(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / "manifest.json").write_text("{}")
    assert key(source=str(store)) not in ("", key(source="g.h5"))


def test_no_key_without_a_content_hash():
    assert key(meta=GraphMeta(100, 900, 8, 3, "g", "")) == ""


def test_a_stored_choice_reads_back(tmp_path, monkeypatch):
    monkeypatch.setenv("GCNTRAIN_CACHE_DIR", str(tmp_path))
    choice = {
        "scheme": "p2p",
        "values": {},
        "partition": "metis",
        "label": "p2p [metis]",
        "predicted_epoch_seconds": 0.01,
        "memory_bytes_max": 10,
        "machine": "abci",
        "configurations": 49,
        "runner_up": {"label": None, "predicted_epoch_seconds": None},
    }
    assert auto._cached("k" * 32) is None
    auto._store("k" * 32, choice)
    assert auto._cached("k" * 32) == choice
    # an entry short of a key (an older or damaged cache) is a miss, not a crash
    auto._store("k" * 32, {k: v for k, v in choice.items() if k != "label"})
    assert auto._cached("k" * 32) is None
    (tmp_path / "auto" / ("k" * 32 + ".json")).write_text("{not json")
    assert auto._cached("k" * 32) is None


def test_a_partition_vector_under_auto_is_one_clear_refusal(tmp_path, monkeypatch):
    """(The API can pass a partition as an array; the sweep chooses among methods.)"""
    import numpy as np
    import pytest

    from gcntrain.comm.communicator import SelfComm
    from gcntrain.data.generate import rmat
    from gcntrain.data.store import write_graph
    from gcntrain.errors import AgreedError

    monkeypatch.setenv("GCNTRAIN_CACHE_DIR", str(tmp_path))
    path = tmp_path / "g.h5"
    write_graph(path, rmat(6, edge_factor=4, seed=1, num_features=4, num_classes=3))
    part = np.zeros(64, dtype=np.int64)
    with pytest.raises(AgreedError, match="a partition vector needs an explicit scheme") as e:
        auto.choose(SelfComm(), str(path), TrainConfig(epochs=2), {}, part, 0, "abci", 1, None)
    assert e.value.status == 2
