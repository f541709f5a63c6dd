"""A small Python API for notebooks and scripts: build graphs, train, simulate.

Every function here is a thin layer over the code the command line runs:

- the graph constructors (`gcntrain.data.construct`) assemble a `Graph` with the
  converters' own functions and check it with the graph store's validation;
- `train` calls `gcntrain.job.runner.run_job` with the `TrainConfig` and the
  scheme arguments that `gcntrain train` builds (`gcntrain.job.options.train_config`,
  `scheme_args`), from keyword arguments named after the command's options;
- `simulate` calls what `gcntrain simulate` calls (`gcntrain.job.plan.plan_job`).

Keyword arguments are the command-line options with dashes as underscores (``--weight-decay``
is ``weight_decay``); their defaults, accepted values and checks are those of the options
themselves, read from the same declarations the click commands are built from
(`gcntrain.job.options`). docs/api.md has a worked example.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

import click
import numpy as np

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

from gcntrain.data.construct import (  # noqa: F401 (the API's graph constructors)
    SPLITS,
    graph_from_arrays,
    graph_from_networkx,
    graph_from_scipy,
)

#: the API's wording of the planner's refusals (its keywords, not the command's flags)
_WORDS = {
    "placement": "nodes, ranks_per_node and node_shape need a machine profile (machine=...)",
    "sweep_machine": "sweep ranks configurations by predicted time: give machine=...",
    "sweep_per_rank": "per_rank tables one run; it does not combine with sweep",
    "node_shape": "node_shape",
}


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


def _resolve(fn: str, options: list, given: dict) -> dict:
    """The values the command's callback would receive for the `options` the API takes
    (`gcntrain.job.options.Opt`), from keyword arguments named after the options' flags:
    each given value goes through the option's own type (choices, ranges), the others take
    its default."""
    from gcntrain.job.options import params as option_params

    command = click.Command(fn, params=option_params(options, api_only=True))
    ctx = click.Context(command)
    params = {_keyword(p): p for p in command.params}
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


def _job_spec(fn: str, source, values: dict, **placement):
    """The `JobSpec` the CLI builds from these values (`gcntrain.job.options.job_spec`), a
    bad training value an `InputError` naming `fn`."""
    from gcntrain.job.options import job_spec

    try:
        return job_spec(source, values, **placement)
    except click.BadParameter as e:
        raise InputError(f"{fn}(): {e.format_message()}") from None


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
    """What `run_job` and the planner take: None, a path, or a normalised, validated
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
    from gcntrain.data.memory import parse_size
    from gcntrain.job.options import train_options
    from gcntrain.job.progress import Progress, info
    from gcntrain.job.runner import run_job
    from gcntrain.job.spec import JobOutputs

    given = {**options, "scheme": scheme, "epochs": epochs, "quiet": quiet}
    values = _resolve("train", train_options(), given)
    spec = _job_spec(
        "train", _source(graph), values, machine=values["machine"], threads=values["threads"]
    )
    if values["max_memory"] is not None:  # after the training values, as before
        spec = replace(spec, max_memory=parse_size(values["max_memory"]))
    config = spec.config
    progress = None if values["quiet"] else Progress(config.epochs)

    def hook(rec) -> None:
        if progress is not None:
            progress(rec)
        if callback is not None:
            callback(rec.to_dict())

    if progress is not None:  # the last epoch's line, after the run (`Progress.finish`)
        hook.finish = progress.finish
    try:
        outputs = JobOutputs(
            out_dir=values["out_dir"],
            per_rank=values["per_rank"],
            checkpoint=values["checkpoint"],
            checkpoint_every=values["checkpoint_every"],
            resume=values["resume"],
        )
        res, summary = run_job(
            spec,
            outputs,
            comm=_counted_comm(comm),
            callback=None if progress is None and callback is None else hook,
            on_start=None if progress is None else progress.start,
            notice=None if values["quiet"] else info,
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
        ``features``, ``classes``, ``nodes``, ``ranks_per_node``, ``node_shape`` (a
        torus profile's job box, ``(a, b, c)`` or ``"AxBxC"``), ``per_rank``, ``sweep``.

    Returns
    -------
    dict
        With ``sweep=True`` the ``simulate --sweep --json`` object.
    """
    from gcntrain.job.options import simulate_options
    from gcntrain.job.plan import plan_job

    given = {**options, "ranks": ranks, "scheme": scheme, "machine": machine}
    v = _resolve("simulate", simulate_options(), given)
    spec = _job_spec(
        "simulate",
        _source(graph),
        v,
        machine=v["machine"],
        ranks=v["ranks"],
        nodes=v["nodes"],
        ranks_per_node=v["ranks_per_node"],
        node_shape=v["node_shape"],
        num_features=v["num_features"],
        num_classes=v["num_classes"],
    )
    summary = plan_job(
        spec,
        sweep=v["sweep"],
        per_rank=v["per_rank"],
        quiet=True,
        words=_WORDS,
    )
    return _plain(summary)
