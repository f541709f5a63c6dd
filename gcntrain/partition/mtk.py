"""The process-wide Mt-KaHyPar initializer, shared by the hypergraph partitioner and the
METIS fallback (`gcntrain.partition.metis`): Mt-KaHyPar may be initialised once per
process (a second `mtkahypar.initialize` warns), with the thread count of the first use."""

from __future__ import annotations

import os

_state = {"mtk": None, "threads": 0}


def default_threads() -> int:
    """``NUMBA_NUM_THREADS`` when set (the rank's thread count), else the node's cores."""
    v = os.environ.get("NUMBA_NUM_THREADS")
    return int(v) if v else (os.cpu_count() or 1)


def mtkahypar_initializer(threads: int | None = None):
    """The process-wide Mt-KaHyPar initializer (created on first use with `threads`)."""
    if _state["mtk"] is None:
        import mtkahypar

        _state["threads"] = int(threads or default_threads())
        _state["mtk"] = mtkahypar.initialize(_state["threads"], False)
    return _state["mtk"]


def initializer_threads() -> int:
    """Threads of the process-wide initializer (0: not created yet)."""
    return _state["threads"]


def mtk_context(preset, P: int, eps: float, objective, threads: int | None = None):
    """A quiet Mt-KaHyPar context of `preset` (a ``mtkahypar.PresetType``) for `P` parts,
    imbalance `eps` and `objective` (a ``mtkahypar.Objective``), from the process-wide
    initializer (`threads`: its threads where this call creates it)."""
    ctx = mtkahypar_initializer(threads).context_from_preset(preset)
    ctx.set_partitioning_parameters(int(P), float(eps), objective)
    ctx.logging = False
    return ctx
