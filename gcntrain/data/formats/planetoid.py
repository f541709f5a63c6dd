"""Planetoid (Cora, Citeseer, Pubmed) reader matching the reference GCN loader.

Files ``<prefix>.{x,y,tx,ty,allx,ally,graph,test.index}`` where ``prefix`` is e.g.
``data/ind.cora``.  The pickles were written by Python 2; they are read with a restricted
unpickler that only resolves the numpy/scipy/container classes these files use, so a crafted
file cannot run code.
"""

from __future__ import annotations

import os
import pickle
import re

import numpy as np
import scipy.sparse as sp

from gcntrain.data.formats.common import require_file
from gcntrain.data.graph import Graph
from gcntrain.data.preprocess import coo_to_csr
from gcntrain.errors import FormatError, InputError

PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph")

_SPARSE = {"csr_matrix", "csc_matrix", "coo_matrix", "lil_matrix", "dok_matrix"}


def _numpy_reconstruct():
    try:
        from numpy._core.multiarray import _reconstruct, scalar
    except ImportError:  # numpy < 2
        from numpy.core.multiarray import _reconstruct, scalar
    return {"_reconstruct": _reconstruct, "scalar": scalar}


class _SafeUnpickler(pickle.Unpickler):
    """Resolve only the globals that Planetoid pickles contain."""

    def find_class(self, module: str, name: str):
        import collections

        if module in ("numpy.core.multiarray", "numpy._core.multiarray"):
            fns = _numpy_reconstruct()
            if name in fns:
                return fns[name]
        elif module == "numpy" and name in ("ndarray", "dtype"):
            return getattr(np, name)
        elif module.startswith("scipy.sparse") and name in _SPARSE:
            return getattr(sp, name)
        elif module == "collections" and name in ("defaultdict", "OrderedDict"):
            return getattr(collections, name)
        elif module in ("__builtin__", "builtins") and name in (
            "list",
            "dict",
            "set",
            "tuple",
            "int",
            "float",
            "object",
            "long",
        ):
            return {"long": int}.get(name) or getattr(__import__("builtins"), name)
        raise pickle.UnpicklingError(f"refusing to load global {module}.{name}")


def _load_pickle(path: str):
    require_file(path)
    with open(path, "rb") as f:
        try:
            return _SafeUnpickler(f, encoding="latin1").load()
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError) as e:
            raise FormatError(f"not a readable Planetoid pickle ({e})", path) from None


def resolve_prefix(source: str) -> str | None:
    """The ``.../ind.<name>`` prefix for `source`, or None when it is not a Planetoid set.

    Accepts the prefix itself (``data/ind.cora``) or ``data/cora`` when ``data/ind.cora.graph``
    exists.
    """
    if os.path.exists(source + ".graph"):
        return source
    head, base = os.path.split(source.rstrip("/"))
    alt = os.path.join(head, "ind." + base)
    if not base.startswith("ind.") and os.path.exists(alt + ".graph"):
        return alt
    if re.fullmatch(r"ind\.[A-Za-z0-9_\-]+", base):
        return source
    return None


def _labels_from_onehot(Y: np.ndarray) -> np.ndarray:
    lab = np.argmax(Y, axis=1).astype(np.int64)
    lab[~np.asarray(Y != 0).any(axis=1)] = -1
    return lab


def planetoid_adjacency(graph: dict, n: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric binary CSR (indptr, indices) of a ``{node: [neighbours]}`` dict.

    Same as ``networkx.adjacency_matrix(networkx.from_dict_of_lists(graph))`` with nodes
    0..n-1: duplicates merged, self-loop entries kept once on the diagonal.  `n` defaults to
    the largest id + 1.
    """
    keys = np.fromiter(graph.keys(), dtype=np.int64, count=len(graph))
    lens = np.fromiter((len(v) for v in graph.values()), dtype=np.int64, count=len(graph))
    cols = np.fromiter(
        (c for v in graph.values() for c in v), dtype=np.int64, count=int(lens.sum())
    )
    rows = np.repeat(keys, lens)
    if n is None:
        n = int(max(keys.max(initial=-1), cols.max(initial=-1)) + 1)
    indptr, indices, _ = coo_to_csr(
        np.concatenate([rows, cols]), np.concatenate([cols, rows]), None, n, n
    )
    return indptr, indices


def load_planetoid(prefix: str) -> Graph:
    """Load a Planetoid data set exactly as tkipf/gcn ``utils.load_data`` builds it.

    Parameters
    ----------
    prefix : path prefix such as ``datasets/planetoid/ind.cora`` (``.../cora`` also works)

    Returns
    -------
    Graph
        Features ``vstack(allx, tx)`` (float32, not normalised) with test row i moved to node
        ``test.index[i]``; ids missing from the test range (Citeseer) get zero features and
        label -1; labels are the one-hot argmax (-1 for all-zero rows); adjacency symmetric,
        binary, raw self-loops kept; train = ``range(len(y))``, val = the next 500 ids,
        test = the ``test.index`` ids.

    Raises
    ------
    InputError
        A part is missing (the message names it); `FormatError` when a part is malformed.
    """
    resolved = resolve_prefix(prefix)
    prefix = resolved or prefix
    name = (
        os.path.basename(prefix)[4:]
        if os.path.basename(prefix).startswith("ind.")
        else os.path.basename(prefix)
    )
    for part in PARTS + ("test.index",):
        if not os.path.exists(f"{prefix}.{part}"):
            raise InputError(
                f"missing Planetoid part '{part}' of data set '{name}'", f"{prefix}.{part}"
            )
    obj = {part: _load_pickle(f"{prefix}.{part}") for part in PARTS}
    idx_path = f"{prefix}.test.index"
    try:
        test_idx = np.loadtxt(idx_path, dtype=np.int64, ndmin=1)
    except ValueError as e:
        raise FormatError(f"test.index must hold one integer per line ({e})", idx_path) from None

    def dense(part: str) -> np.ndarray:
        a = obj[part]
        a = a.toarray() if sp.issparse(a) else np.asarray(a)
        if a.ndim != 2:
            raise FormatError(f"expected a 2-D matrix, got shape {a.shape}", f"{prefix}.{part}")
        return a

    allx, tx, ally, ty, y = dense("allx"), dense("tx"), dense("ally"), dense("ty"), dense("y")
    graph = obj["graph"]
    if not isinstance(graph, dict):
        raise FormatError("graph part is not a dict of adjacency lists", f"{prefix}.graph")
    n_base = allx.shape[0]
    if tx.shape[0] != test_idx.size or ty.shape[0] != test_idx.size:
        raise FormatError(
            f"tx/ty have {tx.shape[0]}/{ty.shape[0]} rows but test.index has {test_idx.size} ids",
            idx_path,
        )
    if ally.shape[0] != n_base or tx.shape[1] != allx.shape[1] or ty.shape[1] != ally.shape[1]:
        raise FormatError("allx/ally/tx/ty shapes do not match", prefix)
    if test_idx.size and test_idx.min() < n_base:
        raise FormatError(f"test.index holds id {test_idx.min()} < {n_base} (allx rows)", idx_path)
    g_indptr, g_indices = planetoid_adjacency(graph)
    n_graph = g_indptr.shape[0] - 1
    n = max(n_base + (int(test_idx.max()) - n_base + 1 if test_idx.size else 0), n_graph)
    if n > n_graph:  # nodes without adjacency lists: empty rows
        g_indptr = np.concatenate([g_indptr, np.full(n - n_graph, g_indptr[-1])])

    features = np.zeros((n, allx.shape[1]), dtype=np.float32)
    features[:n_base] = allx
    features[test_idx] = tx
    onehot = np.zeros((n, ally.shape[1]), dtype=ally.dtype)
    onehot[:n_base] = ally
    onehot[test_idx] = ty
    labels = _labels_from_onehot(onehot)

    train = np.zeros(n, dtype=bool)
    train[: y.shape[0]] = True
    val = np.zeros(n, dtype=bool)
    val[y.shape[0] : y.shape[0] + 500] = True
    test = np.zeros(n, dtype=bool)
    test[test_idx] = True
    return Graph(
        indptr=g_indptr,
        indices=g_indices,
        data=None,
        features=features,
        labels=labels,
        train_mask=train,
        val_mask=val,
        test_mask=test,
        name=name,
        directed=False,
        num_classes=int(ally.shape[1]),
    )
