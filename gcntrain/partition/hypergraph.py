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

Refinement (`run_mtkahypar`, `run_hypergraph`): after the first partition, Mt-KaHyPar can
run iterated multilevel V-cycles (``PartitionedHypergraph.improve_partition``): coarsen without
contracting across blocks, then uncoarsen and refine again.  The start is Mt-KaHyPar's own
partition (``init="none"``) or a METIS partition of the graph model with the same vertex
weights and imbalance (``init="metis"``; ``"auto"`` picks it for structurally symmetric
patterns, where the graph model describes the nets well).  The V-cycles may use another preset
than the first partition (``refine``): the ``deterministic`` preset refines with Jet (label
propagation that temporarily accepts negative gains, with rollback), which on power-law graphs
finds much lower KM1 than the default preset's LP + FM.  Jet's time grows with the pins of
large nets, so the refinement may leave out nets with more than ``net_cap`` pins (they are
cut into most parts anyway); every KM1 reported and compared is the exact one over all nets,
and a refined start that came out worse than the start under that exact KM1 is replaced by
the start.  ``seeds`` repeats the whole run with consecutive seeds and keeps the lowest KM1.

Mt-KaHyPar is initialised once per process (it keeps a global thread pool; initialising again
warns); the first call fixes the thread count for the process.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from gcntrain.errors import InputError
from gcntrain.partition.basic import check_parts
from gcntrain.partition.csr import (
    check_csr,
    is_symmetric_pattern,
    pattern_matrix,
    transpose_pattern,
)
from gcntrain.partition.mtk import mtk_context, mtkahypar_initializer
from gcntrain.partition.unique import unique_ints

#: Mt-KaHyPar preset names accepted by `partition_nets`
PRESETS = ("default", "quality", "highest_quality", "deterministic", "large_k")
#: start partitions of `run_hypergraph` ("auto": metis for symmetric patterns, else none)
INITS = ("auto", "none", "metis")
#: default start of `run_hypergraph` (see docs/partition.md for the measurements)
DEFAULT_INIT = "auto"
#: defaults per resolved start: V-cycles, their preset, net cap of the Mt-KaHyPar input
DEFAULTS = {
    "none": {"vcycles": 1, "refine": "default", "net_cap": None},
    "metis": {"vcycles": 1, "refine": "deterministic", "net_cap": "auto"},
}


def auto_net_cap(P: int) -> int:
    """Default net cap of the METIS-started refinement: ``max(128, 2 P)`` pins."""
    return max(128, 2 * int(P))


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
    distinct = unique_ints(net_of_pin * P + part[pins], overwrite=True).size
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


def _check_start(part: np.ndarray, n: int, P: int) -> np.ndarray:
    part = np.asarray(part)
    if part.shape != (n,) or not np.issubdtype(part.dtype, np.integer):
        raise InputError(f"start partition must be {n} integer part ids")
    if n and (part.min() < 0 or part.max() >= P):
        raise InputError(f"start partition has part ids outside [0, {P})")
    return part.astype(np.int64)


@dataclass
class MtkRun:
    """Outcome of `run_mtkahypar`.

    Attributes
    ----------
    part : int64 (n,) part ids of the best attempt
    km1 : its exact connectivity - 1 over all nets (= total 1D volume, column-net model)
    seed : the seed of the best attempt
    start_km1 : exact KM1 of each attempt's start (the given / METIS start, or Mt-KaHyPar's
        first partition when there is none), before the V-cycles
    attempt_km1 : exact final KM1 of each attempt, in seed order
    max_block_weight : the largest part weight of `part`
    bound : the largest part weight allowed, ``floor((1 + eps) * ceil(total / P))``
    net_cap : nets with more pins than this were left out of Mt-KaHyPar's input (None: none)
    seconds : wall time of all attempts
    kept_start : True when the refined partition was worse than its start (exact KM1; only
        possible with a net cap) and the start was kept
    fallback : True when every attempt broke the balance bound and `part` is a fresh
        Mt-KaHyPar partition instead
    """

    part: np.ndarray
    km1: int
    seed: int
    start_km1: list[int] = field(default_factory=list)
    attempt_km1: list[int] = field(default_factory=list)
    max_block_weight: int = 0
    bound: int = 0
    net_cap: int | None = None
    seconds: float = 0.0
    kept_start: bool = False
    fallback: bool = False

    def summary(self) -> dict:
        """JSON-serialisable figures (without the partition)."""
        return {
            "km1": int(self.km1),
            "seed": int(self.seed),
            "start_km1": [int(v) for v in self.start_km1],
            "attempt_km1": [int(v) for v in self.attempt_km1],
            "max_block_weight": int(self.max_block_weight),
            "bound": int(self.bound),
            "net_cap": None if self.net_cap is None else int(self.net_cap),
            "kept_start": bool(self.kept_start),
            "fallback": bool(self.fallback),
        }


def run_mtkahypar(
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
    vcycles: int = 0,
    refine: str | None = None,
    seeds: int = 1,
    start: np.ndarray | Callable[[int], np.ndarray] | None = None,
    net_cap: int | None = None,
) -> MtkRun:
    """Partition a hypergraph with Mt-KaHyPar (KM1, eps balance), optionally refining a start.

    Parameters
    ----------
    n : number of vertices
    net_ptr, pins : nets in CSR form (pins are vertex ids)
    node_weights : int (n,) vertex weights (>= 0)
    P : number of parts, ``1 <= P <= n``
    eps : allowed imbalance: every part weight <= (1 + eps) * ceil(total / P), rounded down
    seed : seed of the first attempt (attempt a uses ``seed + a``)
    threads : threads for the process-wide initializer (used only by the first call)
    preset : one of `PRESETS`, for the first partition when `start` is None
    vcycles : V-cycles (``improve_partition``) after the first partition / on the start
    refine : preset of the V-cycles (default: `preset`)
    seeds : number of attempts; the lowest exact KM1 wins (the earliest on ties)
    start : None (Mt-KaHyPar partitions from scratch), a partition (n,) to refine, or a
        function seed -> partition called once per attempt.  A start must be refined
        (``vcycles >= 1``); a start that breaks the balance bound is rebalanced by Mt-KaHyPar.
    net_cap : leave nets with more than `net_cap` pins out of Mt-KaHyPar's input (None: keep
        all).  KM1 values are always exact over all nets; with a start, a result worse than
        the balanced start is replaced by the start.

    Returns
    -------
    `MtkRun`.  Every attempt's result is checked against the balance bound; if none
    satisfies it, a fresh Mt-KaHyPar partition with `preset` is returned (``fallback``).
    """
    import mtkahypar

    check_parts(n, P)
    if eps < 0:
        raise InputError(f"imbalance must be >= 0 (got {eps})")
    if vcycles < 0:
        raise InputError(f"V-cycles must be >= 0 (got {vcycles})")
    if seeds < 1:
        raise InputError(f"number of seeds must be >= 1 (got {seeds})")
    if net_cap is not None and net_cap < 2:
        raise InputError(f"net cap must be >= 2 pins (got {net_cap})")
    if start is not None and vcycles < 1:
        raise InputError("refining a start partition needs at least one V-cycle")
    refine = preset if refine is None else refine
    for name in (preset, refine):
        _preset(name)  # reject unknown names before any work
    w = np.asarray(node_weights, dtype=np.int64)
    t0 = time.perf_counter()
    if P == 1:
        total = int(w.sum())
        return MtkRun(
            np.zeros(n, dtype=np.int64),
            0,
            int(seed),
            start_km1=[0],
            attempt_km1=[0],
            max_block_weight=total,
            bound=total,
            net_cap=net_cap,
            seconds=time.perf_counter() - t0,
        )
    sizes = np.diff(net_ptr)
    keep = sizes > 1
    if net_cap is not None:
        keep &= sizes <= net_cap
    pin_list = pins.tolist()
    starts = net_ptr[:-1].tolist()
    ends = net_ptr[1:].tolist()
    nets = [pin_list[starts[k] : ends[k]] for k in np.flatnonzero(keep).tolist()]
    mtk = mtkahypar_initializer(threads)
    km1_ = mtkahypar.Objective.KM1
    ctx = mtk_context(_preset(preset), P, eps, km1_)
    rctx = ctx if refine == preset else mtk_context(_preset(refine), P, eps, km1_)
    hg = mtk.create_hypergraph(ctx, int(n), len(nets), nets, w.tolist(), [1] * len(nets))
    bound = int(min(ctx.compute_max_block_weights(int(w.sum()))))

    def heaviest(part: np.ndarray) -> int:
        return int(np.bincount(part, weights=w, minlength=P).max())

    best: MtkRun | None = None
    start_km1, attempt_km1 = [], []
    for a in range(seeds):
        s = int(seed) + a
        mtkahypar.set_seed(s)
        if start is None:
            init = None
            phg = hg.partition(ctx)
            start_km1.append(km1(net_ptr, pins, np.asarray(phg.get_partition())))
        else:
            init = _check_start(start(s) if callable(start) else start, n, P)
            start_km1.append(km1(net_ptr, pins, init))
            # pybind names the first two parameters the wrong way round: (context, k, part)
            phg = hg.create_partitioned_hypergraph(ctx, int(P), init.tolist())
        if vcycles:
            phg.improve_partition(rctx, int(vcycles))
        part = np.asarray(phg.get_partition(), dtype=np.int64)
        value, kept = km1(net_ptr, pins, part), False
        if init is not None and value > start_km1[-1] and heaviest(init) <= bound:
            part, value, kept = init, start_km1[-1], True
        attempt_km1.append(value)
        if heaviest(part) <= bound and (best is None or value < best.km1):
            best = MtkRun(part, value, s, max_block_weight=heaviest(part), kept_start=kept)
    if best is None:
        mtkahypar.set_seed(int(seed))
        part = np.asarray(hg.partition(ctx).get_partition(), dtype=np.int64)
        best = MtkRun(part, km1(net_ptr, pins, part), int(seed), max_block_weight=heaviest(part))
        best.fallback = True
    best.start_km1, best.attempt_km1 = start_km1, attempt_km1
    best.bound, best.net_cap = bound, net_cap
    best.seconds = time.perf_counter() - t0
    return best


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
    vcycles: int = 0,
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
    vcycles : V-cycles after the first partition

    Returns
    -------
    int64 array (n,) of part ids in ``[0, P)``.
    """
    return run_mtkahypar(
        n,
        net_ptr,
        pins,
        node_weights,
        P,
        eps=eps,
        seed=seed,
        threads=threads,
        preset=preset,
        vcycles=vcycles,
    ).part


def resolve_options(
    indptr: np.ndarray,
    indices: np.ndarray,
    P: int,
    init: str = DEFAULT_INIT,
    vcycles: int | None = None,
    refine: str | None = None,
    net_cap: int | str | None = "default",
) -> dict:
    """The concrete ``init``, ``vcycles``, ``refine`` and ``net_cap`` of `run_hypergraph`.

    ``init="auto"`` becomes "metis" for a structurally symmetric pattern, else "none";
    missing values come from `DEFAULTS` [init]; ``net_cap="auto"`` becomes `auto_net_cap`
    (P) and 0 means no cap (None).
    """
    n = check_csr(indptr, indices)
    if init not in INITS:
        raise InputError(f"unknown hypergraph start {init!r} (choose from {', '.join(INITS)})")
    if init == "auto":
        init = "metis" if is_symmetric_pattern(indptr, indices, n) else "none"
    d = DEFAULTS[init]
    cap = d["net_cap"] if isinstance(net_cap, str) and net_cap == "default" else net_cap
    if isinstance(cap, str):
        if cap != "auto":
            raise InputError(f"net cap must be a number of pins, 0 or 'auto' (got {cap!r})")
        cap = auto_net_cap(P)
    return {
        "init": init,
        "vcycles": d["vcycles"] if vcycles is None else int(vcycles),
        "refine": d["refine"] if refine is None else refine,
        "net_cap": None if cap in (None, 0) else int(cap),
    }


def run_hypergraph(
    indptr: np.ndarray,
    indices: np.ndarray,
    P: int,
    *,
    eps: float = 0.01,
    seed: int = 0,
    threads: int | None = None,
    init: str = DEFAULT_INIT,
    vcycles: int | None = None,
    refine: str | None = None,
    net_cap: int | str | None = "default",
    seeds: int = 1,
    preset: str = "default",
    node_weights: np.ndarray | None = None,
) -> MtkRun:
    """Column-net partition of the rows (KM1 = exact 1D SpMM volume), with details.

    Parameters
    ----------
    indptr, indices : CSR pattern of the matrix used by the SpMM (include self-loops if the
        support has them: they count in the row weights)
    P : number of parts
    eps : allowed imbalance of the row weights (see `run_mtkahypar`)
    seed : seed of the first attempt (METIS and Mt-KaHyPar)
    threads : Mt-KaHyPar threads (first call of the process only)
    init : "auto" (default: "metis" for a structurally symmetric pattern, else "none"),
        "none" (Mt-KaHyPar partitions from scratch with `preset`) or "metis" (METIS k-way
        partition of the graph model, same vertex weights, ``ufactor = 1000 eps``)
    vcycles : V-cycles after the first partition (default: `DEFAULTS` [init])
    refine : preset of the V-cycles (default: `DEFAULTS` [init])
    net_cap : nets with more pins are left out of Mt-KaHyPar's input: a number, 0 / None
        (keep all), "auto" (`auto_net_cap`) or "default" (`DEFAULTS` [init])
    seeds : attempts with seeds ``seed, seed + 1, ...``; the lowest KM1 wins
    preset : Mt-KaHyPar preset of the first partition (``init="none"``)
    node_weights : override of the vertex weights (default: row nonzero counts)

    Returns
    -------
    `MtkRun`.
    """
    n = check_csr(indptr, indices)
    check_parts(n, P)
    opts = resolve_options(indptr, indices, P, init, vcycles, refine, net_cap)
    net_ptr, pins = column_nets(indptr, indices)
    w = np.diff(indptr).astype(np.int64) if node_weights is None else node_weights
    w = np.asarray(w, dtype=np.int64)
    start = None
    if opts["init"] == "metis":
        from gcntrain.partition.metis import metis_partition

        def start(s: int) -> np.ndarray:
            return metis_partition(
                indptr, indices, P, vweights=w, imbalance=eps, seed=s, threads=threads
            )

    return run_mtkahypar(
        n,
        net_ptr,
        pins,
        w,
        P,
        eps=eps,
        seed=seed,
        threads=threads,
        preset=preset,
        vcycles=opts["vcycles"],
        refine=opts["refine"],
        seeds=seeds,
        start=start,
        net_cap=opts["net_cap"],
    )


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
    init: str = DEFAULT_INIT,
    vcycles: int | None = None,
    refine: str | None = None,
    net_cap: int | str | None = "default",
    seeds: int = 1,
) -> np.ndarray:
    """Row partition minimising the exact 1D SpMM volume (column-net model, KM1).

    Parameters are those of `run_hypergraph`.

    Returns
    -------
    int64 array (n,) of part ids.
    """
    return run_hypergraph(
        indptr,
        indices,
        P,
        eps=eps,
        seed=seed,
        threads=threads,
        init=init,
        vcycles=vcycles,
        refine=refine,
        net_cap=net_cap,
        seeds=seeds,
        preset=preset,
        node_weights=node_weights,
    ).part


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
        V = unique_ints(np.asarray(batch, dtype=np.int64).ravel())
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
