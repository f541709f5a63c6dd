"""The device layer without a GPU: CuPy and GPU detection on fake CuPy modules, the
``--device`` verdicts, a rank's GPU, CUDA-aware MPI detection, and what `gcntrain info`
reports (`gcntrain.device`)."""

from __future__ import annotations

import types

import pytest

from gcntrain.device import choice, detect
from gcntrain.device.mpi import OVERRIDE_VAR, cuda_aware, verdict
from gcntrain.errors import InputError


def fake_cupy(count=2, cc="90", fail_count=None, fail_alloc=False):
    """A module with the parts of CuPy's API `detect.probe` uses."""
    cupy = types.ModuleType("cupy")
    cupy.__version__ = "14.2.0"
    cupy.float32 = "float32"

    def get_count():
        if fail_count:
            raise RuntimeError(fail_count)
        return count

    class Device:
        def __init__(self, i):
            self.compute_capability = cc

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    class Zeros:
        def sum(self):
            if fail_alloc:
                raise RuntimeError("cudaErrorNoKernelImageForDevice: no kernel image\nmore")
            return 0

    runtime = types.SimpleNamespace(
        getDeviceCount=get_count,
        getDeviceProperties=lambda i: {"name": f"NVIDIA H200 #{i}".encode()},
    )
    cupy.cuda = types.SimpleNamespace(runtime=runtime, Device=Device)
    cupy.zeros = lambda n, dtype=None: Zeros()
    return cupy


def importer(module):
    def imp(name):
        if isinstance(module, BaseException):
            raise module
        return module

    return imp


def test_probe_without_cupy_with_a_broken_one_and_with_two_gpus():
    p = detect.probe(importer(ModuleNotFoundError("No module named 'cupy'", name="cupy")))
    assert (p.cupy_found, p.usable, p.error) == (False, False, "CuPy is not installed")
    p = detect.probe(importer(ImportError("libcudart.so.12: cannot open shared object")))
    assert not p.cupy_found and "does not import" in p.error and "libcudart" in p.error
    p = detect.probe(importer(fake_cupy(fail_count="cudaErrorNoDevice: no CUDA-capable")))
    assert p.cupy_found and not p.usable and "no CUDA device" in p.error
    p = detect.probe(importer(fake_cupy(count=0)))
    assert p.cupy_version == "14.2.0" and not p.usable
    p = detect.probe(importer(fake_cupy(fail_alloc=True)))
    assert not p.usable and p.devices == 2 and "\n" not in p.error
    p = detect.probe(importer(fake_cupy(count=2, cc="90")))
    assert p.usable and p.devices == 2 and p.capabilities == ("9.0", "9.0")
    assert p.names == ("NVIDIA H200 #0", "NVIDIA H200 #1") and p.error is None


def test_device_verdicts():
    none = detect.GpuProbe(error="CuPy is not installed")
    broken = detect.GpuProbe("14.2.0", error="CuPy finds no CUDA device")
    two = detect.GpuProbe("14.2.0", 2, ("9.0", "9.0"))
    assert choice.resolve_device("cpu", None) == choice.DeviceChoice("cpu")
    with pytest.raises(InputError, match=r"^--device gpu: CuPy is not installed \(pip install"):
        choice.resolve_device("gpu", none)
    with pytest.raises(InputError, match="no CUDA device$"):
        choice.resolve_device("gpu", broken)
    c = choice.resolve_device("auto", none)
    assert c.kind == "cpu" and c.note.endswith("training on the CPU") and "\n" not in c.note
    # a GPU, but the training loop is not ported: said, never pretended
    with pytest.raises(InputError, match="not been checked on a GPU yet"):
        choice.resolve_device("gpu", two, training_on_gpu=False)
    # auto stays on the CPU until the GPU path has run on a GPU, and says so
    c = choice.resolve_device("auto", two)
    assert c.kind == "cpu" and "never run on a GPU" in c.note
    with pytest.raises(InputError, match="unchecked-gpu runs it unchecked"):
        choice.resolve_device("gpu", two)  # by default: not on unchecked code
    assert choice.resolve_device("gpu", two, training_on_gpu=True) == choice.DeviceChoice(
        "gpu", None, 2
    )
    c = choice.resolve_device("auto", two, training_on_gpu=True, auto_on_gpu=True)
    assert c.kind == "gpu" and "2 GPU" in c.note
    # the test hook: gpu is the emulated device, nothing probed; cpu and auto unchanged
    hook = {choice.TEST_DEVICE_VAR: "emulated"}
    assert choice.resolve_for_run("gpu", hook) == choice.DeviceChoice("emulated")
    assert choice.resolve_for_run("cpu", hook) == choice.DeviceChoice("cpu")
    assert not choice.emulated_requested({choice.TEST_DEVICE_VAR: "gpu"})
    with pytest.raises(InputError):
        choice.resolve_device("tpu", two)


@pytest.mark.parametrize(
    "ranks, devices, expected",
    [
        (1, 8, [0]),
        (4, 8, [0, 1, 2, 3]),
        (8, 8, list(range(8))),
        (8, 4, [0, 0, 1, 1, 2, 2, 3, 3]),
        (3, 2, [0, 0, 1]),
        (16, 1, [0] * 16),
    ],
)
def test_gpu_of_each_local_rank(ranks, devices, expected):
    got = [choice.gpu_for_rank(r, ranks, devices) for r in range(ranks)]
    assert got == expected
    counts = [got.count(d) for d in range(min(ranks, devices))]
    assert max(counts) - min(counts) <= 1  # as even as possible, no GPU left idle


def test_gpu_for_rank_refuses_nonsense():
    with pytest.raises(ValueError):
        choice.gpu_for_rank(0, 2, 0)
    with pytest.raises(ValueError):
        choice.gpu_for_rank(2, 2, 4)


def test_local_rank_from_the_launcher_else_the_block_guess():
    assert choice.local_rank(5, 4, {"MPI_LOCALRANKID": "2"}) == 2
    assert choice.local_rank(5, 4, {"OMPI_COMM_WORLD_LOCAL_RANK": "3"}) == 3
    assert choice.local_rank(5, 4, {"SLURM_LOCALID": "9"}) == 1  # out of range: ignored
    assert choice.local_rank(6, 4, {}) == 2


def test_cuda_aware_verdicts_in_order():
    assert verdict("1", False, 0, False, None) == ("yes", f"{OVERRIDE_VAR}=1")
    assert verdict(None, True, 0, False, None)[0] == "yes"
    assert verdict(None, None, 0, False, None) == ("no", "MPIX_Query_cuda_support() of the library")
    assert verdict(None, None, 1, False, None)[0] == "yes"
    assert verdict(None, None, None, True, "1")[0] == "yes"
    assert verdict(None, None, None, True, None)[0] == "no"
    assert verdict(None, None, None, False, None)[0] == "unknown"
    assert verdict(" ", None, None, False, None)[0] == "unknown"  # empty: not set
    for bad in ("maybe", "2", "true", "yes", "banana"):  # issue 51, item 7
        with pytest.raises(InputError, match=f"{OVERRIDE_VAR} must be 0 .* or 1 .*{bad!r}"):
            verdict(bad, None, None, False, None)


def test_cuda_aware_on_this_mpi_never_raises():
    from gcntrain.comm.mpi import load_mpi

    answer, how = cuda_aware(load_mpi(), {})
    assert answer in ("yes", "no", "unknown") and how
    assert cuda_aware(None, {OVERRIDE_VAR: "0"}) == ("no", f"{OVERRIDE_VAR}=0")
    assert cuda_aware(None, {})[0] == "unknown"


def test_info_reports_cupy_gpus_and_cuda_awareness():
    from gcntrain.cli.info_cmd import device_info

    got = device_info(None, detect.probe(importer(fake_cupy(count=2))))
    assert got["cupy"] == "14.2.0" and got["gpus"] == 2 and got["gpu_available"] is True
    assert got["gpu_devices"][1] == "NVIDIA H200 #1 (compute capability 9.0)"
    assert got["cuda_aware_mpi"] in ("yes", "no", "unknown")
    none = device_info(None, detect.probe(importer(ModuleNotFoundError("x", name="cupy"))))
    assert none["cupy"] is None and none["gpus"] == 0 and none["gpu_error"]


def test_a_real_gpu_trains_only_under_the_unchecked_hook(monkeypatch):
    """With a usable GPU, ``--device gpu`` is refused (the device loop has never been checked
    on a GPU) unless ``GCNTRAIN_DEVICE=unchecked-gpu``, which the GPU check's runs set."""
    two = detect.GpuProbe("14.2.0", 2, ("9.0", "9.0"))
    monkeypatch.setattr(detect, "probe", lambda *a, **k: two)
    with pytest.raises(InputError, match="not been checked on a GPU yet"):
        choice.resolve_for_run("gpu", {})
    hook = {choice.TEST_DEVICE_VAR: "unchecked-gpu"}
    assert choice.resolve_for_run("gpu", hook) == choice.DeviceChoice("gpu", None, 2)
    assert choice.resolve_for_run("auto", hook).kind == "cpu"


def test_info_shows_the_override_and_refuses_a_bad_one(monkeypatch, capsys):
    import json

    from gcntrain.cli.main import run

    monkeypatch.setenv(OVERRIDE_VAR, "1")
    assert run(["info", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert (got["cuda_aware_mpi"], got["cuda_aware_mpi_how"]) == ("yes", f"{OVERRIDE_VAR}=1")
    monkeypatch.setenv(OVERRIDE_VAR, "banana")
    assert run(["info", "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and f"{OVERRIDE_VAR} must be 0" in err
