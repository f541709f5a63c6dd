"""``--scheme auto``'s search prunes (`gcntrain.simulate.bound`) and deals its configurations
(`gcntrain.simulate.deal`) without changing its answer: on every part count from 1 to 4,
the processes' pruned parts, merged as `gcntrain.job.auto` merges them, give the same best
configuration and runner-up as one full search; every configuration's compute bound is at
most its predicted epoch; and the bound does prune."""

from __future__ import annotations

import pytest

from gcntrain.data.generate import rmat, sbm
from gcntrain.data.store import write_graph
from gcntrain.model.trainer import TrainConfig
from gcntrain.simulate import sweep as S
from gcntrain.simulate.autogrid import reusable_source
from gcntrain.simulate.bound import compute_bound
from gcntrain.simulate.deal import deal
from gcntrain.simulate.machine import parse_machine
from gcntrain.simulate.timing import Placement
from tests.test_machine import GOOD

CONFIG = TrainConfig(epochs=3)
#: a machine whose kernels are a hundred times slower than GOOD's: compute dominates the
#: epoch, so the bound prunes (on GOOD, latencies dominate these small graphs' epochs)
SLOW = GOOD.replace("{ 16 = 2.0, 4 = 1.0, 64 = 4.0 }", "{ 16 = 0.02, 4 = 0.01, 64 = 0.04 }")
SLOW = SLOW.replace("gemm_gflops = 30", "gemm_gflops = 0.3")


def machine(name: str):
    return parse_machine(SLOW if name == "slow" else GOOD, name)


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    """A skewed R-MAT graph (block partitions unbalanced) and a planted partition (sparse
    bag-of-words features; the partitioners find its blocks)."""
    folder = tmp_path_factory.mktemp("prune")
    out = {}
    for name, g in (
        ("rmat", rmat(8, edge_factor=6, seed=11, num_features=12, num_classes=3)),
        ("sbm", sbm(300, 4, 0.08, 0.005, seed=3, num_features=10)),
    ):
        out[name] = folder / f"{name}.h5"
        write_graph(out[name], g)
    return out


def choice(ranking: list[dict]) -> tuple:
    """(label, epoch) of the recommended row and of the runner-up, as `auto.choose` tells."""
    best = S.recommend(S.SweepResult(ranking, None, [], 0.0, 0.0))
    others = [r for r in ranking if r["exact"] and r["fits"] and r is not best]
    nxt = others[0] if others else {"label": None, "epoch_seconds": None}
    return best["label"], best["epoch_seconds"], nxt["label"], nxt["epoch_seconds"]


CASES = [("rmat", "slow", P) for P in (1, 2, 3, 4)]
CASES += [("sbm", "slow", 2), ("sbm", "slow", 3), ("rmat", "good", 2), ("rmat", "good", 4)]


@pytest.mark.parametrize("graph,profile,P", CASES)
def test_the_pruned_dealt_search_chooses_as_the_full_search(graphs, graph, profile, P):
    place = Placement(P, 2 if P % 2 == 0 else 1, machine(profile))  # one node and two
    kw = {"exact_only": True, "strict": False}
    full = S.sweep(graphs[graph], CONFIG, P, place, **kw)
    rows, total, pruned = [], 0, 0
    for i in range(P):
        part = S.sweep(graphs[graph], CONFIG, P, place, share=(i, P), prune=True, **kw)
        rows += part.ranking
        pruned += part.pruned
        total += len(part.ranking) + len(part.refused) + part.pruned
    assert total == len(full.ranking) + len(full.refused)  # every configuration counted
    # ties as the processes' round-robin parts resolved them before the deal and the bound
    assert choice(S.merged_ranking(rows, P, P)) == choice(S.merged_ranking(full.ranking, P, P))
    # the priced rows are the full search's own
    byname = {r["label"]: r for r in full.ranking}
    for r in rows:
        mine = {k: v for k, v in r.items() if k != "plan_seconds"}
        assert mine == {k: v for k, v in byname[r["label"]].items() if k != "plan_seconds"}
    if profile == "slow" and P > 1:
        assert pruned > 0  # the bound cut something: the comparison above tested pruning


@pytest.mark.parametrize("graph,profile", [("rmat", "good"), ("sbm", "slow")])
def test_the_bound_never_exceeds_the_predicted_epoch(graphs, graph, profile):
    P = 4
    place = Placement(P, 2, machine(profile))
    source, support = reusable_source(graphs[graph], CONFIG)
    numberings, derived = {}, {}
    widths = {"num_features": None, "num_classes": None}
    checked = 0
    for cand in S.candidates(P):
        sim = S._prepare(cand, source, CONFIG, P, support, numberings, widths, 0, derived)
        if isinstance(sim, dict):
            continue
        bound = compute_bound(sim, CONFIG, place)
        row, _ = S._priced(cand, sim, CONFIG, place, 0.0)
        assert 0.0 < bound <= row["epoch_seconds"], row["label"]
        checked += 1
    assert checked > 40


def test_the_deal_covers_every_configuration_once_and_keeps_slow_partitions_together():
    P = 4
    cands = [c for c in S.candidates(P) if S._exact(c, P)]
    parts = deal(cands, P, CONFIG, 0, P)
    assert sorted(i for part in parts for i in part) == list(range(len(cands)))
    assert all(parts)
    slow = {}
    for r, part in enumerate(parts):
        for i in part:
            c = cands[i]
            if c.partition in ("metis", "libra"):
                slow.setdefault((c.partition, c.scheme == "1.5d"), set()).add(r)
    assert slow and all(len(ranks) == 1 for ranks in slow.values())
