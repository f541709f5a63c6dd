"""A rows shard store as a plan reads it: the graph it holds, one shard at a time.

`gcntrain train` reads a rows store with the store's own partition, and refuses a store
whose shards are not the run's row parts.  A plan of such a run uses the store's numbering
as the run would (`PlanContext.store`: the ranks hold no perm / inv).  Any other plan (another
part count, ``--partition``, a block scheme) is a plan of the graph the store holds,
numbered as from the graph file it was sharded from (``--partition`` applies, default
block), so that a graph too large to hold in memory is planned from its store with the
figures of the graph file, to the byte.  Either way the store is read a block of rows at a
time (`gcntrain.simulate.plangraph.read_store_plan_graph`).
"""

from __future__ import annotations

from gcntrain.errors import InputError
from gcntrain.schemes.loading.numbering import STARTUP_METHODS, whole_graph_numbering


class HeldRowStore:
    """A `RowStoreSource` for plans (module docstring); `kind` is "store" while a plan uses
    the store's own numbering, "file" when the held graph is numbered as a file's (set by
    `gcntrain.simulate.plangraph.plan_graph`)."""

    held_rows = True
    cut_store = False

    def __init__(self, src):
        self.src = src
        self.path = src.path
        self.label = src.label
        self.man = src.man
        self.kind = "store"

    def meta(self):
        return self.src.meta()

    def numbering(self, parts: int, spec, seed: int, col_parts=None):
        """The store's own numbering where the run would read the store as it is (no
        --partition, its shards the run's row parts, a row scheme), else the graph file's."""
        plain = spec is None or (isinstance(spec, str) and spec == "block")
        if plain and col_parts is None and self.man.num_parts == parts:
            return self.src.numbering(parts, spec, seed, col_parts)
        if isinstance(spec, str) and spec in STARTUP_METHODS:
            raise InputError(
                f"--partition {spec} from a shard store: write a partition file of the "
                f"graph with `gcntrain partition -m {spec}` and give it to --partition",
                self.path,
            )
        return whole_graph_numbering(self, parts, spec, seed)


def held_source(src):
    """`src`, or a rows store wrapped as `HeldRowStore`."""
    from gcntrain.schemes.loading.stores import RowStoreSource

    return HeldRowStore(src) if isinstance(src, RowStoreSource) else src
