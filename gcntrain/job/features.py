"""The raw node features of a run, let go of once the trainer holds its prepared copy.

`gcntrain.model.trainer.fit` casts and row-normalises the features into a copy of its own;
the `LocalGraph`'s raw ones are then needed only by a run that measures its drift after
training (`gcntrain.job.drift.measure_drift`).  `raw_features` hands them over to the trainer
and drops the `LocalGraph`'s reference otherwise, so that the raw copy is freed as soon as the
prepared one exists; `counted_bytes` is what they add to the held data as loaded, which
`gcntrain.job.runner.held_data` goes on counting.
"""

from __future__ import annotations


def keeps_raw(scheme, scheme_config) -> bool:
    """Whether the run needs the raw node features after training (`measure_drift`
    prepares them again for an approximate configuration)."""
    view = getattr(scheme, "training_view", None)
    return view is not None and not scheme.is_exact(scheme_config)


def counted_bytes(ops, local) -> int:
    """Bytes that `local.features` add to the data this rank holds (`held_bytes` over the
    Ops and `local`, with and without them: 0 where the Ops share their buffer), what
    `gcntrain.job.runner.held_data` goes on counting once the `LocalGraph` let go of them
    (the trainer holds a prepared copy of the same shape; the plan's estimate of the held
    data, `simulate`'s, counts the features as loaded)."""
    from gcntrain.comm.communicator import Comm
    from gcntrain.schemes.base import Scratch
    from gcntrain.schemes.held import held_bytes

    feats = local.features
    if feats is None:
        return 0
    skip = (Comm, Scratch)
    whole = held_bytes(ops, local, skip=skip)
    local.features = None
    try:
        return whole - held_bytes(ops, local, skip=skip)
    finally:
        local.features = feats


def raw_features(scheme, scheme_config, local):
    """`local.features` for the trainer, which keeps its own prepared (cast, normalised)
    copy: the `LocalGraph` lets go of the raw ones, so that they are freed once prepared,
    unless the run needs them after training (`keeps_raw`)."""
    feats = local.features
    if not keeps_raw(scheme, scheme_config):
        local.features = None
    return feats
