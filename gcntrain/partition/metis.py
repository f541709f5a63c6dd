"""METIS k-way graph partitioning of the symmetrised pattern, without self-loops.

METIS needs an undirected graph given with both directions of every edge and no self-loops;
a directed or unsymmetric input is replaced by the pattern of ``A + A^T`` minus the diagonal
(the graph model of the hypergraph-partitioning GCN paper, section 4.3.1).  Edge weights are
unit; vertex weights encode the computational load:

* ``None`` / ``"none"``: unit weights (balance rows, the dense work; `metis_partition`'s
  default),
* ``"degree"``: the row's nonzero count in the matrix used by the SpMM (at least 1): balances
  the sparse work only; at large P on a power-law graph the rows (the dense GEMM work) end
  up far from balanced (R-MAT scale 16, P = 256: the busiest rank holds 25 times the mean
  rows, docs/measurements/metis-balance-2026-12-07.md),
* ``"rows+degree"``: two balance constraints at once (METIS ``ncon = 2``): one per row, and
  the row's nonzeros capped at one part's share ``ceil(nnz / P)`` (a row heavier than that
  cannot be balanced by any vertex partition; the cap keeps the constraint reachable, so that
  METIS does not give up the rows for it).  The default of the partitions made for training
  (`DEFAULT_VWEIGHTS`, see `gcntrain.partition.methods.run_method`).  Multi-constraint METIS is
  called in pymetis' library directly (`gcntrain.partition.metis_multi`: pymetis' API passes
  one constraint only); where that is not available or METIS refuses it (a note says so),
  and with the Mt-KaHyPar backend (one constraint), both are folded into one weight
  ``w_i = a + min(nnz_i, cap)`` with ``a = round(sum of the capped nonzeros / n)``: rows
  and nonzeros carry half the total each, which bounds each max/mean by ``2 (1 + eps)``
  only (`MULTI_FALLBACK`),
* ``"train"``: SuperGCN (section 6, "node weights based on in-degree of nodes and training
  masks"), folded into one weight ``w_i = nnz_i + lam * train_i`` with
  ``lam = round(nnz / n_train)``; training vertices then carry half of the total weight and
  get spread evenly together with the work,
* an integer array of length n (non-negative), or (n, ncon) for ncon constraints.

Backends.  METIS itself comes from pymetis, which has wheels only for x86-64 Linux and macOS
(elsewhere, e.g. on aarch64 / A64FX, it builds from source with a C++ compiler and is left
out by default, see setup.cfg's ``metis`` extra).  Without pymetis the same call partitions
the same graph (unit edge weights, the same vertex weights) with Mt-KaHyPar's graph mode:
cut objective, DETERMINISTIC preset, the same imbalance ``eps`` (every part weight at most
``(1 + eps) * ceil(total / P)``).  That preset gives the same partition on every machine and
thread count, and ignores Mt-KaHyPar's seed: a nonzero seed renumbers the vertices by a
permutation drawn from it before partitioning (seed 0 keeps the numbering), so another seed
gives another partition, the same one everywhere.  Its cuts and balance differ from METIS's
(docs/partition.md, "METIS without pymetis").  `metis_backend` names the backend in use; the
environment variable ``GCNTRAIN_METIS_BACKEND`` (`BACKEND_ENV`) chooses it: ``auto``
(default: pymetis when it imports), ``pymetis`` or ``mtkahypar`` (forces the fallback, e.g.
for tests on x86-64).
"""

from __future__ import annotations

import os
import sys
import warnings
from contextlib import contextmanager
from importlib import metadata

import numpy as np

from gcntrain.errors import InputError, Note
from gcntrain.partition.basic import check_parts
from gcntrain.partition.csr import check_csr, row_ids, symmetrized_without_loops
from gcntrain.partition.metis_multi import metis_multi_partition, multi_constraint_available

#: allowed names for `vertex_weights`
VWEIGHT_CHOICES = ("none", "degree", "rows+degree", "train")
#: vertex weights of every METIS run made for training (`gcntrain partition -m metis`,
#: ``--partition metis`` at start-up, METIS bases of mvc): rows and the row's nonzeros
#: balanced together (two constraints), i.e. the dense and the SpMM work, so that the busiest
#: rank neither multiplies nor holds rows several times the mean.  `metis_partition` itself
#: keeps unit weights unless told otherwise.
DEFAULT_VWEIGHTS = "rows+degree"
#: how "rows+degree" is partitioned without multi-constraint METIS (see the module docstring)
MULTI_FALLBACK = "one folded weight: mean nonzeros per row + capped nonzeros"
#: environment variable that chooses the backend of `metis_partition`
BACKEND_ENV = "GCNTRAIN_METIS_BACKEND"
#: its values: auto (pymetis when importable, else mtkahypar), pymetis, mtkahypar
BACKENDS = ("auto", "pymetis", "mtkahypar")


def _pymetis():
    """The pymetis module, or None when it is not installed (or does not load)."""
    try:
        import pymetis
    except ImportError:
        return None
    return pymetis


def _dist_version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "unknown version"


def metis_backend_name() -> str:
    """The backend `metis_partition` uses now: ``"pymetis"`` or ``"mtkahypar"``.

    Raises
    ------
    InputError
        `BACKEND_ENV` names an unknown backend, or asks for pymetis where it is not installed.
    """
    choice = os.environ.get(BACKEND_ENV, "auto").strip().lower() or "auto"
    if choice not in BACKENDS:
        raise InputError(f"{BACKEND_ENV}={choice!r} is not one of {', '.join(BACKENDS)}")
    if choice == "mtkahypar":
        return "mtkahypar"
    if _pymetis() is not None:
        return "pymetis"
    if choice == "pymetis":
        raise InputError(
            f"{BACKEND_ENV}=pymetis but pymetis is not installed (pip install 'gcntrain[metis]' "
            "builds it where no wheel exists; it needs a C++ compiler)"
        )
    return "mtkahypar"


def metis_backend() -> str:
    """One line naming the partitioner behind `metis_partition` and its version.

    Returns
    -------
    str, e.g. ``"pymetis 2025.2.2"`` or ``"mtkahypar 1.7 (graph, cut, deterministic;
    pymetis not installed)"``; an invalid `BACKEND_ENV` is described instead of raised.
    """
    try:
        name = metis_backend_name()
    except InputError as e:
        return f"invalid: {e}"
    if name == "pymetis":
        return f"pymetis {_dist_version('pymetis')}"
    why = (
        f"forced by {BACKEND_ENV}=mtkahypar" if _pymetis() is not None else "pymetis not installed"
    )
    return f"mtkahypar {_dist_version('mtkahypar')} (graph, cut, deterministic; {why})"


def vertex_weights(
    indptr: np.ndarray,
    spec: str | np.ndarray | None,
    train_mask: np.ndarray | None = None,
    parts: int | None = None,
) -> np.ndarray | None:
    """Integer vertex weights for a partitioner, or None for unit weights.

    Parameters
    ----------
    indptr : CSR row pointers of the matrix whose rows are partitioned
    spec : ``None``/"none", "degree", "rows+degree", "train", or an integer array (n,) or
        (n, ncon)
    train_mask : bool (n,) training vertices, required for "train"
    parts : number of parts, for the cap of "rows+degree" (None: no cap)

    Returns
    -------
    int64 array (n,), (n, ncon) (two columns for "rows+degree": rows, capped nonzeros) or None.
    """
    n = len(indptr) - 1
    if spec is None or (isinstance(spec, str) and spec == "none"):
        return None
    nnz = np.maximum(np.diff(indptr).astype(np.int64), 1)
    if isinstance(spec, str):
        if spec == "degree":
            return nnz
        if spec == "rows+degree":
            cap = -(-int(nnz.sum()) // max(int(parts), 1)) if parts else int(nnz.max(initial=1))
            return np.stack([np.ones(n, dtype=np.int64), np.minimum(nnz, cap)], axis=1)
        if spec == "train":
            if train_mask is None:
                raise InputError("vertex weights 'train' need a training mask, the graph has none")
            train = np.asarray(train_mask, dtype=bool)
            if train.shape != (n,):
                raise InputError(f"training mask has {train.shape[0]} entries, expected {n}")
            if not train.any():
                raise InputError("vertex weights 'train' need training vertices, the mask is empty")
            # degree and training rows folded into one weight: nnz + round(nnz / n_train) train
            return folded_weights(np.stack([nnz, train.astype(np.int64)], axis=1))
        raise InputError(f"unknown vertex weights {spec!r} (choose from {VWEIGHT_CHOICES})")
    w = np.asarray(spec)
    ok = w.ndim in (1, 2) and w.shape[0] == n and (w.ndim == 1 or w.shape[1] >= 1)
    if not ok or not np.issubdtype(w.dtype, np.integer) or (w.size and w.min() < 0):
        raise InputError(f"vertex weights must be {n} (or {n} x ncon) non-negative integers")
    return w.astype(np.int64)


def ufactor(eps: float) -> int:
    """METIS's ``ufactor`` (allowed imbalance in thousandths) for imbalance `eps`."""
    return max(1, int(round(1000 * eps)))


def folded_weights(w: np.ndarray) -> np.ndarray:
    """One weight per vertex standing for the columns of `w` (n, ncon): each column scaled
    to the same total (the largest), then summed; a single-constraint partitioner balancing
    it keeps every column's max/mean within ``ncon (1 + eps)``."""
    w = np.asarray(w, dtype=np.int64)
    if w.ndim == 1:
        return w
    totals = np.maximum(w.sum(axis=0), 1)
    scale = np.maximum(np.round(totals.max() / totals), 1).astype(np.int64)
    return (w * scale).sum(axis=1)


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
    threads: int | None = None,
) -> np.ndarray:
    """Partition the rows of a square matrix for minimum edge cut (METIS, or its fallback).

    Parameters
    ----------
    indptr, indices : CSR pattern (any symmetry, self-loops allowed; values ignored)
    P : number of parts, ``1 <= P <= n``
    vweights : vertex weights, see `vertex_weights` (several constraints: multi-constraint
        METIS, or one folded weight where that is not available, `MULTI_FALLBACK`)
    train_mask : training vertices for ``vweights="train"``
    imbalance : allowed load imbalance eps (METIS ``ufactor = round(1000 * eps)``;
        Mt-KaHyPar: every part weight ``<= (1 + eps) * ceil(total / P)``)
    seed : random seed of the partitioner
    recursive : pymetis only: recursive bisection instead of k-way (default: pymetis'
        choice, P <= 8); the fallback ignores it
    threads : fallback only: threads of the process-wide Mt-KaHyPar initializer, used only
        if this is the process's first Mt-KaHyPar call (the result does not depend on it)

    Returns
    -------
    int64 array (n,) of part ids in ``[0, P)``.  The backend is `metis_backend_name`'s.
    """
    n = check_csr(indptr, indices)
    check_parts(n, P)
    if imbalance < 0:
        raise InputError(f"imbalance must be >= 0 (got {imbalance})")
    w = vertex_weights(indptr, vweights, train_mask, parts=P)
    backend = metis_backend_name()
    if P == 1:
        return np.zeros(n, dtype=np.int64)
    xadj, adjncy = symmetrized_without_loops(indptr, indices, n)
    said: list[str] = []  # what METIS's C library printed
    if w is not None and w.ndim == 2 and w.shape[1] == 1:
        w = w[:, 0]
    multi = w is not None and w.ndim == 2
    if multi and (backend == "mtkahypar" or not multi_constraint_available()):
        w_one = folded_weights(w)  # `MULTI_FALLBACK`: one constraint only
    else:
        w_one = w
    if backend == "mtkahypar":
        membership = _mtkahypar_graph_partition(n, xadj, adjncy, w_one, P, imbalance, seed, threads)
    elif w_one is not None and w_one.ndim == 2:
        if recursive is None:
            recursive = P <= 8  # pymetis' choice
        try:
            with captured_stdout(said):
                membership = metis_multi_partition(
                    xadj, adjncy, w_one, P, ufactor(imbalance), seed, recursive
                )
        except RuntimeError as e:  # METIS refused (e.g. status -4 on a 124M-entry R-MAT
            # graph at 256 parts): the rows and nonzeros folded into one weight instead
            warnings.warn(Note(f"{e}; partitioned with {MULTI_FALLBACK} instead"), stacklevel=2)
            said.clear()
            membership = _pymetis_partition(
                xadj, adjncy, folded_weights(w_one), P, imbalance, seed, recursive, said
            )
    else:
        membership = _pymetis_partition(xadj, adjncy, w_one, P, imbalance, seed, recursive, said)
    remark = balance_remark(membership, P, w, imbalance, said)
    if remark is not None:
        warnings.warn(Note(remark), stacklevel=2)
    return membership


def _pymetis_partition(
    xadj, adjncy, w, P: int, eps: float, seed: int, recursive, said: list[str]
) -> np.ndarray:
    """METIS's k-way (or recursive) partition through pymetis; what its C library prints
    on stdout is appended to `said` instead."""
    pymetis = _pymetis()
    dtype = pymetis.zero_copy_dtype()
    adjacency = pymetis.CSRAdjacency(xadj.astype(dtype), adjncy.astype(dtype))
    options = pymetis.Options(seed=int(seed), ufactor=ufactor(eps))
    kwargs = {} if w is None else {"vweights": w.astype(dtype)}
    with captured_stdout(said):
        _, membership = pymetis.part_graph(
            int(P), adjacency=adjacency, options=options, recursive=recursive, **kwargs
        )
    return np.asarray(membership, dtype=np.int64)


def balance_remark(
    membership: np.ndarray, P: int, w: np.ndarray | None, eps: float, said: list[str]
) -> str | None:
    """One line on a METIS result that is not what was asked for: parts left empty, the
    heaviest part over twice the allowed ``(1 + eps)`` times the mean weight (of any
    constraint, for (n, ncon) weights), or anything METIS printed (`said`); None when all is
    well."""
    columns = [None] if w is None else [w] if w.ndim == 1 else list(w.T)
    ratio = 0.0
    for col in columns:
        weights = np.bincount(membership, weights=col, minlength=P)
        ratio = max(ratio, float(weights.max() / max(weights.mean(), 1e-300)))
    empty = int((np.bincount(membership, minlength=P) == 0).sum())
    lines = sorted({ln.strip().strip("*").strip() for t in said for ln in t.splitlines()} - {""})
    if not empty and ratio <= 2 * (1 + eps) and not lines:
        return None
    parts = [f"{empty} of {P} parts empty"] if empty else []
    parts.append(f"the heaviest part {ratio:.3g} times the mean weight (asked: {1 + eps:.3g})")
    said_text = f" (METIS: {'; '.join(lines)})" if lines else ""
    return (
        f"METIS's {P}-way partition: {', '.join(parts)}{said_text}; fewer parts or "
        "--partition random balance better"
    )


@contextmanager
def captured_stdout(into: list[str]):
    """File descriptor 1 pointed at a temporary file for the block, its text appended to
    `into`: what a C library prints on stdout ("***Cannot bisect a graph with 0
    vertices!") never reaches the command's stdout (one JSON object with --json)."""
    import tempfile

    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no descriptor 1 (a daemon): nothing to keep clean
        yield
        return
    with tempfile.TemporaryFile() as tmp:
        try:
            os.dup2(tmp.fileno(), 1)
            yield
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            tmp.seek(0)
            into.append(tmp.read().decode(errors="replace"))


def _mtkahypar_graph_partition(
    n: int,
    xadj: np.ndarray,
    adjncy: np.ndarray,
    w: np.ndarray | None,
    P: int,
    eps: float,
    seed: int,
    threads: int | None,
) -> np.ndarray:
    """Mt-KaHyPar's graph mode on a METIS input: cut objective, DETERMINISTIC preset.

    Parameters
    ----------
    n : number of vertices
    xadj, adjncy : the symmetric pattern without loops (both directions of every edge)
    w : int64 (n,) vertex weights, or None for unit weights
    P : number of parts, ``2 <= P <= n``
    eps : allowed imbalance
    seed : 0: partition the vertices as numbered; otherwise in the order of a permutation
        drawn from the seed (the DETERMINISTIC preset does not use Mt-KaHyPar's own seed)
    threads : threads of the process-wide initializer if it is made by this call

    Returns
    -------
    int64 array (n,) of part ids in ``[0, P)``.
    """
    import mtkahypar

    from gcntrain.partition.mtk import mtk_context, mtkahypar_initializer

    # The preset ignores Mt-KaHyPar's seed: a nonzero seed numbers the vertices by a seeded
    # permutation instead (PCG64: the same on every machine), seed 0 keeps the given numbering.
    src = row_ids(xadj)
    upper = src < adjncy  # each undirected edge once
    u, v = src[upper], adjncy[upper]
    new_id = np.arange(n, dtype=np.int64)
    if seed:
        order = np.random.default_rng(int(seed) % 2**64).permutation(n)
        new_id[order] = np.arange(n, dtype=np.int64)
        u, v = new_id[u], new_id[v]
        w = None if w is None else w[order]
    edges = list(zip(u.tolist(), v.tolist()))
    weights = [1] * n if w is None else w.tolist()
    mtk = mtkahypar_initializer(threads)
    ctx = mtk_context(mtkahypar.PresetType.DETERMINISTIC, P, eps, mtkahypar.Objective.CUT)
    mtkahypar.set_seed(int(seed))
    graph = mtk.create_graph(ctx, int(n), len(edges), edges, weights, [1] * len(edges))
    part = np.asarray(graph.partition(ctx).get_partition(), dtype=np.int64)
    return part[new_id]
