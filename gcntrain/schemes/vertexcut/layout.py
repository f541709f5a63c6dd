"""The layout of a vertex cut: the root numbering with its edge assignment (`cut_numbering`)
and `CutLayout`, which rows and entries each rank loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gcntrain.comm.exchange import Groups
from gcntrain.errors import InputError
from gcntrain.partition.cut_layout import EdgeCut
from gcntrain.schemes.loading import graph_structure
from gcntrain.schemes.protocol import LoadRequest, Numbering

# -- numbering: the edge assignment --------------------------------------------------------


def cut_numbering(source, parts: int, spec, seed: int) -> Numbering:
    """The root numbering of a vertex cut, with the cut attached (`Numbering.cut`).

    `spec`: None or "libra" (computed here with `seed`, identically on every rank), or a
    vertex-cut partition file of this graph with `parts` parts.
    """
    from gcntrain.data.partition_file import read_vertex_cut
    from gcntrain.data.shards.edges import edge_layout
    from gcntrain.partition.libra import libra_partition

    if source.kind == "store":
        if not getattr(source, "cut_store", False):
            raise InputError(
                "store is not a vertex-cut store; write one with `gcntrain shard -m libra`",
                source.path,
            )
        return source.numbering(parts, spec, seed)
    if not isinstance(spec, str | None) or spec in ("block", "random"):
        given = "a partition vector" if not isinstance(spec, str) else f"--partition {spec}"
        if spec == "random":
            given += " (or --permute random)"
        raise InputError(
            f"{given} is a vertex partition; this scheme needs an edge partition: "
            "--partition libra (default) or a file from `gcntrain partition -m libra`"
        )
    if spec is None or spec == "libra":
        indptr, indices = graph_structure(source)
        vc = libra_partition(indptr, indices, parts, seed=seed)
        lay = edge_layout(indptr, indices, vc.edge_part, vc.root, parts)
    else:
        if not Path(spec).exists():
            raise InputError(
                f"--partition must be libra or a vertex-cut partition file; no such file: {spec}"
            )
        meta = source.meta()
        edge_part, root, _ = read_vertex_cut(
            spec, meta.content_hash, meta.nnz, parts, "the number of ranks", n=meta.n
        )
        indptr, indices = graph_structure(source)
        try:
            lay = edge_layout(indptr, indices, edge_part, root, parts)
        except InputError as e:
            raise InputError(f"{spec}: {e}") from None
    return Numbering(lay.perm, lay.inv, lay.offsets, cut=lay.cut)


# -- layout --------------------------------------------------------------------------------


@dataclass
class CutLayout:
    """Pure layout of a vertex cut over `size` ranks: rank p roots the new ids
    ``offsets[p]:offsets[p+1]`` and holds the clones `EdgeCut.clones_of(p)`.  Without the cut
    (a shard store at run time, or after setup, which drops it: `keep_offsets`) it still
    answers `request` and `owned`."""

    numbering: Numbering
    size: int
    delay: int | None

    @property
    def offsets(self) -> np.ndarray:
        return self.numbering.offsets

    @property
    def cut(self) -> EdgeCut | None:
        return self.numbering.cut

    def request(self, rank: int) -> LoadRequest:
        p = int(rank)
        rows = (int(self.offsets[p]), int(self.offsets[p + 1]))
        if self.cut is None:
            return LoadRequest(rows, part=p)
        return LoadRequest(rows, ids=self.cut.clones_of(p), entries=self.cut.entries_of(p), part=p)

    def keep_offsets(self) -> None:
        """Forget the whole graph's edge assignment (a rank needs only the offsets once its
        entries are loaded)."""
        self.numbering = Numbering(None, None, self.offsets)

    def owned(self, rank: int) -> int:
        """The first k local rows (its roots) are the rank's canonical rows."""
        return int(self.offsets[rank + 1] - self.offsets[rank])

    def block_groups(self) -> Groups:
        return Groups.world(self.size)
