"""``--device cpu|gpu|auto`` resolved against a probe, and the GPU of a rank.

Pure functions: the probe (`gcntrain.device.detect.probe`) and the node-local rank are
their inputs, so every branch runs in the ordinary tests.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from gcntrain.errors import InputError

#: the values of ``--device``
DEVICES = ("cpu", "gpu", "auto")

#: whether the training loop runs on device arrays yet (issue 37: not in this version; the
#: Ops and the model are still NumPy/Numba only)
TRAINING_ON_GPU = False

#: launcher variables holding a rank's index among the ranks of its node, in the order read
#: (MPICH Hydra, Open MPI, Slurm, Cray PALS)
LOCAL_RANK_VARS = (
    "MPI_LOCALRANKID",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "SLURM_LOCALID",
    "PALS_LOCAL_RANKID",
)


@dataclass(frozen=True)
class DeviceChoice:
    """Where a run computes: ``kind`` ``"cpu"`` or ``"gpu"``, and the one line that says
    why where the request was ``auto`` (None: nothing to say)."""

    kind: str
    note: str | None = None


def resolve_device(requested: str, probe, training_on_gpu: bool = TRAINING_ON_GPU):
    """The `DeviceChoice` of ``--device requested`` given what `probe` found.

    Parameters
    ----------
    requested : ``"cpu"``, ``"gpu"`` or ``"auto"``.
    probe : a `gcntrain.device.detect.GpuProbe` (or None for ``cpu``: not probed).
    training_on_gpu : whether the training loop can run on a GPU (`TRAINING_ON_GPU`).

    Returns
    -------
    DeviceChoice

    Raises
    ------
    InputError
        ``gpu`` without CuPy, without a usable device, or while the training loop cannot run
        on one; an unknown `requested`.
    """
    if requested not in DEVICES:
        raise InputError(f"--device must be one of {', '.join(DEVICES)}, got {requested!r}")
    if requested == "cpu":
        return DeviceChoice("cpu")
    if not probe.usable:
        if requested == "gpu":
            hint = "" if probe.cupy_found else " (pip install 'gcntrain[gpu]')"
            raise InputError(f"--device gpu: {probe.error}{hint}")
        return DeviceChoice("cpu", f"--device auto: {probe.error}; training on the CPU")
    if not training_on_gpu:
        why = "the training loop does not run on a GPU yet (issue 37)"
        if requested == "gpu":
            raise InputError(f"--device gpu: {probe.devices} GPU(s) found, but {why}")
        return DeviceChoice(
            "cpu", f"--device auto: {probe.devices} GPU(s) found, but {why}; training on the CPU"
        )
    return DeviceChoice(
        "gpu", None if requested == "gpu" else f"--device auto: training on {probe.devices} GPU(s)"
    )


def gpu_for_rank(local_rank: int, local_ranks: int, devices: int) -> int:
    """The GPU of the rank `local_rank` of the `local_ranks` ranks of a node with `devices`
    GPUs: one GPU per rank in rank order where there are enough; otherwise consecutive
    ranks share a GPU, as evenly as possible (ranks ``r * devices // local_ranks``).

    Raises
    ------
    ValueError
        A rank outside ``0..local_ranks-1``, or no device.
    """
    if devices < 1:
        raise ValueError("no GPU to choose from")
    if not 0 <= local_rank < local_ranks:
        raise ValueError(f"local rank {local_rank} outside 0..{local_ranks - 1}")
    if local_ranks <= devices:
        return local_rank
    return local_rank * devices // local_ranks


def local_rank(rank: int, local_ranks: int, env: Mapping[str, str] = os.environ) -> int:
    """This rank's index on its node: the launcher's variable (`LOCAL_RANK_VARS`) where one
    is set and valid, else ``rank % local_ranks`` (ranks placed in blocks of
    `local_ranks` per node)."""
    for var in LOCAL_RANK_VARS:
        value = env.get(var, "")
        if value.isdigit() and int(value) < local_ranks:
            return int(value)
    return rank % max(local_ranks, 1)
