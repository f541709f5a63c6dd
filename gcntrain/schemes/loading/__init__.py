"""Where a rank's data come from: the embedded default, a Graph, a graph file, or a store.

`open_source(source)` returns a `Source` with three methods, run on every rank under
collective error agreement:

* ``meta()`` -> `GraphMeta` (read without loading arrays);
* ``numbering(parts, spec, seed, col_parts)`` -> `Numbering`: the partition `spec`
  (block | random | PART.h5) renumbered part by part, or the store's own;
* ``load(request, numbering)`` -> `LocalGraph`: the rows, adjacency columns and feature
  columns of a `LoadRequest`.  A graph file is read row-selectively
  (`gcntrain.data.rows`), or whole with full validation (content hash included) when the
  request is the whole graph; a row store opens only the manifest and the rank's shard; a 2D
  block store only the manifest, the rank's block and its block row's node file.

Modules: `numbering` (the partition spec to a `Numbering`: `partition_vector`,
`numbering_of`, `whole_graph_numbering`, `graph_structure`), `assemble` (a rank's rows to a
`LocalGraph`: `local_graph`, `check_classes`), `sources` (`GraphSource`, `FileSource`,
`open_source`) and `stores` (the shard-store sources `RowStoreSource`, `BlockStoreSource`,
`EdgeStoreSource`).
"""

from gcntrain.schemes.loading.assemble import _rows_in_order as _rows_in_order
from gcntrain.schemes.loading.assemble import check_classes, local_graph
from gcntrain.schemes.loading.numbering import (
    STARTUP_METHODS,
    graph_structure,
    numbering_of,
    partition_vector,
    whole_graph_numbering,
)
from gcntrain.schemes.loading.sources import (
    DEFAULT_SOURCE,
    FileSource,
    GraphSource,
    is_shard_store,
    open_source,
)
from gcntrain.schemes.loading.stores import (
    BlockStoreSource,
    EdgeStoreSource,
    RowStoreSource,
)

__all__ = [
    "DEFAULT_SOURCE",
    "STARTUP_METHODS",
    "BlockStoreSource",
    "EdgeStoreSource",
    "FileSource",
    "GraphSource",
    "RowStoreSource",
    "check_classes",
    "graph_structure",
    "is_shard_store",
    "local_graph",
    "numbering_of",
    "open_source",
    "partition_vector",
    "whole_graph_numbering",
]
