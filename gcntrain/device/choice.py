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

#: whether ``--device gpu`` may train on a GPU: the serial and 1d schemes' loops run on
#: device arrays (issue 37), written against CuPy but never run on a GPU (docs/gpu.md), so
#: not by default: a user's allocation hours do not go to unchecked code.  The GPU check
#: runs it with ``GCNTRAIN_DEVICE=unchecked-gpu`` (`unchecked_gpu_requested`).
TRAINING_ON_GPU = False

#: whether ``--device auto`` picks a GPU: not until the GPU path has run on one (issue 37);
#: until then ``auto`` trains on the CPU and says why
AUTO_ON_GPU = False

#: the test hook (not a user option): ``GCNTRAIN_DEVICE=emulated`` makes ``--device gpu``
#: train on the host emulation of a device (`gcntrain.device.emulated`, strict), so that the
#: device path runs end to end through the CLI on a machine without a GPU
TEST_DEVICE_VAR = "GCNTRAIN_DEVICE"

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
    #: GPUs on the node (``kind == "gpu"``), to choose a rank's
    devices: int = 0


def emulated_requested(env: Mapping[str, str] = os.environ) -> bool:
    """Whether the test hook `TEST_DEVICE_VAR` asks for the emulated device."""
    return env.get(TEST_DEVICE_VAR, "").strip() == "emulated"


def unchecked_gpu_requested(env: Mapping[str, str] = os.environ) -> bool:
    """Whether `TEST_DEVICE_VAR` lets ``--device gpu`` train on a real GPU before the GPU
    check has passed (``unchecked-gpu``: the check's own runs)."""
    return env.get(TEST_DEVICE_VAR, "").strip() == "unchecked-gpu"


def resolve_for_run(requested: str, env: Mapping[str, str] = os.environ) -> DeviceChoice:
    """`resolve_device` of this process: ``cpu`` probes nothing; ``gpu`` under the test hook
    (`TEST_DEVICE_VAR`) is ``DeviceChoice("emulated")``; otherwise CuPy is probed (and a
    GPU trains only under ``unchecked-gpu``)."""
    if requested == "gpu" and emulated_requested(env):
        return DeviceChoice("emulated")
    if requested == "cpu":
        return resolve_device(requested, None)
    from gcntrain.device import detect

    allowed = TRAINING_ON_GPU or unchecked_gpu_requested(env)
    return resolve_device(requested, detect.probe(), training_on_gpu=allowed)


def resolve_device(
    requested: str,
    probe,
    training_on_gpu: bool = TRAINING_ON_GPU,
    auto_on_gpu: bool = AUTO_ON_GPU,
):
    """The `DeviceChoice` of ``--device requested`` given what `probe` found.

    Parameters
    ----------
    requested : ``"cpu"``, ``"gpu"`` or ``"auto"``.
    probe : a `gcntrain.device.detect.GpuProbe` (or None for ``cpu``: not probed).
    training_on_gpu : whether the training loop can run on a GPU (`TRAINING_ON_GPU`).
    auto_on_gpu : whether ``auto`` may choose a usable GPU (`AUTO_ON_GPU`).

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
    if requested == "gpu" and not training_on_gpu:
        why = (
            "the device training loop has not been checked on a GPU yet (issue 37; "
            f"{TEST_DEVICE_VAR}=unchecked-gpu runs it unchecked)"
        )
        raise InputError(f"--device gpu: {probe.devices} GPU(s) found, but {why}")
    if requested == "auto" and not (training_on_gpu and auto_on_gpu):
        why = "the GPU training loop has never run on a GPU (issue 37)"
        return DeviceChoice(
            "cpu", f"--device auto: {probe.devices} GPU(s) found, but {why}; training on the CPU"
        )
    note = None if requested == "gpu" else f"--device auto: training on {probe.devices} GPU(s)"
    return DeviceChoice("gpu", note, int(probe.devices))


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
