"""Plexus layout (pure): the per-layer rotation of Figure 4, its shards, the double
permutation's balance on soc-Slashdot0902, and configuration errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from gcntrain.data.convert import convert_source
from gcntrain.errors import InputError
from gcntrain.model.trainer import TrainConfig
from gcntrain.schemes.plexus import INPUT, Place, agg_out, layer_plans, mm_out
from gcntrain.schemes.registry import SCHEMES
from gcntrain.simulate.run import plan_training
from gcntrain.simulate.target import PlanTarget

SHARED = Path(__file__).resolve().parents[2] / "shared"
X, Y, Z = 0, 1, 2


def gcn(n_layers: int, order: str = "agg_first", kind: str = "gcn") -> list[dict]:
    return [{"kind": kind, "order": order, "f_in": 8, "f_out": 8}] * n_layers


def test_layers_rotate_their_axes_as_in_figure_4():
    """Aggregation first (the paper's order): layer 0 reads F at (X, Y) with A sharded rows
    Z x columns X, writes (Z, X); layer 1 uses the YZ shard and writes (Y, Z); layer 2 the XY
    shard, writing (X, Y) again, so layer 3 reuses layer 0's shard: three unique shards."""
    plans = layer_plans(gcn(4))
    assert [(p.inp.row, p.inp.col) for p in plans] == [(X, Y), (Z, X), (Y, Z), (X, Y)]
    assert [(p.out.row, p.out.col) for p in plans] == [(Z, X), (Y, Z), (X, Y), (Z, X)]
    shards = [(p.agg.rep, p.agg.row) for p in plans]  # (rows of A, columns of A)
    assert shards == [(Z, X), (Y, Z), (X, Y), (Z, X)]
    assert plans[0].inp == INPUT
    # the numbering flips at every aggregation (double permutation alternates P_r / P_c)
    assert [p.out.num for p in plans] == [1, 0, 1, 0]


def test_product_first_and_graphsage_land_where_the_next_layer_reads():
    for order in ("agg_first", "mm_first"):
        for kind in ("gcn", "sage-mean"):
            plans = layer_plans(gcn(3, order, kind))
            for a, b in zip(plans[:-1], plans[1:]):
                assert a.out == b.inp
            for p in plans:
                if order == "mm_first":
                    assert p.mm == p.inp and agg_out(mm_out(p.inp)) == p.out
                else:
                    assert p.agg == p.inp and mm_out(agg_out(p.inp)) == p.out
                # the self term's move (S-free aggregation) reaches the same placement
                if kind == "sage-mean":
                    moved = (
                        mm_out(agg_out(p.inp)) if order == "agg_first" else agg_out(mm_out(p.inp))
                    )
                    assert moved == p.out
    assert Place(0, 1, 0).rep == 2 and Place(2, 0, 1).rep == 1


@pytest.mark.parametrize(
    "values,message",
    [
        ({"grid": "2x2"}, "--grid must look like XxYxZ"),
        ({"grid": "2x0x2"}, "dimensions must be >= 1"),
        ({"grid": "2x2x1"}, "process grid 2x2x1 needs 4 ranks, but the job has 8"),
        ({"grid": "2x2x2", "permute": "triple"}, "--permute must be none or double"),
        ({"grid": "2x2x2", "block_rows": -3}, "--block-rows must be >= 0"),
    ],
)
def test_invalid_configuration_is_one_input_error(values, message):
    with pytest.raises(InputError, match=message):
        SCHEMES["plexus"].configure(8, values)


def test_double_permutation_balances_slashdot_on_2x2x2(capsys):
    """soc-Slashdot0902 (symmetrized, self-loops added), 2 x 2 x 2: stored adjacency entries
    per rank (every shard a rank holds), max / mean, in the graph's order and with --permute
    double; the double permutation is within 1.05."""
    src = SHARED / "datasets" / "snap" / "soc-Slashdot0902.txt.gz"
    g = convert_source(str(src), symmetrize=True, self_loops="add")
    cfg = TrainConfig(epochs=1, dtype="float32", hidden=[16, 16])
    rows = []
    for permute in ("none", "double"):
        opts = {"grid": "2x2x2", "permute": permute}
        sim = plan_training(PlanTarget(g, cfg, "plexus", 8, opts, num_features=128, num_classes=16))
        per_shard = sim.scheme.shard_nnz(sim.ctx)
        total = per_shard.sum(axis=0)
        ratios = [float(s.max() / s.mean()) for s in per_shard]
        rows.append((permute, float(total.max() / total.mean()), ratios))
    with capsys.disabled():
        print("\n  order    max/mean nnz per rank   per shard (layer 0, 1, 2)")
        for permute, r, per in rows:
            print(f"  {permute:<8s} {r:22.4f}   " + "  ".join(f"{x:.4f}" for x in per))
    assert rows[1][1] <= 1.05 and max(rows[1][2]) <= 1.05
    assert rows[0][1] > rows[1][1]
