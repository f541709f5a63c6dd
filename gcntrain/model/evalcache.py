"""The evaluation's first layer from ``S @ X`` computed once (``TrainConfig.eval_cache``).

Every evaluation pass runs the model forward without dropout.  Its first layer's input is
the prepared feature matrix X, the same in every epoch, so ``A = S @ X`` is the same in
every epoch too: computed once before the first epoch, it leaves the first layer of each
evaluation one dense product, ``A @ W`` (GCN; GraphSAGE adds its ``X @ W_self``), instead
of a graph product and a dense one.  On the 200k-node benchmark graph (128 features,
hidden 16) that is one width-16 SpMM of the six in an epoch
(docs/measurements/epoch-workspace-2026-12-07.md).

Rounding
    A layer that aggregates first (``f_out >= f_in``) computes ``(S X) W`` in every
    evaluation anyway: with the cache its evaluation is the same bit for bit.  A layer that
    multiplies first computes ``S (X W)``; ``(S X) W`` is the same product summed in another
    order, so the evaluation's logits differ in the last bits of the dtype and its losses in
    the last digits (a relative 1e-7 or less of a float32 loss; the mean over thousands of
    nodes: about 1e-12 on the benchmark graph).  The training pass does not use the cache:
    the weights and the training losses are bit for bit those of a run without it; the
    validation loss steers early stopping and ``--keep-best`` only where two epochs' losses
    tie to that rounding.

Memory
    The block is ``rows x f_in`` of the training dtype, held for the run: as much as the
    dense features (102 MB for 200k x 128 float32); CSR features are made dense once while
    it is computed.  `decide` keeps the cache off where that block, the epoch's own blocks
    and the build's temporaries do not fit in the memory left (``--max-memory`` less what
    the process holds, or the available memory).

Where it holds
    Only Ops that say so (``Ops.fixed_products``: `gcntrain.model.ops.SerialOps`, on the host
    and on a device).  A distributed scheme lays out each layer's products for the order the
    layer evaluates in (the 2D, 3D and Plexus layouts place the first layer's input apart
    from its aggregation's when it multiplies first), some keep state across calls (the
    vertex cut's delayed exchanges and the final evaluation's drain), and the simulator
    prices every scheme from one recorded call schedule (`gcntrain.simulate.schedule`): a
    scheme caches only where its aggregation of the input, its traffic and its plan have
    been made to agree.  ``eval_cache`` on such Ops is refused (`InputError`) before the
    first epoch.  The model allows it only where the first layer's input is fixed: label
    propagation adds a learned embedding to it, LayerNorm and BatchNorm rescale it with
    learned parameters; there the cache is off.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gcntrain.data.memory import available_bytes, fmt_bytes
from gcntrain.errors import InputError
from gcntrain.model.phase import Phase

#: the epoch's own node-wise blocks besides the cache, as a multiple of each layer's output
#: width per row (Z, H, a gradient), plus the dropped input: the margin `decide` leaves
EPOCH_COPIES = 3


@dataclass(frozen=True)
class CacheChoice:
    """Whether the run evaluates from a cached ``S @ X``, and why not where it does not.

    Attributes
    ----------
    on : the cache is used
    nbytes : the block's bytes (whether or not it is held)
    why : "" when on, else the reason: one line, what keeps the cache off
    """

    on: bool
    nbytes: int
    why: str = ""


def model_reason(net, config) -> str:
    """Why the model does not allow the cache, in one line ("" where it does): what makes
    the first layer's input change from epoch to epoch."""
    first = net.layers[0]
    if config.label_prop > 0:
        return "label propagation adds a learned embedding to the first layer's input"
    if first.norm:  # "layer" / "batch" (True: LayerNorm, as before BatchNorm came)
        kind = "BatchNorm" if first.norm == "batch" else "LayerNorm"
        return f"{kind} rescales the first layer's input with learned parameters"
    return ""


def _process_bytes() -> int | None:
    """Resident bytes of this process now (None where /proc is not readable)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    import os

    return pages * os.sysconf("SC_PAGE_SIZE")


def room(max_memory: float | None) -> float | None:
    """Bytes this process may still allocate: ``--max-memory`` less its resident bytes, or
    the available memory (None: unknown)."""
    if max_memory is not None:
        held = _process_bytes()
        return None if held is None else float(max_memory) - held
    return available_bytes()


def decide(ops, net, X, config, max_memory: float | None = None) -> CacheChoice:
    """The cache of the run (`CacheChoice`): refused where the Ops cannot cache
    (`InputError`), off where the model changes the first layer's input or the block does
    not fit (module docstring)."""
    first = net.layers[0]
    rows = int(X.shape[0])
    itemsize = np.dtype(config.dtype).itemsize
    nbytes = rows * int(X.shape[1]) * itemsize
    if not getattr(ops, "fixed_products", False):
        raise InputError(
            "--eval-cache needs a scheme that computes its graph products once (one "
            "process: --scheme serial); this one lays them out or exchanges them per call"
        )
    why = model_reason(net, config)
    if why:
        return CacheChoice(False, nbytes, why)
    if ops.compute.device:  # the device's memory is the backend's to count
        return CacheChoice(True, nbytes)
    widths = sum(layer.f_out for layer in net.layers)
    epoch = rows * (first.f_in + EPOCH_COPIES * widths) * itemsize
    build = nbytes if hasattr(X, "tocsr") else 0  # CSR features made dense once
    have = room(max_memory)
    if have is not None and nbytes + build + epoch > have:
        return CacheChoice(
            False,
            nbytes,
            f"S @ X ({fmt_bytes(nbytes)}) and an epoch's blocks ({fmt_bytes(epoch)}) need "
            f"more than the {fmt_bytes(have)} of memory left",
        )
    return CacheChoice(True, nbytes)


def aggregated_input(ops, X):
    """``S @ X`` of the first layer's input (dense, the local block), one graph product
    in the evaluation's phase of the first layer."""
    xp = ops.compute.xp
    dense = X.toarray() if hasattr(X, "toarray") else X
    phase = Phase("aggregate", 0, "fwd", training=False)
    return ops.aggregate(xp.ascontiguousarray(dense), phase=phase)
