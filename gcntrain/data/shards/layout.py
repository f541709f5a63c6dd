"""Names of the sharded-store layout (docs/format.md): formats, file names, labels."""

from __future__ import annotations

import os

from gcntrain.data.validate import MASK_NAMES

STORE_FORMAT = "gcntrain-shards"
SHARD_FORMAT = "gcntrain-shard"
NODES_FORMAT = "gcntrain-nodes"
PERM_FORMAT = "gcntrain-perm"
MANIFEST_NAME = "manifest.json"
PERM_NAME = "perm.h5"
KINDS = ("rows", "blocks2d", "edges")

#: Vertex-cut arrays of an edges shard: clone ids, root parts, replica lists of the roots.
CUT_ARRAYS = ("ids", "root", "replica_ptr", "replica_parts")
#: Arrays hashed as int64 whatever their stored width; each is required in its file.
ID_ARRAYS = ("indptr", "indices", "orig_ids", *CUT_ARRAYS)
#: Node data a shard or node file may hold besides `orig_ids`, in hashing order.
NODE_NAMES = ("features", "labels", *MASK_NAMES)
#: Datasets of a file holding CSR rows, and of a file holding node data, in hashing order.
CSR_ARRAYS = ("indptr", "indices", "data")
NODE_ARRAYS = ("orig_ids", *NODE_NAMES)


def shard_label(k: int) -> str:
    """How messages name row shard `k`."""
    return f"shard {k}"


def block_label(i: int, j: int) -> str:
    """How messages name block (i, j)."""
    return f"shard ({i}, {j})"


def nodes_label(i: int) -> str:
    """How messages name the node file of block row `i`."""
    return f"node file of block row {i}"


def plain_name(name: object) -> bool:
    """Whether `name` is a bare file name (no directory part, not '.' or '..')."""
    return (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and os.path.basename(name) == name
        and "\\" not in name
    )
