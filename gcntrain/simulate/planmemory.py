"""The planner's memory under ``simulate --max-memory``: the block size it reads the
adjacency with, and a refusal, before anything is read, when the plan cannot fit.

A plan holds, whatever its block size, about `ROW_BYTES` per node (row pointers, degrees,
node data counts, the numbering) and then, in two phases (measured, docs/simulator.md
"Planning large graphs"):

* while the support S is built: 12 bytes per entry S can have (int32 column, float64
  value; the adjacency's entries plus a diagonal), plus the block of the adjacency being
  read, about `BLOCK_ENTRY_BYTES` per entry (its column ids and values as read, and
  `support_rows`' output for it).  A store of many small shards is read in blocks of that
  size all the same (`gcntrain.data.store_rows.row_store_blocks`);
* while the plan is priced: S's pattern, 5 bytes per entry (int32 column, one byte), the
  range passes of the schemes over S (`gcntrain.schemes.entries`: about
  `RANGE_ENTRY_BYTES` per entry of a range of `BLOCK_ENTRIES`) or, where larger, the
  scheme's tables over rank pairs with the passes that build them
  (`Scheme.plan_table_bytes`: p2p's bitmap of rank pairs, its halo exchange held as per-rank
  sums; Plexus' loading routes).

A rows store is summarised one shard at a time: its largest shard is held whole once,
before S is built.  What is not counted: the whole halo pairs of p2p on a support that is
not symmetric (its backward exchange compares them pair by pair) and the pairs the time
model reads (``--machine``); the tables of the schemes other than p2p and Plexus beyond
their range passes.
"""

from __future__ import annotations

from gcntrain.data.memory import fmt_bytes
from gcntrain.errors import InputError
from gcntrain.schemes.entries import BLOCK_ENTRIES

#: bytes per entry S can have while it is built (int32 column id, float64 value)
SUPPORT_ENTRY_BYTES = 12
#: bytes per entry of S's pattern once built (int32 column id, a one-byte value)
PATTERN_ENTRY_BYTES = 5
#: bytes per node the plan holds besides S (R-MAT 24, 2d at P = 8192: 7.48 GiB in all)
ROW_BYTES = 80
#: bytes per adjacency entry of the block being read (ids and values read, the block's
#: support rows)
BLOCK_ENTRY_BYTES = 48
#: bytes per entry of a range pass over S (row block, column, owner, keys and their sort:
#: R-MAT 20 at P = 8192, 1d and p2p, about 70)
RANGE_ENTRY_BYTES = 80
#: the interpreter, numpy, scipy and numba, before any graph is read
BASE_BYTES = 300 << 20
#: the fewest adjacency entries a block is given (the smallest block that is worth reading)
MIN_BLOCK = 1 << 16
#: the most: larger blocks are no faster (the default block of `support.BLOCK_ENTRIES`),
#: and a block that spans shards would hold gigabytes where the budget allows them
MAX_BLOCK = 1 << 22


def block_entries(
    n: int,
    nnz: int,
    max_memory: float | None,
    where: str,
    shard: int = 0,
    tables: tuple[int, str] = (0, ""),
):
    """Adjacency entries per block for a graph of `n` nodes and `nnz` stored entries
    within `max_memory` bytes (None: the default block, no bound); `shard`: bytes of the
    largest shard a store summary holds whole; `tables`: (bytes, what) of the scheme's
    tables (`Scheme.plan_table_bytes`).  `InputError` (one line naming what would not fit and both
    sizes, the fixed `BASE_BYTES` apart from the graph's part) when the summary, the support
    with the smallest block (`MIN_BLOCK`) or the priced plan cannot fit."""
    if max_memory is None:
        return None
    entries = nnz + n
    held = BASE_BYTES + ROW_BYTES * n
    build = held + SUPPORT_ENTRY_BYTES * entries
    ranges = RANGE_ENTRY_BYTES * min(BLOCK_ENTRIES, entries)
    phases = [
        (
            build + BLOCK_ENTRY_BYTES * MIN_BLOCK,
            f"the support matrix of {nnz:,} entries and {n:,} nodes",
        ),
        (held + shard, "the node counts and the largest shard of the store"),
        (
            held + PATTERN_ENTRY_BYTES * entries + max(ranges, tables[0]),
            f"the support's pattern and {tables[1] or 'the passes over it'}",
        ),
    ]
    need, what = max(phases, key=lambda p: p[0])
    if need > max_memory:
        alone = BASE_BYTES >= max_memory
        raise InputError(
            f"planning needs at least {fmt_bytes(need)}: {fmt_bytes(BASE_BYTES)} fixed per "
            f"process (the interpreter and its libraries) and {fmt_bytes(need - BASE_BYTES)} "
            f"for {what}, --max-memory is {fmt_bytes(max_memory)}"
            + ("; the fixed part alone is more than that: raise --max-memory" if alone else ""),
            where,
        )
    room = int((max_memory - build) // BLOCK_ENTRY_BYTES)
    return max(MIN_BLOCK, min(MAX_BLOCK, room))


def plan_block(src, meta, max_memory: float | None, scheme=None, P: int = 1):
    """`block_entries` of a plan of `scheme` (a `Scheme`, or None) on `P` ranks from `src`
    (a rows store's largest shard and the scheme's tables included)."""
    shard = 0
    if getattr(src, "held_rows", False):
        from gcntrain.data.store_rows import shard_bytes

        shard = max((shard_bytes(src.man, k) for k in range(len(src.man.shards))), default=0)
    tables = (0, "") if scheme is None else scheme.plan_table_bytes(int(P), meta.n, meta.nnz)
    return block_entries(meta.n, meta.nnz, max_memory, src.label, shard, tables)
