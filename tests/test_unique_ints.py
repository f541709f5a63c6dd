"""`unique_ints` (the searches' and plans' unique by one stable sort) returns what
``np.unique`` returns, for every combination of its outputs."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gcntrain.partition.csr import unique_ints


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8])
@pytest.mark.parametrize("n", [0, 1, 7, 5000])
def test_unique_ints_is_np_unique(dtype, n):
    a = np.random.default_rng(n).integers(0, max(2, n // 3), n).astype(dtype)
    for flags in itertools.product([False, True], repeat=3):
        kw = dict(zip(("return_index", "return_inverse", "return_counts"), flags))
        want, got = np.unique(a, **kw), unique_ints(a, **kw)
        if not isinstance(want, tuple):
            want, got = (want,), (got,)
        assert len(want) == len(got)
        for w, g in zip(want, got):
            assert w.dtype == g.dtype and np.array_equal(w, g), (kw, w.dtype, g.dtype)


def test_unique_ints_refuses_floats():
    with pytest.raises(TypeError):
        unique_ints(np.array([1.0, 2.0]))
