"""Bytes of the data a rank holds: every distinct numpy buffer reachable from given objects.

`held_bytes` walks the attributes of gcntrain objects (the Ops, the `LocalGraph`, the
layout), dicts, lists and tuples, and counts each numpy array's underlying buffer once
(views by their base; scipy sparse matrices by their arrays), skipping communicators (their
counters are bookkeeping, not data).  It measures what a rank really keeps, without a
per-scheme list, so a scheme's estimate of its held data (`Scheme.held_estimate`) can be
checked against it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def _root(a: np.ndarray) -> np.ndarray:
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a


def held_bytes(*objs, skip: tuple[type, ...] = ()) -> int:
    """Sum of the distinct numpy buffers reachable from `objs`, not entering objects of the
    types in `skip` (see the module docstring)."""
    seen_obj: set[int] = set()
    seen_buf: set[int] = set()
    total = 0
    stack = list(objs)
    while stack:
        o = stack.pop()
        if o is None or id(o) in seen_obj or (skip and isinstance(o, skip)):
            continue
        seen_obj.add(id(o))
        if isinstance(o, np.ndarray):
            r = _root(o)
            if id(r) not in seen_buf:
                seen_buf.add(id(r))
                total += int(r.nbytes)
        elif sp.issparse(o):
            stack += [getattr(o, k, None) for k in ("data", "indices", "indptr", "row", "col")]
        elif isinstance(o, dict):
            stack += list(o.values())
        elif isinstance(o, list | tuple | set | frozenset):
            stack += list(o)
        elif (type(o).__module__ or "").startswith("gcntrain"):
            stack += list(getattr(o, "__dict__", {}).values())
    return total


def layout_bytes(ctx) -> int:
    """What a rank holds of the plan's layout (`ctx.layout`): its arrays, less the store
    numbering's perm / inv, which only the plan has (`PlanContext.store`)."""
    total = held_bytes(ctx.layout)
    num = ctx.layout.numbering
    if ctx.store:
        total -= held_bytes(num.perm, num.inv)
    return total
