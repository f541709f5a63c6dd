"""`gcntrain.partition.unique.unique_ints` gives ``np.unique``'s results (values, first
indices, inverse, counts: the same values, dtypes and shapes) for every combination of
outputs, on keys with and without repeats, signed and unsigned, empty and single."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from gcntrain.partition.unique import unique_ints

RNG = np.random.default_rng(7)
KEYS = {
    "empty": np.zeros(0, dtype=np.int64),
    "one": np.array([5], dtype=np.int64),
    "same": np.full(9, 3, dtype=np.int64),
    "signed": RNG.integers(-50, 50, 2000),
    "distinct": RNG.permutation(10_000).astype(np.int64) * 7,
    "wide": RNG.integers(0, 2**62, 3000),
    "int32": RNG.integers(0, 7, 500).astype(np.int32),
    "uint16": RNG.integers(0, 300, 999).astype(np.uint16),
}


@pytest.mark.parametrize("name", list(KEYS))
@pytest.mark.parametrize("flags", list(itertools.product([False, True], repeat=3)))
@pytest.mark.parametrize("overwrite", [False, True])
def test_unique_ints_equals_np_unique(name, flags, overwrite):
    keys = KEYS[name]
    want = np.unique(keys, *flags)
    given = keys.copy()
    got = unique_ints(given, *flags, overwrite=overwrite)
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want)
    for w, g in zip(want, got):
        assert g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w)
    if not overwrite:
        assert np.array_equal(given, keys)  # the input left as it was


def test_unique_ints_refuses_what_np_unique_would_flatten_or_compare_as_floats():
    with pytest.raises(TypeError):
        unique_ints(np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(TypeError):
        unique_ints(np.zeros(3))
