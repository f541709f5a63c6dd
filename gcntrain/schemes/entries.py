"""Per-entry passes of the plans over a whole matrix, a range of row blocks at a time.

The plans count, for every stored entry of S, which blocks or ranks it concerns (the row
schemes' transposition pairs, p2p's halo rows, the 2D stage tables, Plexus' loading
routes), and the counts are sums over entries.  Holding an int64 row, column and owner per
entry of the whole matrix costs 24 bytes or more per entry at once; these helpers walk
ranges of whole row blocks of about `BLOCK_ENTRIES` entries and combine the results, which
are equal, array for array, to those of one pass over all entries.
"""

from __future__ import annotations

import numpy as np

from gcntrain.comm.exchange import Pairs
from gcntrain.partition.unique import unique_ints
from gcntrain.schemes.layout import block_pair_counts, needed_pairs

#: stored entries per range of row blocks (the last block of a range may exceed it)
BLOCK_ENTRIES = 1 << 22


def block_ranges(indptr: np.ndarray, offsets: np.ndarray, limit: int | None = None):
    """[b0, b1) ranges of the row blocks `offsets` holding about `limit` entries each
    (default `BLOCK_ENTRIES`; at least one block each; empty blocks join a range)."""
    limit = BLOCK_ENTRIES if limit is None else int(limit)
    at = np.asarray(indptr, dtype=np.int64)[np.asarray(offsets, dtype=np.int64)]
    B = at.shape[0] - 1
    out, b0 = [], 0
    while b0 < B:
        b1 = int(np.searchsorted(at, at[b0] + limit, side="right")) - 1
        b1 = min(max(b1, b0 + 1), B)
        out.append((b0, b1))
        b0 = b1
    return out


def range_entries(M, offsets: np.ndarray, b0: int, b1: int, rows: bool = False):
    """(row block of every entry, column of every entry[, row of every entry]) of the rows
    of blocks [b0, b1) of M (int64)."""
    lo, hi = int(offsets[b0]), int(offsets[b1])
    a, b = int(M.indptr[lo]), int(M.indptr[hi])
    per_block = np.diff(np.asarray(M.indptr[np.asarray(offsets[b0 : b1 + 1])], dtype=np.int64))
    blocks = np.repeat(np.arange(b0, b1, dtype=np.int64), per_block)
    cols = np.asarray(M.indices[a:b], dtype=np.int64)
    if not rows:
        return blocks, cols
    r = np.repeat(np.arange(lo, hi, dtype=np.int64), np.diff(np.asarray(M.indptr[lo : hi + 1])))
    return blocks, cols, r


def entry_pair_counts(M, offsets: np.ndarray, limit: int | None = None):
    """``block_pair_counts(*entry_blocks(M, offsets), offsets)``, a range of row blocks at a
    time: (row block, column block, entries) of every nonzero pair, sorted by pair."""
    offsets = np.asarray(offsets, dtype=np.int64)
    parts = [
        block_pair_counts(*range_entries(M, offsets, b0, b1), offsets)
        for b0, b1 in block_ranges(M.indptr, offsets, limit)
    ]
    if not parts:
        return block_pair_counts(np.zeros(0, np.int64), np.zeros(0, np.int64), offsets)
    # ranges of whole row blocks: a later range's pairs all sort after an earlier one's
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(3))


class RangedPairs:
    """A plan's `Pairs` steps over the block pairs of M's entries (`entry_pair_counts`),
    built and priced a range of row blocks at a time: ``rank_pairs(row block, column block,
    entries)`` maps a range's block pairs to rank pairs ``(src, dst, entries)``, each moving
    ``entries * unit`` bytes for every unit of `units` (one `Pairs` step per unit).  Only
    `volumes` is read (a setup step); the ranges' pairs are disjoint, so the sums are those
    of the whole steps, to the byte, without holding every pair at once."""

    def __init__(self, P: int, M, offsets, rank_pairs, units, limit: int | None = None):
        self.P, self.M, self.offsets = P, M, np.asarray(offsets, dtype=np.int64)
        self.rank_pairs, self.units, self.limit = rank_pairs, tuple(units), limit

    def volumes(self) -> np.ndarray:
        out = np.zeros((self.P, 4), dtype=np.int64)
        for b0, b1 in block_ranges(self.M.indptr, self.offsets, self.limit):
            blocks = block_pair_counts(*range_entries(self.M, self.offsets, b0, b1), self.offsets)
            src, dst, cnt = self.rank_pairs(*blocks)
            for unit in self.units:
                out += Pairs(self.P, src, dst, cnt * unit).volumes()
        return out


def halo_needed_pairs(M, offsets: np.ndarray, limit: int | None = None, ids: bool = True):
    """``needed_pairs(*entry_blocks(M, offsets), offsets)``, a range of row blocks at a
    time: (src, dst, ptr, ids), pairs sorted by (dst, src); with ``ids=False``, (src, dst,
    rows per pair) without the row ids (what a plan prices)."""
    offsets = np.asarray(offsets, dtype=np.int64)
    src, dst, ptr, rows = [], [], [], []
    done = 0
    for b0, b1 in block_ranges(M.indptr, offsets, limit):
        s, d, p, i = needed_pairs(*range_entries(M, offsets, b0, b1), offsets)
        src.append(s)
        dst.append(d)
        ptr.append(p[:-1] + done if ids else np.diff(p))
        if ids:
            rows.append(i)
        done += int(p[-1])
        del i
    if not src:
        s, d, p, i = needed_pairs(np.zeros(0, np.int64), np.zeros(0, np.int64), offsets)
        return (s, d, p, i) if ids else (s, d, np.diff(p))
    cat = np.concatenate
    if not ids:  # one list joined and dropped at a time: 32 bytes per pair at the peak, not 48
        out = []
        for parts in (src, dst, ptr):
            out.append(cat(parts))
            parts.clear()
        return out[0], out[1], out[2].astype(np.int64, copy=False)
    ptr.append(np.array([done], dtype=np.int64))
    return cat(src), cat(dst), cat(ptr).astype(np.int64), cat(rows)


def entry_chunks(M, limit: int | None = None, offsets: np.ndarray | None = None):
    """Yield (row, column) int64 of the stored entries of M, ranges of whole rows of about
    `limit` entries at a time (of whole blocks of `offsets` when given), in row order."""
    n = M.shape[0]
    bounds = np.arange(n + 1, dtype=np.int64) if offsets is None else np.asarray(offsets)
    for b0, b1 in block_ranges(M.indptr, bounds, limit):
        lo, hi = int(bounds[b0]), int(bounds[b1])
        ptr = np.asarray(M.indptr[lo : hi + 1], dtype=np.int64)
        rows = np.repeat(np.arange(lo, hi, dtype=np.int64), np.diff(ptr))
        yield rows, np.asarray(M.indices[ptr[0] : ptr[-1]], dtype=np.int64)


def merge_counts(keys: list, counts: list) -> tuple[np.ndarray, np.ndarray]:
    """(sorted unique keys, summed counts) of several (keys, counts) parts: what one
    ``unique_ints(all keys, return_counts=True)`` gives (int64)."""
    if not keys:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if len(keys) == 1:
        return np.asarray(keys[0], np.int64), np.asarray(counts[0], np.int64)
    u, inv = unique_ints(np.concatenate(keys), return_inverse=True)
    # float64 sums of integer counts below 2**53 are exact
    tot = np.bincount(inv.ravel(), weights=np.concatenate(counts), minlength=u.shape[0])
    return u.astype(np.int64), tot.astype(np.int64)
