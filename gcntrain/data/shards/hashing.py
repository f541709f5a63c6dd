"""Content hashes of the arrays in a shard, block or node file (docs/format.md)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

from gcntrain.data.shards.layout import ID_ARRAYS
from gcntrain.errors import FormatError


def hash_arrays(items: Iterable[tuple[str, np.ndarray | None]]) -> str:
    """SHA-256 over named arrays, built like `Graph.content_hash` (docs/format.md).

    Id arrays (`indptr`, `indices`, `orig_ids` and an edges shard's `ids`, `root`,
    `replica_ptr`, `replica_parts`) are hashed as int64 so the stored width does not matter;
    absent arrays contribute their name and a marker.
    """
    h = hashlib.sha256()
    for name, a in items:
        h.update(name.encode())
        if a is None:
            h.update(b"\x00none")
            continue
        a = np.ascontiguousarray(a)
        if name in ID_ARRAYS:
            a = a.astype(np.int64, copy=False)
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(a.reshape(-1).view(np.uint8))  # the bytes of tobytes(), without a copy
    return h.hexdigest()


def check_hash(items: list[tuple[str, np.ndarray | None]], expected: str, where: str) -> None:
    """Raise `FormatError` unless `items` hash to `expected`."""
    actual = hash_arrays(items)
    if actual != expected:
        raise FormatError(
            f"content hash mismatch (attribute {expected[:12]}..., arrays hash "
            f"to {actual[:12]}...)",
            where,
        )
