"""The memory guard: refuse, before loading or allocating, a rank whose share cannot fit.

`rank_bytes` is a deliberately low estimate (the largest terms only) of what one rank
allocates to train: its rows of the graph (adjacency entries as int64 columns and float64
values, features), the parameters with Adam's two moments and a gradient (the whole
parameters: most schemes replicate W), and the activations kept for the backward pass (the
rank's rows times the sum of the layer widths, a few copies).  `check_rank` compares it with
the memory available to the rank (the node's available memory divided by the ranks sharing
it) or with ``--max-memory``, and refuses with both figures in one line.  Being low, it
refuses only runs that cannot fit; a run it admits may still need more.

``--max-memory`` bounds a whole process, so against it the need is `PROCESS_BYTES` (what
every process takes before it holds any graph) plus the rank's share, and a refusal names
the two apart (`need_words`): more ranks shrink the share, never the fixed part.  The
node's available memory is measured with the ranks already started, so against it the
need is the share alone.  ``--scheme auto`` holds its candidates to the same bound
(`gcntrain.job.auto`: `process_room`, `no_fit_line`).
"""

from __future__ import annotations

import numpy as np

from gcntrain.data.memory import available_bytes, check_fits, fmt_bytes
from gcntrain.errors import InputError
from gcntrain.schemes.protocol import GraphMeta, LoadRequest

#: copies of each parameter: weights, Adam's two moments, the gradient
PARAM_COPIES = 4
#: copies of the widest activations kept or made per layer (Z, H, dropout, the gradient)
ACTIVATION_COPIES = 3
#: bytes every training process holds before any graph: the interpreter with numpy, scipy,
#: Numba, h5py, mpi4py and gcntrain imported (143 MiB measured on the 2-core development VM,
#: 183-203 MiB at the end of a tiny run; a little less here, as the estimate is low)
PROCESS_BYTES = 128 << 20
#: the fixed part in words
FIXED_WORDS = "fixed per process (the interpreter and its libraries)"


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


def need_words(share: float, share_what: str, limit: float, ways: list[str], itemsize: int):
    """How a process's need under ``--max-memory`` of `limit` bytes splits: (the need in
    bytes, ``"X: F fixed per process (...) and S for <share_what>"``, the ways out).  Where
    the fixed part alone exceeds `limit`, the ways out say that only a larger
    ``--max-memory`` helps (`ways`, the ways out of a large share, shrink only the share)."""
    need = PROCESS_BYTES + share
    split = (
        f"{fmt_bytes(need)}: {fmt_bytes(PROCESS_BYTES)} {FIXED_WORDS} and "
        f"{fmt_bytes(share)} for {share_what}"
    )
    ways_out = "use " + _hint(ways, itemsize)
    if PROCESS_BYTES >= limit:
        ways_out = (
            f"the fixed part alone is more than --max-memory, so no rank count fits: raise "
            f"--max-memory ({_hint(ways, itemsize)} shrink only the share)"
        )
    return need, split, ways_out


def check_rank(
    meta: GraphMeta,
    req: LoadRequest,
    widths: list[int],
    itemsize: int,
    ranks_on_node: int,
    max_memory: float | None = None,
) -> None:
    """`InputError` (one line) when this rank's estimate exceeds its memory: its share, plus
    the fixed `PROCESS_BYTES` under ``--max-memory`` (named apart, `need_words`)."""
    got = memory_limit(ranks_on_node, max_memory, " per rank ({k} ranks on the node)")
    if got is None:
        return
    limit, source = got
    share = rank_bytes(meta, req, widths, itemsize)
    what = "graph rows, parameters with Adam's moments, activations"
    ways = ["more ranks", "a smaller --hidden"]
    if max_memory is None:
        check_fits(
            share,
            f"training this rank's share ({what})",
            limit=limit,
            hint="use " + _hint(ways, itemsize),
            source=source,
        )
        return
    need, split, ways_out = need_words(share, f"its share ({what})", limit, ways, itemsize)
    if need > limit:
        raise InputError(
            f"training this rank needs about {split}, more than the {fmt_bytes(limit)} of "
            f"--max-memory; {ways_out}"
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
