"""The device of a training run (``train --device``, docs/gpu.md): the verdict, what the
device path does not cover, and each rank's backend, chosen once before loading.

`gcntrain.job.runner` calls these; with ``--device cpu`` none of them runs and
`gcntrain.device` is not imported.
"""

from __future__ import annotations

import inspect

import numpy as np

from gcntrain.comm.agree import agree
from gcntrain.errors import InputError


def resolve(world, requested: str):
    """One `gcntrain.device.choice.DeviceChoice` on every rank (`resolve_for_run`; an
    `InputError` on any rank is one line and exit 2 on every rank)."""
    from gcntrain.device import choice

    return agree(world, lambda: choice.resolve_for_run(requested))


def runs_on_device(scheme) -> bool:
    """Whether `scheme`'s setup takes a device backend (``setup(..., backend=)``)."""
    return "backend" in inspect.signature(scheme.setup).parameters


def check_supported(chosen, scheme, options: dict, size: int) -> None:
    """Refuse, before loading, what a run on the device of `chosen` cannot do: a scheme
    whose Ops are not ported, or a scheme option value its device Ops do not cover (the
    scheme's `options` on `size` ranks: what its ``device_unsupported(config)`` names);
    `InputError`, the same on every rank, so no agreement is needed.  Every training
    option runs on the device (`gcntrain.model.trainer.fit`: LayerNorm, label propagation;
    a checkpoint copies the state to the host once, a resume loads it to the device)."""
    if chosen.kind == "cpu":
        return
    what = []
    if not runs_on_device(scheme):
        what.append(f"--scheme {scheme.name}")
    else:
        limits = getattr(scheme, "device_unsupported", None)
        if limits is not None:
            what += limits(scheme.configure(size, dict(options or {})))
    if what:
        raise InputError(
            f"--device gpu: not on the device yet (issue 37): {', '.join(what)}; use --device cpu"
        )


def backend_for(world, chosen, per_node: int):
    """This rank's backend (None on the CPU), made once under one agreement: the
    node-local rank's GPU (`gcntrain.device.choice.gpu_for_rank`), or the strict host
    emulation under the test hook; `direct` (device buffers handed to MPI unstaged) where
    every rank's MPI library is CUDA-aware (`every_rank`)."""
    if chosen.kind == "cpu":
        return None
    from gcntrain.device import choice
    from gcntrain.device.backend import EmulatedBackend, select_backend
    from gcntrain.device.mpi import cuda_aware

    def make():
        aware = cuda_aware(world.MPI)[0] == "yes"
        if chosen.kind == "emulated":
            return EmulatedBackend(strict=True), aware
        mine = choice.local_rank(world.rank, per_node)
        gpu = choice.gpu_for_rank(mine, per_node, chosen.devices)
        return select_backend("gpu", gpu), aware

    backend, aware = agree(world, make)
    backend.direct = every_rank(world, aware)
    return backend


def every_rank(world, yes: bool) -> bool:
    """Whether `yes` holds on every rank of `world` (one Allreduce(min), phase
    ``control``, before training): the CUDA-aware verdict (`gcntrain.device.mpi.cuda_aware`
    says ``"yes"``, ``GCNTRAIN_CUDA_AWARE_MPI=0|1`` overriding the detection) is direct only
    where every rank says yes; ``"no"`` or ``"unknown"`` anywhere stages."""
    if world.size == 1:
        return bool(yes)
    every = world.allreduce(np.array([int(yes)], dtype=np.int64), "control", op="min")
    return bool(every[0])
