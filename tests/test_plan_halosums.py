"""p2p's halo exchange priced from per-rank sums (`gcntrain.schemes.halosums`): the volumes
of the `Pairs` steps built from the whole pairs, to the byte, and the rank pairs that
`unordered_pairs` counts; the pairs themselves are built only when a step's arrays are read
(the time model)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from gcntrain.comm.exchange import Pairs
from gcntrain.schemes.entries import halo_needed_pairs
from gcntrain.schemes.halosums import HaloSums, SummedPairs
from gcntrain.schemes.p2p import unordered_pairs


def _matrix(n: int, density: float, seed: int) -> sp.csr_matrix:
    M = sp.random(n, n, density=density, format="csr", random_state=seed)
    M = (M + M.T).tocsr()
    M.sort_indices()
    return M


@pytest.mark.parametrize(("n", "P", "limit"), [(90, 7, 13), (60, 60, 5), (40, 3, None)])
def test_sums_price_what_the_whole_pairs_price(n, P, limit):
    M = _matrix(n, 0.08, seed=n + P)
    rng = np.random.default_rng(P)
    cuts = np.sort(rng.choice(np.arange(1, n), P - 1, replace=False))
    offsets = np.concatenate([[0], cuts, [n]]).astype(np.int64)
    src, dst, rows = halo_needed_pairs(M, offsets, ids=False)
    assert src.size > 0
    sums = HaloSums.of(M, offsets, P, limit)
    built = []

    def arrays():
        built.append(1)
        return src, dst, rows

    for unit, reverse in [(12, False), (8, True), (1, False), (0, False)]:
        step = SummedPairs(P, sums, arrays, unit, reverse, kind="p2p", window=True)
        a, b = (dst, src) if reverse else (src, dst)
        want = Pairs(P, a, b, rows * unit, kind="p2p", window=True).volumes()
        assert not built  # priced without the pairs
        assert np.array_equal(step.volumes(), want)
        assert np.array_equal(step.src, a) and np.array_equal(step.nbytes, rows * unit)
        assert isinstance(step, Pairs) and step.kind == "p2p" and step.window
        built.clear()
    assert sums.rows == int(rows.sum())
    assert sums.rank_pairs == unordered_pairs(src, dst, P, src != dst)
