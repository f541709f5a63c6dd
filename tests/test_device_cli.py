"""``gcntrain train --device``: ``cpu`` is the run as before, ``auto`` without a usable GPU
trains on the CPU and says so in one line, ``gpu`` without one is one line and exit 2 on
every rank (serial and under mpiexec)."""

from __future__ import annotations

import json
import sys

import pytest

from gcntrain.cli.main import run
from gcntrain.data.generate import rmat
from gcntrain.data.store import write_graph
from gcntrain.device import detect

ARGS = ["--epochs", "2", "--seed", "3", "--json", "--dtype", "float64"]

#: this machine's answer (the tests below are about a machine without a usable GPU)
NO_GPU = not detect.probe().usable
needs_no_gpu = pytest.mark.skipif(not NO_GPU, reason="a usable GPU is present")


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    path = tmp_path_factory.mktemp("dev") / "g.h5"
    write_graph(path, rmat(7, edge_factor=4, seed=2, num_features=8, num_classes=3))
    return str(path)


#: the summary's values that do not depend on timing
RESULT = ("final_loss", "train_acc", "val_loss", "val_acc", "test_acc", "epochs", "scheme", "nnz")


def untimed(summary: dict) -> tuple:
    """The summary's keys and its results (times differ between any two runs)."""
    return sorted(summary), [summary[k] for k in RESULT]


@needs_no_gpu
def test_cpu_is_the_default_and_auto_falls_back_saying_so(graph, capsys):
    assert run(["train", graph, *ARGS]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert run(["train", graph, *ARGS, "--device", "cpu"]) == 0
    cap = capsys.readouterr()
    assert untimed(json.loads(cap.out)) == untimed(plain)
    assert "--device" not in cap.err
    assert run(["train", graph, *ARGS, "--device", "auto"]) == 0
    cap = capsys.readouterr()
    assert untimed(json.loads(cap.out)) == untimed(plain)
    lines = [ln for ln in cap.err.splitlines() if "--device" in ln]
    assert len(lines) == 1 and lines[0].endswith("training on the CPU")


@needs_no_gpu
def test_gpu_without_a_gpu_is_one_line_and_exit_2(graph, capsys, tmp_path):
    out = tmp_path / "run"
    assert run(["train", graph, *ARGS, "--device", "gpu", "-o", str(out)]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    errs = [ln for ln in cap.err.splitlines() if ln.strip()]
    assert len(errs) == 1 and errs[0].startswith("gcntrain: error: --device gpu: "), errs
    assert not out.exists()  # nothing written


def test_the_api_takes_device():
    from gcntrain import api
    from gcntrain.errors import InputError

    with pytest.raises(InputError, match="bad value for device"):
        api.train(device="tpu")


@needs_no_gpu
@pytest.mark.mpi
def test_gpu_without_a_gpu_exits_2_on_every_rank(graph, tmp_path):
    from tests.mpi.launch import gcntrain_exe, run_mpi

    exe = " ".join(gcntrain_exe())
    script = (
        f"{exe} train {graph} --scheme 1d --epochs 2 --device gpu; "
        f"echo $? > {tmp_path}/rc.$PMI_RANK"
    )
    res = run_mpi(2, ["sh", "-c", script], timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert sorted(p.read_text().strip() for p in tmp_path.glob("rc.*")) == ["2", "2"]
    errs = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(errs) == 1 and "--device gpu: " in errs[0], errs
    assert "Traceback" not in res.stderr


def test_gpu_under_the_test_hook_runs_on_the_emulated_device_bit_for_bit(
    graph, capsys, monkeypatch
):
    """``GCNTRAIN_DEVICE=emulated`` (docs/gpu.md, a test hook): ``--device gpu`` trains
    through the CLI on the strict host emulation; its results equal the CPU run's bit for
    bit, and the host SpMM is never called."""
    from gcntrain.model import ops as ops_module

    assert run(["train", graph, *ARGS, "--dtype", "float32"]) == 0
    cpu = json.loads(capsys.readouterr().out)
    monkeypatch.setenv("GCNTRAIN_DEVICE", "emulated")

    def host_kernel(*args):
        raise AssertionError("the device run called the host SpMM")

    monkeypatch.setattr(ops_module, "csr_product", host_kernel)
    assert run(["train", graph, *ARGS, "--dtype", "float32", "--device", "gpu"]) == 0
    cap = capsys.readouterr()
    dev = json.loads(cap.out)
    assert untimed(dev) == untimed(cpu)
    assert [dev[k] for k in ("final_loss", "val_loss", "test_acc")] == [
        cpu[k] for k in ("final_loss", "val_loss", "test_acc")
    ]
    # what the device path refuses (a scheme whose setup takes no backend): one line, exit 2,
    # nothing written: tests/test_device_schemes.py


if __name__ == "__main__":  # pragma: no cover
    sys.exit(run(sys.argv[1:]))


@pytest.mark.mpi
@pytest.mark.parametrize("value", ["banana", "true"])
def test_a_bad_cuda_aware_override_exits_2_on_every_rank_of_a_cpu_run(graph, tmp_path, value):
    """Issue 51 item 7: GCNTRAIN_CUDA_AWARE_MPI other than 0/1 is refused on a CPU run too
    (it used to go unread there), at np 3, before anything is read or written."""
    import os

    from tests.mpi.launch import gcntrain_exe, run_mpi

    exe = " ".join(gcntrain_exe())
    out = tmp_path / "out"
    script = (
        f"GCNTRAIN_CUDA_AWARE_MPI={value} {exe} train {graph} --scheme 1d --epochs 2 -o {out}; "
        f"echo $? > {tmp_path}/rc.$PMI_RANK"
    )
    res = run_mpi(3, ["sh", "-c", script], timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    assert sorted(p.read_text().strip() for p in tmp_path.glob("rc.*")) == ["2", "2", "2"]
    errs = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(errs) == 1 and "GCNTRAIN_CUDA_AWARE_MPI must be 0" in errs[0], errs
    assert res.stdout == "" and not os.path.exists(out)
