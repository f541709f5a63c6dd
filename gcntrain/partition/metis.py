"""METIS k-way graph partitioning (pymetis) of the symmetrised pattern, without self-loops.

METIS needs an undirected graph given with both directions of every edge and no self-loops;
a directed or unsymmetric input is replaced by the pattern of ``A + A^T`` minus the diagonal
(the graph model of the hypergraph-partitioning GCN paper, section 4.3.1).  Edge weights are
unit; vertex weights encode the computational load:

* ``None`` / ``"none"``: unit weights (balance rows; `metis_partition`'s default),
* ``"degree"``: the row's nonzero count in the matrix used by the SpMM (at least 1); the
  default of the partitions made for training (`DEFAULT_VWEIGHTS`, see
  `gcntrain.partition.methods.run_method`),
* ``"train"``: SuperGCN (section 6, "node weights based on in-degree of nodes and training
  masks"): pymetis exposes no multi-constraint weights, so both are folded into one weight
  ``w_i = nnz_i + lam * train_i`` with ``lam = round(nnz / n_train)``; training vertices then
  carry half of the total weight and get spread evenly together with the work,
* an integer array of length n (non-negative).
"""

from __future__ import annotations

import numpy as np

from gcntrain.errors import InputError
from gcntrain.partition.basic import check_parts
from gcntrain.partition.csr import check_csr, symmetrized_without_loops

#: allowed names for `vertex_weights`
VWEIGHT_CHOICES = ("none", "degree", "train")
#: vertex weights of every METIS run made for training (`gcntrain partition -m metis`,
#: ``--partition metis`` at start-up, METIS bases of mvc): the row's nonzeros, i.e. the SpMM
#: work, so that the busiest rank does not multiply several times the mean.  `metis_partition`
#: itself keeps unit weights unless told otherwise.
DEFAULT_VWEIGHTS = "degree"


def vertex_weights(
    indptr: np.ndarray,
    spec: str | np.ndarray | None,
    train_mask: np.ndarray | None = None,
) -> np.ndarray | None:
    """Integer vertex weights for a partitioner, or None for unit weights.

    Parameters
    ----------
    indptr : CSR row pointers of the matrix whose rows are partitioned
    spec : ``None``/"none", "degree", "train", or an integer array (n,)
    train_mask : bool (n,) training vertices, required for "train"

    Returns
    -------
    int64 array (n,) or None.
    """
    n = len(indptr) - 1
    if spec is None or (isinstance(spec, str) and spec == "none"):
        return None
    nnz = np.maximum(np.diff(indptr).astype(np.int64), 1)
    if isinstance(spec, str):
        if spec == "degree":
            return nnz
        if spec == "train":
            if train_mask is None:
                raise InputError("vertex weights 'train' need a training mask, the graph has none")
            train = np.asarray(train_mask, dtype=bool)
            if train.shape != (n,):
                raise InputError(f"training mask has {train.shape[0]} entries, expected {n}")
            n_train = int(train.sum())
            if n_train == 0:
                raise InputError("vertex weights 'train' need training vertices, the mask is empty")
            lam = max(1, int(round(float(nnz.sum()) / n_train)))
            return nnz + lam * train.astype(np.int64)
        raise InputError(f"unknown vertex weights {spec!r} (choose from {VWEIGHT_CHOICES})")
    w = np.asarray(spec)
    if w.shape != (n,) or not np.issubdtype(w.dtype, np.integer) or (n and w.min() < 0):
        raise InputError(f"vertex weights must be {n} non-negative integers")
    return w.astype(np.int64)


def metis_partition(
    indptr: np.ndarray,
    indices: np.ndarray,
    P: int,
    *,
    vweights: str | np.ndarray | None = None,
    train_mask: np.ndarray | None = None,
    imbalance: float = 0.03,
    seed: int = 0,
    recursive: bool | None = None,
) -> np.ndarray:
    """Partition the rows of a square matrix with METIS (minimum edge cut).

    Parameters
    ----------
    indptr, indices : CSR pattern (any symmetry, self-loops allowed; values ignored)
    P : number of parts, ``1 <= P <= n``
    vweights : vertex weights, see `vertex_weights`
    train_mask : training vertices for ``vweights="train"``
    imbalance : allowed load imbalance eps (METIS ``ufactor = round(1000 * eps)``)
    seed : METIS random seed
    recursive : recursive bisection instead of k-way (default: pymetis' choice, P <= 8)

    Returns
    -------
    int64 array (n,) of part ids in ``[0, P)``.
    """
    import pymetis

    n = check_csr(indptr, indices)
    check_parts(n, P)
    if imbalance < 0:
        raise InputError(f"imbalance must be >= 0 (got {imbalance})")
    w = vertex_weights(indptr, vweights, train_mask)
    if P == 1:
        return np.zeros(n, dtype=np.int64)
    xadj, adjncy = symmetrized_without_loops(indptr, indices, n)
    dtype = pymetis.zero_copy_dtype()
    adjacency = pymetis.CSRAdjacency(xadj.astype(dtype), adjncy.astype(dtype))
    options = pymetis.Options(seed=int(seed), ufactor=max(1, int(round(1000 * imbalance))))
    kwargs = {} if w is None else {"vweights": w.astype(dtype)}
    _, membership = pymetis.part_graph(
        int(P), adjacency=adjacency, options=options, recursive=recursive, **kwargs
    )
    return np.asarray(membership, dtype=np.int64)
