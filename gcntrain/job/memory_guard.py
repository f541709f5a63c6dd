"""The memory guard: refuse, before loading or allocating, a rank whose share cannot fit.

`rank_bytes` is a deliberately low estimate (the largest terms only) of what one rank
allocates to train: its rows of the graph (adjacency entries as int64 columns and float64
values, features), the parameters with Adam's two moments and a gradient (the whole
parameters: most schemes replicate W), and the activations kept for the backward pass (the
rank's rows times the sum of the layer widths, a few copies).  `check_rank` compares it with
the memory available to the rank (the node's available memory divided by the ranks sharing
it) or with ``--max-memory``, and refuses with both figures in one line.  Being low, it
refuses only runs that cannot fit; a run it admits may still need more.
"""

from __future__ import annotations

import numpy as np

from gcntrain.data.memory import available_bytes, check_fits
from gcntrain.schemes.protocol import GraphMeta, LoadRequest

#: copies of each parameter: weights, Adam's two moments, the gradient
PARAM_COPIES = 4
#: copies of the widest activations kept or made per layer (Z, H, dropout, the gradient)
ACTIVATION_COPIES = 3


def request_rows(req: LoadRequest) -> tuple[int, int]:
    """(adjacency rows, node rows) a rank reads."""
    if req.ids is not None:
        rows = int(np.asarray(req.ids).size)
        return rows, rows
    adj = int(req.rows[1] - req.rows[0])
    node = adj if req.node_rows is None else int(req.node_rows[1] - req.node_rows[0])
    return adj, node


def rank_bytes(meta: GraphMeta, req: LoadRequest, widths: list[int], itemsize: int) -> float:
    """The low estimate of the module docstring for one rank."""
    adj, node = request_rows(req)
    n = max(int(meta.n), 1)
    share = adj / n
    if req.entries is not None:
        entries = float(np.asarray(req.entries).size)
    else:
        cols = 1.0 if req.cols is None else (req.cols[1] - req.cols[0]) / n
        entries = float(meta.nnz) * share * cols
    fcols = meta.num_features
    if req.features is not None:
        fcols = req.features[1] - req.features[0]
    graph = entries * 16.0 + node * fcols * 4.0
    model = PARAM_COPIES * param_count(widths) * itemsize
    acts = ACTIVATION_COPIES * node * sum(widths[1:]) * itemsize
    return graph + model + acts


def param_count(widths: list[int]) -> int:
    """Weights and biases of a model of these layer widths."""
    return sum(a * b + b for a, b in zip(widths[:-1], widths[1:]))


def _hint(ways: list[str], itemsize: int) -> str:
    """The ways out, joined with "or": ``--dtype float32`` only for a run in float64
    (`itemsize` 8), where halving the values is a way out at all."""
    if itemsize > 4:
        ways = [*ways, "--dtype float32"]
    return ", ".join(ways[:-1]) + " or " + ways[-1] if len(ways) > 1 else ways[0]


def memory_limit(ranks_on_node: int, max_memory: float | None, per: str):
    """(bytes, where the figure comes from) one of `ranks_on_node` processes may use:
    ``--max-memory``, else the node's available memory divided among them (`per`: how the
    share is said, with ``{k}`` for their number); None where the available memory is
    unknown."""
    if max_memory is not None:
        return float(max_memory), "--max-memory"
    have = available_bytes()
    if have is None:
        return None
    k = max(int(ranks_on_node), 1)
    return have / k, "available memory" + (per.format(k=k) if k > 1 else "")


def check_rank(
    meta: GraphMeta,
    req: LoadRequest,
    widths: list[int],
    itemsize: int,
    ranks_on_node: int,
    max_memory: float | None = None,
) -> None:
    """`InputError` (one line) when this rank's estimate exceeds its memory."""
    got = memory_limit(ranks_on_node, max_memory, " per rank ({k} ranks on the node)")
    if got is None:
        return
    limit, source = got
    check_fits(
        rank_bytes(meta, req, widths, itemsize),
        "training this rank's share (graph rows, parameters with Adam's moments, activations)",
        limit=limit,
        hint=_hint(["use more ranks", "a smaller --hidden"], itemsize),
        source=source,
    )


def check_planning(
    widths: list[int], itemsize: int, ranks_on_node: int, max_memory: float | None = None
) -> None:
    """`InputError` (one line) when planning a job (``--scheme auto``'s search, `simulate`)
    cannot fit: the plan records one whole model in every planning process, so its
    parameters with Adam's moments and a gradient must fit a process's memory (the node's
    available memory divided by the `ranks_on_node` processes planning at once, or
    ``--max-memory``)."""
    got = memory_limit(ranks_on_node, max_memory, " per process ({k} on the node)")
    if got is None:
        return
    limit, source = got
    params = param_count(widths)
    check_fits(
        PARAM_COPIES * params * itemsize,
        f"the model ({params:,} parameters, with Adam's moments and a gradient)",
        limit=limit,
        hint=_hint(["a smaller --hidden"], itemsize),
        source=source,
    )
