"""Column-net hypergraph model of 1D row-parallel SpMM, partitioned with Mt-KaHyPar (KM1).

Model (hypergraph-partitioning GCN paper, section 4.3.2):

* one vertex per row i, weight = nonzeros of row i of the matrix the SpMM uses (so include
  self-loops in the matrix if the support has them);
* one net per column j with pins ``{i : A[i, j] != 0}``, plus vertex j itself: row j of H lives
  on ``part[j]`` and must be sent to every other part that has a row with a nonzero in column
  j.  The paper relies on a full diagonal to make j a pin; adding j explicitly keeps the model
  exact for any pattern.  Hence KM1 (sum over nets of connectivity - 1) equals the total
  communication volume of `gcntrain.partition.metrics.comm_volume`.

Nets with one pin never cost anything and are not passed to the partitioner.

Stochastic hypergraph (section 4.3.3, Algorithm 3): for mini-batch training, sample b
mini-batches (vertex sets V_1..V_b, each inducing the subgraph A[V_i, V_i]); build the
column-net hypergraph of every mini-batch the same way (net j of batch i: the rows of V_i with
a nonzero in column j in V_i, plus j) and merge them: the vertex set is all n rows (weights as
above), the net set is the union of all batches' nets, duplicates kept, so a column's nets
count as often as it is sampled.  Minimising the KM1 of the merged hypergraph minimises the
expected volume of a random mini-batch.  `sample_batches` draws uniform vertex sets;
`stochastic_column_nets` accepts any sampler's batches.

Mt-KaHyPar is initialised once per process (it keeps a global thread pool; initialising again
warns); the first call fixes the thread count for the process.
"""

from __future__ import annotations

import os

import numpy as np
import scipy.sparse as sp

from gcntrain.errors import InputError
from gcntrain.partition.basic import check_parts
from gcntrain.partition.csr import check_csr, pattern_matrix, transpose_pattern

_MTK = None
_MTK_THREADS = 0

#: Mt-KaHyPar preset names accepted by `partition_nets`
PRESETS = ("default", "quality", "highest_quality", "deterministic", "large_k")


def _default_threads() -> int:
    v = os.environ.get("NUMBA_NUM_THREADS")
    return int(v) if v else (os.cpu_count() or 1)


def mtkahypar_initializer(threads: int | None = None):
    """The process-wide Mt-KaHyPar initializer (created on first use with `threads`)."""
    global _MTK, _MTK_THREADS
    if _MTK is None:
        import mtkahypar

        _MTK_THREADS = int(threads or _default_threads())
        _MTK = mtkahypar.initialize(_MTK_THREADS, False)
    return _MTK


def column_nets(indptr: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nets of the column-net model: net j = rows with a nonzero in column j, plus j.

    Returns
    -------
    (net_ptr int64 (n + 1,), pins int64): net j is ``pins[net_ptr[j]:net_ptr[j + 1]]``, sorted,
    without duplicates.
    """
    n = check_csr(indptr, indices)
    A = pattern_matrix(indptr, indices, n).astype(bool)
    A = (A + sp.identity(n, dtype=bool, format="csr")).tocsr()
    return transpose_pattern(A.indptr, A.indices, n)


def km1(net_ptr: np.ndarray, pins: np.ndarray, part: np.ndarray) -> int:
    """Connectivity - 1 metric: sum over nets of (number of distinct parts of its pins) - 1.

    Empty nets contribute 0.
    """
    part = np.asarray(part, dtype=np.int64)
    P = int(part.max()) + 1 if part.size else 1
    sizes = np.diff(net_ptr)
    net_of_pin = np.repeat(np.arange(sizes.size, dtype=np.int64), sizes)
    distinct = np.unique(net_of_pin * P + part[pins]).size
    return int(distinct - np.count_nonzero(sizes))


def _preset(name: str):
    import mtkahypar

    table = {
        "default": mtkahypar.PresetType.DEFAULT,
        "quality": mtkahypar.PresetType.QUALITY,
        "highest_quality": mtkahypar.PresetType.HIGHEST_QUALITY,
        "deterministic": mtkahypar.PresetType.DETERMINISTIC,
        "large_k": mtkahypar.PresetType.LARGE_K,
    }
    if name not in table:
        raise InputError(f"unknown Mt-KaHyPar preset {name!r} (choose from {PRESETS})")
    return table[name]


def partition_nets(
    n: int,
    net_ptr: np.ndarray,
    pins: np.ndarray,
    node_weights: np.ndarray,
    P: int,
    *,
    eps: float = 0.01,
    seed: int = 0,
    threads: int | None = None,
    preset: str = "default",
) -> np.ndarray:
    """Partition a hypergraph with Mt-KaHyPar, minimising KM1 under an eps balance constraint.

    Parameters
    ----------
    n : number of vertices
    net_ptr, pins : nets in CSR form (pins are vertex ids)
    node_weights : int (n,) vertex weights (>= 0)
    P : number of parts, ``1 <= P <= n``
    eps : allowed imbalance: every part weight <= (1 + eps) * total / P (Mt-KaHyPar rounds up)
    seed : Mt-KaHyPar seed
    threads : threads for the process-wide initializer (used only by the first call)
    preset : one of `PRESETS`

    Returns
    -------
    int64 array (n,) of part ids in ``[0, P)``.
    """
    import mtkahypar

    check_parts(n, P)
    if eps < 0:
        raise InputError(f"imbalance must be >= 0 (got {eps})")
    if P == 1:
        return np.zeros(n, dtype=np.int64)
    sizes = np.diff(net_ptr)
    keep = np.flatnonzero(sizes > 1)
    pin_list = pins.tolist()
    starts = net_ptr[:-1].tolist()
    ends = net_ptr[1:].tolist()
    nets = [pin_list[starts[k] : ends[k]] for k in keep.tolist()]
    mtk = mtkahypar_initializer(threads)
    ctx = mtk.context_from_preset(_preset(preset))
    ctx.set_partitioning_parameters(int(P), float(eps), mtkahypar.Objective.KM1)
    ctx.logging = False
    mtkahypar.set_seed(int(seed))
    weights = np.asarray(node_weights, dtype=np.int64).tolist()
    hg = mtk.create_hypergraph(ctx, int(n), len(nets), nets, weights, [1] * len(nets))
    result = hg.partition(ctx)
    return np.asarray(result.get_partition(), dtype=np.int64)


def hypergraph_partition(
    indptr: np.ndarray,
    indices: np.ndarray,
    P: int,
    *,
    eps: float = 0.01,
    seed: int = 0,
    threads: int | None = None,
    preset: str = "default",
    node_weights: np.ndarray | None = None,
) -> np.ndarray:
    """Row partition minimising the exact 1D SpMM volume (column-net model, KM1).

    Parameters
    ----------
    indptr, indices : CSR pattern of the matrix used by the SpMM (include self-loops if the
        support has them: they count in the row weights)
    P : number of parts
    eps, seed, threads, preset : see `partition_nets`
    node_weights : override of the vertex weights (default: row nonzero counts)

    Returns
    -------
    int64 array (n,) of part ids.
    """
    n = check_csr(indptr, indices)
    check_parts(n, P)
    net_ptr, pins = column_nets(indptr, indices)
    w = np.diff(indptr).astype(np.int64) if node_weights is None else node_weights
    return partition_nets(
        n, net_ptr, pins, w, P, eps=eps, seed=seed, threads=threads, preset=preset
    )


def sample_batches(n: int, batch_size: int, b: int, seed: int = 0) -> list[np.ndarray]:
    """`b` mini-batches of `batch_size` distinct vertices each, drawn uniformly (sorted ids)."""
    if not 1 <= batch_size <= n:
        raise InputError(f"batch size must lie in [1, {n}] (got {batch_size})")
    rng = np.random.default_rng(seed)
    return [np.sort(rng.choice(n, size=batch_size, replace=False)) for _ in range(b)]


def stochastic_column_nets(
    indptr: np.ndarray, indices: np.ndarray, batches: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Merged column-net hypergraph of the subgraphs induced by sampled mini-batches.

    Parameters
    ----------
    indptr, indices : CSR pattern of the full matrix
    batches : vertex id arrays, one per mini-batch (duplicates within a batch are ignored)

    Returns
    -------
    (net_ptr, pins) with global vertex ids: for each batch V_i (in order) and each column
    j in V_i, the net ``{r in V_i : A[r, j] != 0} + {j}``.
    """
    n = check_csr(indptr, indices)
    A = pattern_matrix(indptr, indices, n).astype(bool)
    ptr_parts: list[np.ndarray] = []
    pin_parts: list[np.ndarray] = []
    offset = 0
    for batch in batches:
        V = np.unique(np.asarray(batch, dtype=np.int64))
        if V.size and (V[0] < 0 or V[-1] >= n):
            raise InputError(f"mini-batch vertex ids must lie in [0, {n})")
        sub = A[V][:, V]
        sub = (sub + sp.identity(V.size, dtype=bool, format="csr")).tocsr()
        t_ptr, t_idx = transpose_pattern(sub.indptr, sub.indices, V.size)
        ptr_parts.append(t_ptr[:-1] + offset)
        pin_parts.append(V[t_idx])
        offset += int(t_ptr[-1])
    net_ptr = np.append(np.concatenate(ptr_parts or [np.empty(0, np.int64)]), offset)
    pins = np.concatenate(pin_parts or [np.empty(0, np.int64)])
    return net_ptr.astype(np.int64), pins.astype(np.int64)


def stochastic_hypergraph_partition(
    indptr: np.ndarray,
    indices: np.ndarray,
    P: int,
    batches: list[np.ndarray],
    *,
    eps: float = 0.01,
    seed: int = 0,
    threads: int | None = None,
    preset: str = "default",
) -> np.ndarray:
    """Algorithm 3 of the paper: partition the merged hypergraph of sampled mini-batches.

    Vertex weights are the full rows' nonzero counts (every vertex equally likely to be
    sampled, as the paper assumes for reusing the full-batch balance constraint).
    """
    n = check_csr(indptr, indices)
    check_parts(n, P)
    net_ptr, pins = stochastic_column_nets(indptr, indices, batches)
    w = np.diff(indptr).astype(np.int64)
    return partition_nets(
        n, net_ptr, pins, w, P, eps=eps, seed=seed, threads=threads, preset=preset
    )
