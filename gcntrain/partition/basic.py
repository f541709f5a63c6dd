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


def rebalance_rows(part: np.ndarray, weight: np.ndarray, P: int, eps: float) -> np.ndarray:
    """`part` with no part above ``ceil((1 + eps) n / P)`` rows, moving the lightest rows.

    A partition that balances the rows' nonzeros (the SpMM work) can leave the rows (the
    dense work) far from balanced where many rows weigh next to nothing: the isolated and
    degree-1 vertices of a power-law graph go wherever the cut is least, often all to a few
    parts.  Each part above the cap gives up its lightest rows (by `weight`, ties by index)
    until it holds the cap; they go, lightest first, to the parts below the cap, the part
    with the least weight first, each filled up to the cap.  The weight moved is the least
    any move to the cap can move, so the weights' balance changes by little; rows that
    weigh nothing move at no cost to it.  Deterministic; a copy is returned.

    Parameters
    ----------
    part : int array (n,) with values in ``[0, P)``
    weight : non-negative array (n,), e.g. the rows' nonzeros
    P : number of parts
    eps : allowed row imbalance

    Returns
    -------
    int64 array (n,).
    """
    part = np.asarray(part, dtype=np.int64).copy()
    n = part.shape[0]
    cap = max(int(np.ceil((1.0 + eps) * n / P)), -(-n // P))
    rows = np.bincount(part, minlength=P)
    if rows.max(initial=0) <= cap:
        return part
    weight = np.asarray(weight, dtype=np.float64)
    order = np.lexsort((np.arange(n), weight))  # lightest first, ties by index
    rank = np.empty(n, dtype=np.int64)  # a row's place among its part's rows, lightest first
    by_part = order[np.argsort(part[order], kind="stable")]
    starts = np.concatenate(([0], np.cumsum(rows)[:-1]))
    rank[by_part] = np.arange(n) - np.repeat(starts, rows)
    surplus = np.maximum(rows - cap, 0)
    moving = order[rank[order] < surplus[part[order]]]  # lightest first over all parts
    load = np.bincount(part, weights=weight, minlength=P)
    room = np.maximum(cap - rows, 0)
    targets = [int(p) for p in np.lexsort((np.arange(P), load)) if room[p] > 0]
    slots = np.repeat(np.array(targets, dtype=np.int64), room[targets])
    part[moving] = slots[: moving.shape[0]]
    return part
