"""Sharded graph stores: 1D row blocks ("rows"), 2D r x c blocks ("blocks2d") and vertex-cut
shards ("edges").

A store is a directory with `manifest.json`, `perm.h5` and one HDF5 file per shard; the exact
layout is specified in docs/format.md. Readers of one shard open only the manifest and that
shard's own file, so shards may be staged to node-local disks.

Modules: `layout` (format and file names), `reorder` (pure CSR renumbering helpers),
`edges` (the vertex-cut layout of an edges store), `hashing` (content hashes), `manifest`
(the record and its JSON text), `fields` and `manifest_check` (reading and validating a
manifest), `outdir` (atomic output directory), `perm` (perm.h5), `write` (the writers),
`records` and `read` (one-file readers), `assembly` (whole-store reassembly).
"""

from gcntrain.data.shards.assembly import assemble, assemble_blocks, assemble_edges, assemble_rows
from gcntrain.data.shards.edges import EdgeLayout, edge_layout
from gcntrain.data.shards.hashing import hash_arrays
from gcntrain.data.shards.layout import (
    KINDS,
    MANIFEST_NAME,
    NODES_FORMAT,
    PERM_FORMAT,
    PERM_NAME,
    SHARD_FORMAT,
    STORE_FORMAT,
)
from gcntrain.data.shards.manifest import Manifest, manifest_text
from gcntrain.data.shards.manifest_check import open_manifest
from gcntrain.data.shards.perm import read_perm
from gcntrain.data.shards.read import (
    read_block_nodes,
    read_block_shard,
    read_edge_shard,
    read_row_shard,
)
from gcntrain.data.shards.records import BlockShard, EdgeShard, NodeBlock, RowShard
from gcntrain.data.shards.reorder import (
    even_ranges,
    inverse_permutation,
    part_row_ranges,
    permute_csr,
    row_sort_order,
    sort_rows_csr,
    split_columns,
)
from gcntrain.data.shards.write import write_block_shards, write_edge_shards, write_row_shards

__all__ = [
    "KINDS",
    "MANIFEST_NAME",
    "NODES_FORMAT",
    "PERM_FORMAT",
    "PERM_NAME",
    "SHARD_FORMAT",
    "STORE_FORMAT",
    "BlockShard",
    "EdgeLayout",
    "EdgeShard",
    "Manifest",
    "NodeBlock",
    "RowShard",
    "assemble",
    "assemble_blocks",
    "assemble_edges",
    "assemble_rows",
    "edge_layout",
    "even_ranges",
    "hash_arrays",
    "inverse_permutation",
    "manifest_text",
    "open_manifest",
    "part_row_ranges",
    "permute_csr",
    "read_block_nodes",
    "read_block_shard",
    "read_edge_shard",
    "read_perm",
    "read_row_shard",
    "row_sort_order",
    "sort_rows_csr",
    "split_columns",
    "write_block_shards",
    "write_edge_shards",
    "write_row_shards",
]
