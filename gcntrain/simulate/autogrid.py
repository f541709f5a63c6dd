"""``--grid auto``: plan every process grid a scheme offers for P and keep the one with the
least communication volume per rank (the Plexus configuration search, done by plan rather
than by a formula).

The volume of a grid is the largest bytes sent + received by any rank in a steady-state
training epoch (each rank's median over the planned epochs); ties go to fewer messages, then
to the grid's text.  Grids the input cannot take (a 2D store fixes its block grid) are listed
with the reason and never chosen.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from gcntrain import status
from gcntrain.errors import InputError
from gcntrain.schemes import registry
from gcntrain.simulate.summary import epoch_median
from gcntrain.simulate.target import PlanTarget


def reusable_source(source, config):
    """(source, support matrix) to plan every candidate with: a single graph file is read
    once, its content hashed once and its support matrix built once (a store is left to the
    plan: its numbering, and so the grids it admits, are its own)."""
    from gcntrain.model.normalize import support_kind, support_matrix
    from gcntrain.schemes.loading import FileSource, GraphSource, open_source

    src = open_source(source)
    if isinstance(src, FileSource):
        from gcntrain.data.store import read_graph

        src = GraphSource(read_graph(src.path), src.path)
    if isinstance(src, GraphSource):
        kind = support_kind(config.model, config.aggregator)
        return src, support_matrix(src.graph, kind)
    return source, None


def _grid_row(grid, sim, ranks: int) -> dict:
    """A planned grid's row of the ranking: its steady epoch's busiest volumes."""
    med = epoch_median(sim.table.epoch_totals())  # (P, 4)
    if med.ndim == 1:
        med = np.zeros((ranks, 4))
    return {
        "grid": grid,
        "volume_max": int((med[:, 0] + med[:, 1]).max(initial=0)),
        "bytes_sent_max": int(med[:, 0].max(initial=0)),
        "messages_max": int(med[:, 2].max(initial=0)),
    }


def rank_grids(target: PlanTarget) -> list[dict]:
    """Every candidate grid of ``target.scheme`` on ``target.ranks`` (the run `target`
    names, its grid option set to each candidate), best first: ``{"grid", "volume_max",
    "bytes_sent_max", "messages_max"}``, then the impossible ones with ``"error"``."""
    from gcntrain.simulate.run import plan_training

    ranks = target.ranks
    sch = registry.get(target.scheme, ranks)
    cands = sch.grid_candidates(ranks)
    if not cands:
        raise InputError(f"--grid auto: the {sch.name} scheme has no process grid")
    source, support = reusable_source(target.source, target.config)
    target = replace(target, source=source)
    good, bad = [], []
    numberings: dict = {}  # grids of the same row parts share a partition, a support, ...
    derived: dict = {}
    with status.phase(f"ranking the grids of {sch.name} on {ranks} ranks") as running:
        for i, grid in enumerate(cands):
            running.step(i, len(cands))
            try:
                sim = plan_training(
                    target.with_options(sch.with_grid(target.options, grid)),
                    support=support,
                    numberings=numberings,
                    derived=derived,
                )
            except InputError as e:
                bad.append({"grid": grid, "error": str(e)})
                continue
            good.append(_grid_row(grid, sim, ranks))
    if not good:
        raise InputError(f"--grid auto: no grid of {sch.name} fits: {bad[0]['error']}")
    good.sort(key=lambda r: (r["volume_max"], r["messages_max"], r["grid"]))
    return good + bad
