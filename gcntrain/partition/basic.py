"""Structure-blind vertex partitions: contiguous blocks and (balanced) random assignment."""

from __future__ import annotations

import numpy as np

from gcntrain.errors import InputError


def check_parts(n: int, P: int) -> None:
    """Raise `InputError` unless ``1 <= P <= n``.

    Parameters
    ----------
    n : number of vertices (rows)
    P : requested number of parts
    """
    if P < 1:
        raise InputError(f"number of parts must be >= 1 (got {P})")
    if P > n:
        raise InputError(f"number of parts ({P}) exceeds the number of vertices ({n})")


def block_bounds(n: int, P: int) -> np.ndarray:
    """Boundaries of `P` near-equal contiguous blocks of ``range(n)``.

    Returns
    -------
    int64 array (P + 1,): block p is ``[bounds[p], bounds[p + 1])``; the first ``n % P``
    blocks hold one element more than the others.
    """
    base, extra = divmod(int(n), int(P))
    sizes = np.full(P, base, dtype=np.int64)
    sizes[:extra] += 1
    bounds = np.zeros(P + 1, dtype=np.int64)
    np.cumsum(sizes, out=bounds[1:])
    return bounds


def block_partition(n: int, P: int) -> np.ndarray:
    """Contiguous row blocks: vertex i goes to the block containing it.

    Parameters
    ----------
    n : number of vertices
    P : number of parts, ``1 <= P <= n``

    Returns
    -------
    int64 array (n,) of part ids; part sizes differ by at most one.
    """
    check_parts(n, P)
    bounds = block_bounds(n, P)
    return np.repeat(np.arange(P, dtype=np.int64), np.diff(bounds))


def random_partition(n: int, P: int, seed: int = 0, balanced: bool = True) -> np.ndarray:
    """Random vertex partition.

    Parameters
    ----------
    n : number of vertices
    P : number of parts, ``1 <= P <= n``
    seed : random seed
    balanced : if True (default), a random permutation of the vertices is cut into `P`
        near-equal blocks (part sizes differ by at most one); if False, every vertex picks its
        part uniformly and independently (sizes are binomial, some parts may be empty).

    Returns
    -------
    int64 array (n,) of part ids.
    """
    check_parts(n, P)
    rng = np.random.default_rng(seed)
    if not balanced:
        return rng.integers(0, P, size=n, dtype=np.int64)
    part = np.empty(n, dtype=np.int64)
    part[rng.permutation(n)] = block_partition(n, P)
    return part
