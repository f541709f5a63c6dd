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


def test_no_key_without_a_content_hash():
    assert key(meta=GraphMeta(100, 900, 8, 3, "g", "")) == ""


def test_a_stored_choice_reads_back(tmp_path, monkeypatch):
    monkeypatch.setenv("GCNTRAIN_CACHE_DIR", str(tmp_path))
    choice = {"scheme": "p2p", "label": "p2p [metis]", "predicted_epoch_seconds": 0.01}
    assert auto._cached("k" * 32) is None
    auto._store("k" * 32, choice)
    assert auto._cached("k" * 32) == choice
    (tmp_path / "auto" / ("k" * 32 + ".json")).write_text("{not json")
    assert auto._cached("k" * 32) is None
