"""The planner's memory under ``simulate --max-memory``: the block size it reads the
adjacency with, and a refusal when even the smallest block cannot fit.

What a plan holds whatever its block size (measured, docs/simulator.md "Planning large
graphs"): while the support S is built, 12 bytes per entry it can have (int32 column,
float64 value; the adjacency's entries plus a diagonal), and about `ROW_BYTES` per node
(row pointers, degrees, node data counts, the numbering); a block of the adjacency being
read costs about `BLOCK_ENTRY_BYTES` per entry more (its column ids and values as read,
and `support_rows`' output for it).  A rows store is summarised one shard at a time: its
largest shard is held whole once, before S is built.  The rank-pair tables of the row
schemes are not part of this bound.
"""

from __future__ import annotations

from gcntrain.data.memory import fmt_bytes
from gcntrain.errors import InputError

#: bytes per entry S can have while it is built (int32 column id, float64 value)
SUPPORT_ENTRY_BYTES = 12
#: bytes per node the plan holds besides S (R-MAT 24, 2d at P = 8192: 7.48 GiB in all)
ROW_BYTES = 80
#: bytes per adjacency entry of the block being read (ids and values read, the block's
#: support rows)
BLOCK_ENTRY_BYTES = 48
#: the interpreter, numpy, scipy and numba, before any graph is read
BASE_BYTES = 300 << 20
#: the fewest adjacency entries a block is given (the smallest block that is worth reading)
MIN_BLOCK = 1 << 16
#: the most: larger blocks are no faster
MAX_BLOCK = 1 << 26


def block_entries(n: int, nnz: int, max_memory: float | None, where: str, shard: int = 0):
    """Adjacency entries per block for a graph of `n` nodes and `nnz` stored entries
    within `max_memory` bytes (None: the default block, no bound); `shard`: bytes of the
    largest shard a store summary holds whole.  `InputError` (one line naming both sizes)
    when even `MIN_BLOCK` entries cannot fit."""
    if max_memory is None:
        return None
    fixed = BASE_BYTES + SUPPORT_ENTRY_BYTES * (nnz + n) + ROW_BYTES * n
    need = fixed + BLOCK_ENTRY_BYTES * MIN_BLOCK
    summary = BASE_BYTES + ROW_BYTES * n + shard
    if max(need, summary) > max_memory:
        what = (
            f"the support matrix of {nnz:,} entries and {n:,} nodes"
            if need >= summary
            else "the largest shard of the store beside the node counts"
        )
        raise InputError(
            f"planning needs at least {fmt_bytes(max(need, summary))} for {what}, "
            f"--max-memory is {fmt_bytes(max_memory)}",
            where,
        )
    room = int((max_memory - fixed) // BLOCK_ENTRY_BYTES)
    return max(MIN_BLOCK, min(MAX_BLOCK, room))


def plan_block(src, meta, max_memory: float | None):
    """`block_entries` of a plan's source (a rows store's largest shard included)."""
    shard = 0
    if getattr(src, "held_rows", False):
        from gcntrain.data.store_rows import shard_bytes

        shard = max((shard_bytes(src.man, k) for k in range(len(src.man.shards))), default=0)
    return block_entries(meta.n, meta.nnz, max_memory, src.label, shard)
