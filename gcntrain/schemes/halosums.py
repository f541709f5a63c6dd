"""p2p's halo exchange priced from per-rank sums, without holding its rank pairs.

A plan of p2p prices the same halo pairs many times (every product of every layer, the
request exchange of the setup), and every price is a sum over the pairs: bytes and
messages each rank sends and receives.  Holding the pairs (source, destination, rows: 24
bytes per nonzero rank pair, 1.6 GB for R-MAT 24 at P = 8192) is therefore not needed:
`HaloSums` walks S a range of row blocks at a time (`gcntrain.schemes.entries`, the same
`needed_pairs` as the runtime), keeps per rank the rows and pairs it sends and receives,
and marks the unordered rank pairs in a bitmap of P * P bits (`plan_notes`).  The sums
are exact (int64), so a `SummedPairs` step has the volumes of the `Pairs` step it stands
for, to the byte.  The time model (`simulate --machine`) reads a step's pairs one by one:
for it `SummedPairs` builds them on first reading (`arrays`), held whole from then on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gcntrain.comm.exchange import Pairs
from gcntrain.schemes.entries import block_ranges, range_entries
from gcntrain.schemes.layout import needed_pairs


@dataclass
class HaloSums:
    """Per-rank sums of the halo pairs of one product (rows `src` sends `dst`).

    Attributes
    ----------
    rows_sent, rows_recv : (P,) int64 rows each rank sends / receives per product
    pairs_sent, pairs_recv : (P,) int64 nonzero pairs each rank sends / receives on
    rows : rows per product in all
    rank_pairs : distinct unordered rank pairs {src, dst}
    """

    rows_sent: np.ndarray
    rows_recv: np.ndarray
    pairs_sent: np.ndarray
    pairs_recv: np.ndarray
    rows: int
    rank_pairs: int

    @classmethod
    def of(cls, M, offsets: np.ndarray, P: int, limit: int | None = None) -> HaloSums:
        """The sums of ``halo_needed_pairs(M, offsets, ids=False)`` over the `P` row blocks
        `offsets`, a range of about `limit` entries of M at a time (its default when None)."""
        offsets = np.asarray(offsets, dtype=np.int64)
        sums = np.zeros((4, P), dtype=np.float64)  # integer sums below 2**53 are exact
        seen = np.zeros((P * P + 7) // 8, dtype=np.uint8)
        for b0, b1 in block_ranges(M.indptr, offsets, limit):
            s, d, ptr, ids = needed_pairs(*range_entries(M, offsets, b0, b1), offsets)
            del ids
            rows = np.diff(ptr)
            live = (s != d) & (rows > 0)
            s, d, rows = s[live], d[live], rows[live]
            sums[0] += np.bincount(s, weights=rows, minlength=P)
            sums[1] += np.bincount(d, weights=rows, minlength=P)
            sums[2] += np.bincount(s, minlength=P)
            sums[3] += np.bincount(d, minlength=P)
            key = np.minimum(s, d) * P + np.maximum(s, d)
            np.bitwise_or.at(seen, key >> 3, np.left_shift(1, key & 7).astype(np.uint8))
            del s, d, rows, key
        ints = sums.astype(np.int64)
        marked = int(np.unpackbits(seen).sum()) if seen.size else 0
        return cls(ints[0], ints[1], ints[2], ints[3], int(ints[0].sum()), marked)

    def volumes(self, unit: int, reverse: bool = False) -> np.ndarray:
        """(P, 4) volumes of ``Pairs(src, dst, rows * unit)`` (``reverse``: of the pairs
        turned round, dst -> src), as `Pairs.volumes` counts them."""
        sent, recv = (
            (self.rows_recv, self.rows_sent) if reverse else (self.rows_sent, self.rows_recv)
        )
        ms, mr = (
            (self.pairs_recv, self.pairs_sent) if reverse else (self.pairs_sent, self.pairs_recv)
        )
        unit = int(unit)
        if unit <= 0:  # no bytes: nothing moves
            return np.zeros((sent.shape[0], 4), dtype=np.int64)
        return np.stack([sent * unit, recv * unit, ms, mr], axis=1).astype(np.int64)


class SummedPairs(Pairs):
    """The `Pairs` step of a product's halo pairs, each moving ``rows * unit`` bytes
    (``reverse``: the pairs turned round): `volumes` from `HaloSums`; ``src``, ``dst`` and
    ``nbytes`` built from ``arrays()`` (the whole pairs, for the time model) when read."""

    def __init__(self, P: int, sums: HaloSums, arrays, unit: int, reverse=False, **kw):
        self.P, self.sums, self._arrays = P, sums, arrays
        self.unit, self.reverse = int(unit), bool(reverse)
        self.kind = kw.get("kind", "alltoallv")
        self.window = bool(kw.get("window", False))
        self.ids = []
        self._nbytes = None

    def _pairs(self, k: int) -> np.ndarray:
        if k == 2:
            if self._nbytes is None:  # read several times by the time model
                self._nbytes = np.asarray(self._arrays()[2], dtype=np.int64) * self.unit
            return self._nbytes
        src, dst, _ = self._arrays()
        return (dst, src)[k] if self.reverse else (src, dst)[k]

    src = property(lambda self: self._pairs(0))
    dst = property(lambda self: self._pairs(1))
    nbytes = property(lambda self: self._pairs(2))

    def volumes(self) -> np.ndarray:
        return self.sums.volumes(self.unit, self.reverse)
