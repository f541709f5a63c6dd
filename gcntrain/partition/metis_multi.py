"""METIS with several balance constraints (``ncon > 1``), called in pymetis' own library.

pymetis (2025.2) passes METIS one constraint whatever the length of ``vweights``: a weight
array of ``ncon * n`` entries is read as ``ncon = 1`` (its first n entries), so the
multi-constraint partitioning METIS offers (``METIS_PartGraphKway`` with ``ncon`` weights per
vertex, each balanced to the same ``ufactor``) is not reachable through its Python API.  Its
extension module exports METIS' C entry points, though; this module calls them directly with
ctypes, on the very METIS pymetis ships (so the result is METIS's, seeded the same way).

`multi_constraint_available` says whether that works here (pymetis installed, the symbols
exported); `gcntrain.partition.metis.metis_partition` falls back to one folded weight where
it does not.
"""

from __future__ import annotations

import ctypes
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=1)
def _library():
    """(ctypes library, idx_t ctype, options length, option indices) or None."""
    try:
        import pymetis._internal as internal
    except ImportError:
        return None
    try:
        lib = ctypes.CDLL(internal.__file__)
        width = int(internal._idx_type_width())
        nopts = int(internal.Options._len())
        ind = internal.options_indices
        index = {k: int(getattr(ind, k)) for k in ("SEED", "UFACTOR", "NUMBERING")}
        for name in ("METIS_SetDefaultOptions", "METIS_PartGraphKway", "METIS_PartGraphRecursive"):
            getattr(lib, name)
    except (OSError, AttributeError, TypeError, ValueError):
        return None
    idx = {32: ctypes.c_int32, 64: ctypes.c_int64}.get(width)
    if idx is None:
        return None
    return lib, idx, nopts, index


def multi_constraint_available() -> bool:
    """Whether `metis_multi_partition` can run (pymetis installed, METIS' symbols exported)."""
    return _library() is not None


def metis_multi_partition(
    xadj: np.ndarray,
    adjncy: np.ndarray,
    vwgt: np.ndarray,
    P: int,
    ufactor: int,
    seed: int,
    recursive: bool,
) -> np.ndarray:
    """METIS k-way (or recursive) partition balancing every column of `vwgt`.

    Parameters
    ----------
    xadj, adjncy : symmetric pattern without loops (both directions of every edge)
    vwgt : int (n, ncon) non-negative vertex weights, one column per constraint
    P : number of parts, ``>= 2``
    ufactor : METIS' allowed imbalance in thousandths, applied to every constraint
    seed : METIS' random seed
    recursive : recursive bisection instead of k-way

    Returns
    -------
    int64 array (n,) of part ids in ``[0, P)``.

    Raises
    ------
    RuntimeError
        METIS is not reachable (see `multi_constraint_available`) or reports an error.
    """
    found = _library()
    if found is None:
        raise RuntimeError("METIS's multi-constraint entry point is not available")
    lib, idx, nopts, index = found
    n = len(xadj) - 1
    w = np.ascontiguousarray(np.asarray(vwgt).reshape(n, -1), dtype=idx)
    xa = np.ascontiguousarray(xadj, dtype=idx)
    aj = np.ascontiguousarray(adjncy, dtype=idx)
    part = np.zeros(n, dtype=idx)
    options = (idx * nopts)()
    lib.METIS_SetDefaultOptions(options)
    options[index["SEED"]] = int(seed)
    options[index["UFACTOR"]] = int(ufactor)
    options[index["NUMBERING"]] = 0
    ptr = ctypes.POINTER(idx)
    nvtxs, ncon, nparts, edgecut = idx(n), idx(w.shape[1]), idx(int(P)), idx(0)
    call = lib.METIS_PartGraphRecursive if recursive else lib.METIS_PartGraphKway
    status = call(
        ctypes.byref(nvtxs),
        ctypes.byref(ncon),
        xa.ctypes.data_as(ptr),
        aj.ctypes.data_as(ptr),
        w.ctypes.data_as(ptr),
        None,  # vsize
        None,  # adjwgt: unit edge weights
        ctypes.byref(nparts),
        None,  # tpwgts: equal parts
        None,  # ubvec: ufactor for every constraint
        options,
        ctypes.byref(edgecut),
        part.ctypes.data_as(ptr),
    )
    if status != 1:  # METIS_OK
        raise RuntimeError(f"METIS multi-constraint partitioning failed (status {status})")
    return part.astype(np.int64)
