"""Placement algebra of Plexus (pure): where every node-wise matrix of every layer sits on
the X x Y x Z grid (row axis, column axis, numbering) and how aggregation and the product
rotate it (see `gcntrain.schemes.plexus`)."""

from __future__ import annotations

from dataclasses import dataclass

PERMUTES = ("none", "double")


@dataclass(frozen=True)
class Place:
    """Placement of a node-wise matrix: rows cut along grid axis `row`, columns along `col`,
    rows in numbering `num`; replicated along the third axis `rep`."""

    row: int
    col: int
    num: int

    @property
    def rep(self) -> int:
        return 3 - self.row - self.col


def agg_out(p: Place) -> Place:
    """Placement of ``S @ X`` (and of the self-term move) for X at `p`."""
    return Place(p.rep, p.col, 1 - p.num)


def mm_out(p: Place) -> Place:
    """Placement of ``X @ W`` for X at `p`."""
    return Place(p.row, p.rep, p.num)


@dataclass(frozen=True)
class LayerPlan:
    """Placements of one layer: its input, the aggregation's input, the (neighbour) product's
    input, its output, and for GraphSAGE whether the self term is moved before its product
    (aggregation first) or after it (product first); None without a self term."""

    inp: Place
    agg: Place
    mm: Place
    out: Place
    self_first: bool | None


INPUT = Place(0, 1, 0)


def layer_plans(model) -> tuple[LayerPlan, ...]:
    """The placements of every layer of `model` (`Network.describe` rows), layer 0's input at
    (X, Y) in numbering 0."""
    plans, p = [], INPUT
    for layer in model:
        if layer["order"] == "mm_first":
            mm, agg = p, mm_out(p)
            out = agg_out(agg)
        else:
            agg, mm = p, agg_out(p)
            out = mm_out(mm)
        self_first = None if layer["kind"] != "sage-mean" else layer["order"] != "mm_first"
        plans.append(LayerPlan(p, agg, mm, out, self_first))
        p = out
    return tuple(plans)
