"""A small Python API for notebooks and scripts: build graphs, train, simulate.

Every function here is a thin layer over the code the command line runs:

- the graph constructors assemble a `Graph` with the converters' own functions
  (`gcntrain.data.formats.common.graph_from_coo`, `gcntrain.data.convert.apply_options`
  for ``symmetrize`` / ``self_loops``) and check it with the graph store's validation
  (`gcntrain.data.store.normalize_graph`, `validate_graph`);
- `train` calls `gcntrain.schemes.runner.run_training` with the `TrainConfig` and the
  scheme arguments that `gcntrain train` builds (`gcntrain.cli.options.train_config`,
  `scheme_args`), from keyword arguments named after the command's options;
- `simulate` calls the planner `gcntrain simulate` calls
  (`gcntrain.simulate.run.plan_training`, `simulation_summary`, `time_summary`).

Keyword arguments are the command-line options with dashes as underscores (``--weight-decay``
is ``weight_decay``); their defaults, accepted values and checks are those of the options
themselves, read from the click commands. docs/api.md has a worked example.
"""

from __future__ import annotations

import difflib
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import click
import numpy as np
import scipy.sparse as sp

from gcntrain.data.graph import Graph
from gcntrain.errors import AgreedError, InputError
from gcntrain.jsonutil import to_json

__all__ = [
    "Result",
    "graph_from_arrays",
    "graph_from_networkx",
    "graph_from_scipy",
    "load_graph",
    "save_graph",
    "simulate",
    "train",
]

#: names of the node masks, in the order `masks` takes them as a sequence
SPLITS = ("train", "val", "test")

#: `gcntrain train` options `train` takes besides the model and scheme options (click names)
_RUN_KEYS = (
    "out_dir",
    "per_rank",
    "threads",
    "machine",
    "checkpoint",
    "checkpoint_every",
    "resume",
    "max_memory",
    "quiet",
)
#: `gcntrain simulate` options `simulate` takes besides the model and scheme options
_SIMULATE_KEYS = (
    "num_features",
    "num_classes",
    "nodes",
    "ranks_per_node",
    "per_rank",
    "sweep",
)

MaskLike = np.ndarray | Iterable[int] | None


# --------------------------------------------------------------------------- graphs


def _index_or_mask(value: MaskLike, n: int, split: str) -> np.ndarray | None:
    """A bool mask of `n` nodes from a bool mask or an integer array of node indices."""
    if value is None:
        return None
    a = np.asarray(value)
    if a.dtype == np.bool_:
        if a.shape != (n,):
            raise InputError(f"{split} mask has shape {a.shape}, expected ({n},)")
        return a.copy()
    if a.size == 0:
        return np.zeros(n, dtype=bool)
    if a.ndim != 1 or not np.issubdtype(a.dtype, np.integer):
        raise InputError(
            f"{split} must be a bool mask of {n} nodes or an array of node indices, got "
            f"{a.dtype} of shape {a.shape}"
        )
    if int(a.min()) < 0 or int(a.max()) >= n:
        bad = int(a[(a < 0) | (a >= n)][0])
        raise InputError(f"{split} index {bad} is out of range for {n} nodes")
    m = np.zeros(n, dtype=bool)
    m[a] = True
    return m


def _split_masks(
    n: int,
    masks: Mapping[str, MaskLike] | tuple | list | None,
    train: MaskLike,
    val: MaskLike,
    test: MaskLike,
) -> dict[str, np.ndarray | None]:
    given = {"train": train, "val": val, "test": test}
    if masks is not None:
        if isinstance(masks, Mapping):
            unknown = sorted(set(masks) - set(SPLITS))
            if unknown:
                raise InputError(
                    f"unknown mask name(s) {', '.join(unknown)} (known: {', '.join(SPLITS)})"
                )
            items = dict(masks)
        else:
            if len(masks) != 3:
                raise InputError(f"masks must be (train, val, test), got {len(masks)} arrays")
            items = dict(zip(SPLITS, masks))
        for k, v in items.items():
            if given[k] is not None:
                raise InputError(f"the {k} split is given twice (in masks and as {k}=)")
            given[k] = v
    return {k: _index_or_mask(v, n, k) for k, v in given.items()}


def _assemble(
    rows: np.ndarray,
    cols: np.ndarray,
    values: np.ndarray | None,
    n: int,
    *,
    features,
    labels,
    masks,
    train,
    val,
    test,
    num_classes: int | None,
    name: str,
    symmetrize: bool,
    self_loops: str,
    source: str,
) -> Graph:
    """The shared end of every constructor: CSR by the converters' functions, node data,
    the structural options, the store's dtypes and validation."""
    from gcntrain.data import preprocess
    from gcntrain.data.convert import apply_options
    from gcntrain.data.formats.common import graph_from_coo
    from gcntrain.data.store import normalize_graph, validate_graph

    if self_loops not in preprocess.SELF_LOOP_MODES:
        raise InputError(
            f"unknown self-loop mode '{self_loops}' "
            f"(known: {', '.join(preprocess.SELF_LOOP_MODES)})"
        )
    if features is not None:
        features = features.toarray() if sp.issparse(features) else np.asarray(features)
        if features.ndim == 1:
            features = features[:, None]
        if features.dtype.kind not in "biuf":
            raise InputError(f"features must be numbers, got dtype {features.dtype}")
        features = np.ascontiguousarray(features, dtype=np.float32)
    if labels is not None:
        labels = np.asarray(labels)
        if labels.dtype.kind not in "iu":
            raise InputError(f"labels must be integers (-1: unlabeled), got dtype {labels.dtype}")
        labels = labels.astype(np.int64)
    split = _split_masks(n, masks, train, val, test)
    g = graph_from_coo(
        rows,
        cols,
        values,
        n,
        name=name,
        features=features,
        labels=labels,
        train_mask=split["train"],
        val_mask=split["val"],
        test_mask=split["test"],
        num_classes=num_classes,
    )
    g = apply_options(g, symmetrize=symmetrize, self_loops=self_loops, extra={"source": source})
    g = normalize_graph(g)
    validate_graph(g, f"graph '{g.name}'")
    return g


def _values(values, m: int) -> np.ndarray | None:
    if values is None:
        return None
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if v.shape[0] != m:
        raise InputError(f"edge values have {v.shape[0]} entries for {m} edges")
    return v.astype(np.float32)


def graph_from_arrays(
    src: Iterable[int],
    dst: Iterable[int],
    num_nodes: int | None = None,
    *,
    values: Iterable[float] | None = None,
    features=None,
    labels=None,
    masks=None,
    train: MaskLike = None,
    val: MaskLike = None,
    test: MaskLike = None,
    num_classes: int | None = None,
    name: str = "graph",
    symmetrize: bool = False,
    self_loops: str = "keep",
) -> Graph:
    """A `Graph` from an edge list: edge ``k`` is the entry (row ``src[k]``, column
    ``dst[k]``), as one line of a SNAP or CSV edge list.

    Parameters
    ----------
    src, dst : integer arrays (m,)
        Node ids in ``0..num_nodes-1``; repeated pairs are merged (largest value).
    num_nodes : int, optional
        Number of nodes; default the features' or labels' rows, else the largest id + 1.
    values : float array (m,), optional
        Edge values; default none (a pattern: every entry is 1).
    features : (n, f) array or scipy sparse matrix, optional
        Node features (stored as float32).
    labels : integer array (n,), optional
        Node classes, -1 for unlabeled.
    masks : {"train": ..., "val": ..., "test": ...} or (train, val, test), optional
        The splits, each a bool mask of n nodes or an integer array of node indices.
    train, val, test : optional
        The same, one split at a time.
    num_classes : int, optional
        Default: the largest label + 1.
    name : str
        The graph's name (summaries, the HDF5 file).
    symmetrize : bool
        Replace A by the pattern of A + Aᵀ (``gcntrain convert --symmetrize``).
    self_loops : {"keep", "add", "drop"}
        Diagonal entries, as ``gcntrain convert --self-loops``.

    Returns
    -------
    Graph
        Sorted, duplicate-free CSR with the graph file's dtypes, validated.

    Raises
    ------
    InputError
        An id out of range, arrays of different lengths, a bad mask or label
        (`FormatError` from the store's checks).
    """
    rows = np.asarray(list(src) if not hasattr(src, "__len__") else src).reshape(-1)
    cols = np.asarray(list(dst) if not hasattr(dst, "__len__") else dst).reshape(-1)
    if rows.shape != cols.shape:
        raise InputError(f"src has {rows.shape[0]} entries but dst has {cols.shape[0]}")
    for a, what in ((rows, "src"), (cols, "dst")):
        if a.size and a.dtype.kind not in "iu":
            raise InputError(f"{what} must hold integer node ids, got dtype {a.dtype}")
    if num_nodes is None:
        for a in (features, labels):
            if a is not None:
                num_nodes = int(a.shape[0] if sp.issparse(a) else np.shape(a)[0])
                break
    if num_nodes is None:
        hi = max(int(rows.max(initial=-1)), int(cols.max(initial=-1)))
        num_nodes = hi + 1
    if num_nodes < 1:
        raise InputError(f"a graph needs at least one node, got num_nodes = {num_nodes}")
    return _assemble(
        rows.astype(np.int64),
        cols.astype(np.int64),
        _values(values, rows.shape[0]),
        int(num_nodes),
        features=features,
        labels=labels,
        masks=masks,
        train=train,
        val=val,
        test=test,
        num_classes=num_classes,
        name=name,
        symmetrize=symmetrize,
        self_loops=self_loops,
        source="arrays",
    )


def graph_from_scipy(
    adj,
    features=None,
    labels=None,
    masks=None,
    *,
    train: MaskLike = None,
    val: MaskLike = None,
    test: MaskLike = None,
    num_classes: int | None = None,
    name: str = "graph",
    weighted: bool = False,
    symmetrize: bool = False,
    self_loops: str = "keep",
) -> Graph:
    """A `Graph` from a square scipy sparse (or dense numpy) adjacency matrix.

    Every stored nonzero ``adj[u, v]`` is the entry (row u, column v); explicitly stored
    zeros are not edges.

    Parameters
    ----------
    adj : scipy sparse matrix or array (n, n)
    features, labels, masks, train, val, test, num_classes, name, symmetrize, self_loops
        As in `graph_from_arrays`.
    weighted : bool
        Keep the matrix values as edge values (default: the pattern, every edge 1).

    Returns
    -------
    Graph
    """
    A = sp.coo_matrix(adj)
    if A.shape[0] != A.shape[1]:
        raise InputError(f"the adjacency must be square, got shape {A.shape}")
    keep = A.data != 0
    return _assemble(
        A.row[keep].astype(np.int64),
        A.col[keep].astype(np.int64),
        _values(A.data[keep], int(keep.sum())) if weighted else None,
        int(A.shape[0]),
        features=features,
        labels=labels,
        masks=masks,
        train=train,
        val=val,
        test=test,
        num_classes=num_classes,
        name=name,
        symmetrize=symmetrize,
        self_loops=self_loops,
        source="scipy",
    )


def _node_attr(G, nodes: list, attr: str | None, what: str):
    """The values of node attribute `attr` in node order; None when no node has it."""
    if attr is None:
        return None
    data = G.nodes
    have = [attr in data[v] for v in nodes]
    if not any(have):
        return None
    if not all(have):
        missing = nodes[have.index(False)]
        raise InputError(f"node {missing!r} has no {what} attribute '{attr}' (others do)")
    return [data[v][attr] for v in nodes]


def graph_from_networkx(
    G,
    *,
    feature_attr: str | None = "x",
    label_attr: str | None = "y",
    weight_attr: str | None = None,
    masks=None,
    train: MaskLike = None,
    val: MaskLike = None,
    test: MaskLike = None,
    num_classes: int | None = None,
    name: str | None = None,
    self_loops: str = "keep",
) -> Graph:
    """A `Graph` from a networkx graph; node ``k`` is the k-th node of ``G.nodes``.

    An undirected ``G`` gives a symmetric adjacency (each edge in both directions); a
    directed one keeps its directions.

    Parameters
    ----------
    G : networkx.Graph or networkx.DiGraph (multigraphs: parallel edges merge)
    feature_attr : node attribute holding the feature vector (default ``"x"``, as
        ``torch_geometric.utils.to_networkx`` writes it); absent on every node: no features.
    label_attr : node attribute holding the class (default ``"y"``); absent: no labels.
    weight_attr : edge attribute used as the edge value (missing on an edge: 1); default
        none (the pattern).
    masks, train, val, test : the splits, as in `graph_from_arrays` (indices are positions
        in ``G.nodes``).
    num_classes, self_loops : as in `graph_from_arrays`.
    name : default ``G.name`` or ``"graph"``.

    Returns
    -------
    Graph
    """
    nodes = list(G.nodes)
    index = {v: i for i, v in enumerate(nodes)}
    edges = list(G.edges(data=True))
    rows = np.fromiter((index[u] for u, _, _ in edges), dtype=np.int64, count=len(edges))
    cols = np.fromiter((index[v] for _, v, _ in edges), dtype=np.int64, count=len(edges))
    values = None
    if weight_attr is not None:
        values = [float(d.get(weight_attr, 1.0)) for _, _, d in edges]
    feats = _node_attr(G, nodes, feature_attr, "feature")
    labs = _node_attr(G, nodes, label_attr, "label")
    return _assemble(
        rows,
        cols,
        _values(values, len(edges)),
        len(nodes),
        features=None if feats is None else np.asarray(feats, dtype=np.float64),
        labels=None if labs is None else np.asarray(labs),
        masks=masks,
        train=train,
        val=val,
        test=test,
        num_classes=num_classes,
        name=name or getattr(G, "name", "") or "graph",
        symmetrize=not G.is_directed(),
        self_loops=self_loops,
        source="networkx",
    )


def load_graph(path: str | os.PathLike) -> Graph:
    """Read and validate a graph file (`gcntrain.data.store.read_graph`)."""
    from gcntrain.data.store import read_graph

    return read_graph(path)


def save_graph(graph: Graph, path: str | os.PathLike, *, compression: str | None = None) -> None:
    """Write `graph` to an HDF5 graph file, whole or not at all
    (`gcntrain.data.store.write_graph`; `compression`: None, "gzip" or "lzf")."""
    from gcntrain.data.store import write_graph

    write_graph(path, graph, compression=compression)


# --------------------------------------------------------------------------- keywords


def _keyword(p: click.Option) -> str:
    """The keyword of a click option: its longest ``--`` flag with dashes as underscores."""
    longs = [o for o in p.opts if o.startswith("--")]
    return max(longs, key=len)[2:].replace("-", "_") if longs else p.name


def _unknown(fn: str, bad: str, valid: Iterable[str]) -> TypeError:
    valid = sorted(valid)
    near = difflib.get_close_matches(bad, valid, n=3, cutoff=0.6)
    hint = f"did you mean {', '.join(near)}?" if near else f"valid: {', '.join(valid)}"
    return TypeError(f"{fn}() got an unexpected keyword argument '{bad}'; {hint}")


def _hidden(value) -> tuple[str, ...]:
    if isinstance(value, (int, np.integer, str)):
        return (str(value),)
    return tuple(str(v) for v in value)


def _resolve(fn: str, command: click.Command, given: dict, accepted: Iterable[str]) -> dict:
    """The values `command`'s callback would receive for the options `accepted` (click
    names), from keyword arguments named after the options' flags: each given value goes
    through the option's own type (choices, ranges), the others take its default."""
    ctx = click.Context(command)
    accepted = set(accepted)
    params = {
        _keyword(p): p for p in command.params if isinstance(p, click.Option) and p.name in accepted
    }
    for k in given:
        if k not in params:
            raise _unknown(fn, k, params)
    out: dict[str, Any] = {}
    for kw, p in params.items():
        value = given.get(kw)
        if value is None:
            value = p.get_default(ctx)
            if p.multiple and not isinstance(value, (tuple, list)):
                value = ()
        elif p.name == "hidden":
            value = _hidden(value)
        if p.name == "partition" and not isinstance(value, (str, os.PathLike, type(None))):
            out[p.name] = np.asarray(value)  # a partition vector: the runner takes it as is
            continue
        if value is not None and (not p.multiple or value):
            try:
                value = p.type_cast_value(ctx, value)
            except click.BadParameter as e:
                raise InputError(f"{fn}(): bad value for {kw}: {e.format_message()}") from None
        out[p.name] = value
    return out


def _config_and_scheme(fn: str, values: dict):
    """(TrainConfig, scheme, its options, partition, partition seed) as the CLI builds them."""
    from gcntrain.cli.options import scheme_args, train_config

    try:
        config = train_config(values)
    except click.BadParameter as e:
        raise InputError(f"{fn}(): {e.format_message()}") from None
    return (config, *scheme_args(values))


def _model_and_scheme_keys() -> list[str]:
    from gcntrain.cli.options import MODEL_KEYS
    from gcntrain.schemes import registry

    scheme = [name for name, o in registry.all_options().items() if o.cli]
    return [*MODEL_KEYS, "scheme", "partition", "permute", "partition_seed", *scheme]


def _plain(summary: dict) -> dict:
    """The summary exactly as ``--json`` prints it (numpy scalars as Python numbers)."""
    return json.loads(to_json(summary))


# --------------------------------------------------------------------------- training


@dataclass
class Result:
    """What `train` returns.

    Attributes
    ----------
    summary : the dict ``gcntrain train --json`` prints for the same run.
    history : one dict per epoch, the records of ``metrics.jsonl``.
    predictions : int64, the predicted class of each node in node order (one process);
        under a communicator of several ranks, of this rank's rows only (see `rows`).
    rows : int64, the node ids of `predictions` (``arange(n)`` in one process).
    weights : the final parameters, one {name: array} per layer.
    layers : the layers' descriptions (kind, sizes, bias, ...).
    """

    summary: dict
    history: list[dict]
    predictions: np.ndarray
    rows: np.ndarray
    weights: list[dict[str, np.ndarray]]
    layers: list[dict] = field(default_factory=list)

    def history_table(self) -> dict[str, np.ndarray]:
        """The history as columns: {key: array over epochs}.  Nested records (a scheme's
        per-epoch breakdowns) become dotted keys (``epoch_breakdown.dense``); an epoch
        without a value (no evaluation that epoch) is NaN in a float column."""
        flat = [_flatten(rec) for rec in self.history]
        keys: list[str] = []
        for rec in flat:
            keys.extend(k for k in rec if k not in keys)
        table: dict[str, np.ndarray] = {}
        for k in keys:
            col = [rec.get(k) for rec in flat]
            if all(isinstance(v, bool) for v in col):
                table[k] = np.array(col, dtype=bool)
            elif all(isinstance(v, int) and not isinstance(v, bool) for v in col):
                table[k] = np.array(col, dtype=np.int64)
            elif all(v is None or isinstance(v, (int, float)) for v in col):
                table[k] = np.array([np.nan if v is None else v for v in col], dtype=np.float64)
            else:
                table[k] = np.array(col, dtype=object)
        return table


def _flatten(rec: dict, prefix: str = "") -> dict:
    out: dict = {}
    for k, v in rec.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _counted_comm(comm):
    """A gcntrain counted communicator for `comm` (an mpi4py communicator or one already)."""
    if comm is None:
        return None
    from gcntrain.comm.communicator import Comm

    if isinstance(comm, Comm):
        return comm
    if hasattr(comm, "Get_rank") and hasattr(comm, "Get_size"):
        return Comm(comm)
    raise TypeError(f"comm must be an mpi4py communicator, got {type(comm).__name__}")


def _source(graph):
    """What `run_training` and the planner take: None, a path, or a normalised, validated
    `Graph` (as the graph file `gcntrain train` would read)."""
    if isinstance(graph, Graph):
        from gcntrain.data.store import normalize_graph, validate_graph

        g = normalize_graph(graph)
        validate_graph(g, f"graph '{g.name}'")
        return g
    if graph is None or isinstance(graph, (str, os.PathLike)):
        return graph
    raise TypeError(
        "graph must be a gcntrain Graph, a graph file or shard store path, or None "
        f"(the embedded default data set), got {type(graph).__name__}"
    )


def _in_node_order(res, n: int) -> tuple[np.ndarray, np.ndarray]:
    rows = np.asarray(res.rows, dtype=np.int64)
    preds = np.asarray(res.predictions, dtype=np.int64)
    if rows.shape[0] == n and np.array_equal(np.sort(rows), np.arange(n)):
        out = np.empty(n, dtype=np.int64)
        out[rows] = preds[: rows.shape[0]]
        return out, np.arange(n, dtype=np.int64)
    return preds, rows


def train(
    graph: Graph | str | os.PathLike | None = None,
    *,
    scheme: str = "serial",
    epochs: int = 200,
    comm=None,
    callback: Callable[[dict], None] | None = None,
    quiet: bool = True,
    **options,
) -> Result:
    """Train full-batch, as ``gcntrain train`` does, and return the results in memory.

    Parameters
    ----------
    graph : Graph, path or None
        A `Graph` (e.g. from `graph_from_scipy`), a graph file or shard store, or None for
        the embedded default data set.
    scheme : str
        A registered scheme (``serial``, ``1d``, ``2d``, ...; ``auto`` as the CLI). Without
        `comm`, and not under an MPI launcher, the run has one rank: a scheme that cannot
        run on one rank raises `InputError` as ``gcntrain train`` does.
    epochs : int
        Maximum epochs (the CLI's ``--epochs``).
    comm : mpi4py communicator, optional
        Run on every rank of `comm` (e.g. ``MPI.COMM_WORLD`` under ipyparallel or mpiexec);
        every rank must call `train` with the same arguments.
    callback : callable, optional
        Called with each epoch's record (the `metrics.jsonl` fields) after the epoch.
    quiet : bool
        No progress lines on stderr (default; False prints the CLI's lines).
    **options
        Any other option of ``gcntrain train``, dashes as underscores: ``hidden`` (an int,
        a list or "16,32"), ``lr``, ``dropout``, ``weight_decay``, ``model``, ``seed``,
        ``early_stopping``, ``partition``, ``grid``, ``replication``, ``out``,
        ``per_rank``, ``checkpoint``, ``max_memory``, ... with the CLI's defaults.

    Returns
    -------
    Result

    Raises
    ------
    TypeError
        An unknown keyword (the message names the closest valid ones).
    InputError
        A value the CLI would refuse, a graph training cannot use, a diverging run.
    """
    from gcntrain.cli.progress import Progress
    from gcntrain.cli.train_cmd import train as command
    from gcntrain.data.memory import parse_size
    from gcntrain.schemes.runner import run_training

    given = {**options, "scheme": scheme, "epochs": epochs, "quiet": quiet}
    values = _resolve("train", command, given, [*_model_and_scheme_keys(), *_RUN_KEYS])
    config, scheme_name, scheme_opts, partition, partition_seed = _config_and_scheme(
        "train", values
    )
    max_memory = values["max_memory"]
    if max_memory is not None:
        max_memory = parse_size(max_memory)
    progress = None if values["quiet"] else Progress(config.epochs)

    def hook(rec) -> None:
        if progress is not None:
            progress(rec)
        if callback is not None:
            callback(rec.to_dict())

    try:
        res, summary = run_training(
            _source(graph),
            config,
            scheme_name,
            scheme_opts,
            partition,
            partition_seed,
            out_dir=values["out_dir"],
            callback=None if progress is None and callback is None else hook,
            on_start=None if progress is None else progress.start,
            threads=values["threads"],
            per_rank=values["per_rank"],
            comm=_counted_comm(comm),
            machine=values["machine"],
            checkpoint=values["checkpoint"],
            checkpoint_every=values["checkpoint_every"],
            resume=values["resume"],
            max_memory=max_memory,
        )
    except FloatingPointError as e:
        raise InputError(f"training diverged ({e}); try a lower lr") from None
    except AgreedError as e:  # every rank refused the same input (exit status 2 in the CLI)
        if e.status != 2:
            raise
        raise InputError(str(e)) from None
    finally:
        if progress is not None:
            progress.close()
    from gcntrain.model.output import metrics_text

    history = [json.loads(line) for line in metrics_text(res.history).splitlines()]
    summary = _plain(summary)
    predictions, rows = _in_node_order(res, int(summary["num_nodes"]))
    return Result(
        summary=summary,
        history=history,
        predictions=predictions,
        rows=rows,
        weights=res.weights,
        layers=list(res.layers),
    )


# --------------------------------------------------------------------------- simulation


def simulate(
    graph: Graph | str | os.PathLike | None,
    ranks: int,
    *,
    scheme: str = "auto",
    machine: str | os.PathLike | None = None,
    **options,
) -> dict:
    """Plan a ``gcntrain train`` run on `ranks` ranks from this process (no MPI): the dict
    ``gcntrain simulate --json`` prints for the same arguments.

    Parameters
    ----------
    graph : Graph, path or None (the embedded default data set).
    ranks : number of ranks to plan for (``--ranks``).
    scheme : a registered scheme or ``auto`` (as the CLI: ``p2p`` on several ranks, or with
        ``sweep=True`` every scheme).
    machine : a machine profile (``fugaku``, ``abci``, ``local`` or a TOML file): adds the
        predicted epoch time.
    **options
        The other options of ``gcntrain simulate``, dashes as underscores: the model options
        of `train`, the scheme options (``grid``, ``replication``, ``partition``, ...),
        ``features``, ``classes``, ``nodes``, ``ranks_per_node``, ``per_rank``, ``sweep``.

    Returns
    -------
    dict
        With ``sweep=True`` the ``simulate --sweep --json`` object.
    """
    from gcntrain.cli.simulate_cmd import simulate as command
    from gcntrain.simulate.autogrid import rank_grids, wants_auto
    from gcntrain.simulate.run import plan_training, simulation_summary

    given = {**options, "ranks": ranks, "scheme": scheme, "machine": machine}
    keys = [*_model_and_scheme_keys(), "ranks", "machine", *_SIMULATE_KEYS]
    v = _resolve("simulate", command, given, keys)
    config, scheme_name, scheme_opts, partition, seed = _config_and_scheme("simulate", v)
    ranks, machine = v["ranks"], v["machine"]
    source = _source(graph)
    place = None
    if machine is not None:
        from gcntrain.simulate.machine import load_machine
        from gcntrain.simulate.timing import placement

        place = placement(load_machine(machine), ranks, v["nodes"], v["ranks_per_node"])
    elif v["nodes"] is not None or v["ranks_per_node"] is not None:
        raise InputError("nodes and ranks_per_node need a machine profile (machine=...)")
    widths = {"num_features": v["num_features"], "num_classes": v["num_classes"]}
    if v["sweep"]:
        from gcntrain.cli.simulate_cmd import _sweep

        if place is None:
            raise InputError("sweep ranks configurations by predicted time: give machine=...")
        if v["per_rank"] is not None:
            raise InputError("per_rank tables one run; it does not combine with sweep")
        args = (source, config, ranks, place, scheme_name, scheme_opts, partition, seed)
        return _plain(_sweep(*args, widths, True))
    t0 = time.perf_counter()
    args = (source, config, scheme_name, ranks)
    search = None
    if wants_auto(scheme_opts):
        search = rank_grids(*args, scheme_opts, partition, seed, **widths)
        scheme_opts = {**scheme_opts, "grid": search[0]["grid"]}
    sim = plan_training(*args, scheme_opts, partition, seed, **widths)
    if v["per_rank"] is not None:
        from gcntrain.simulate.table import write_table

        write_table(v["per_rank"], sim.table.phases())
    summary = simulation_summary(sim, config, partition, time.perf_counter() - t0)
    if place is not None:
        from gcntrain.simulate.timing import time_summary

        summary.update(time_summary(sim, config, place))
    if v["per_rank"] is not None:
        summary["per_rank"] = str(v["per_rank"])
    if search is not None:
        summary["grid_search"] = search
    return _plain(summary)
