"""Pricing GPU nodes in the simulator (issue 37): a profile's optional ``[device]`` table,
``simulate --device gpu`` (compute at the GPU's rates, every message staged through host
buffers over the host link twice), the shipped ``abci-gpu`` profile, and the refusals.  No
GPU is needed: these are the time model's arithmetic."""

from __future__ import annotations

import re

import numpy as np
import pytest

from gcntrain.comm.exchange import Pairs
from gcntrain.errors import InputError
from gcntrain.model.trainer import TrainConfig
from gcntrain.simulate.compute import compute_seconds, other_seconds
from gcntrain.simulate.local import load_machine
from gcntrain.simulate.machine import on_device, parse_machine
from gcntrain.simulate.placement import Placement
from gcntrain.simulate.profile_text import device_text
from gcntrain.simulate.run import plan_training
from gcntrain.simulate.target import PlanTarget
from gcntrain.simulate.timing import TimeModel, epoch_calls, step_timing
from tests.test_machine import GOOD

DEVICE = """
[device]
model = "test GPU"
count = 2
memory_gib = 16
memory_bandwidth_gbs = 800
spmm_gflops = { 16 = 200.0, 64 = 400.0 }
gemm_gflops = { 16 = 1000.0, 256 = 4000.0 }
other_gelems = 50
launch_us = 7
[device.host_link]
kind = "pcie"
latency_us = 4
bandwidth_gbs = 10
"""


def _gpu(text: str = GOOD + DEVICE):
    return on_device(parse_machine(text, "dev.toml"), "gpu")


def test_device_table_parses_and_older_profiles_have_none():
    assert parse_machine(GOOD, "old").device is None
    m = parse_machine(GOOD + DEVICE, "dev.toml")
    d = m.device
    assert (d.count, d.model, d.link_kind) == (2, "test GPU", "pcie")
    assert d.memory == 16 * 2**30 and d.memory_bandwidth == 800e9
    assert d.launch == pytest.approx(7e-6) and d.other_rate == 50e9 == d.quant_rate
    assert d.host_link.alpha == pytest.approx(4e-6) and d.host_link.beta == pytest.approx(1e-10)
    np.testing.assert_allclose(d.spmm_rate([16, 32, 64, 8]), [200e9, 300e9, 400e9, 100e9])
    np.testing.assert_allclose(d.gemm_rate([16, 64, 256]), [1000e9, 2500e9, 4000e9])
    # the CPU part is untouched by the table; priced on the GPUs, one rank per GPU
    assert m.spmm_rate(16) == 2e9 and not m.on_gpu
    g = on_device(m, "gpu")
    assert g.on_gpu and g.ranks_per_node == 2 and on_device(m, "cpu") is m


@pytest.mark.parametrize(
    "old, new, words",
    [
        ("count = 2", "count = 0", "device.count must be a positive number"),
        ("count = 2", "count = 1.5", "device.count must be an integer"),
        ("memory_gib = 16\n", "", "lacks device.memory_gib"),
        ("spmm_gflops = { 16 = 200.0, 64 = 400.0 }", "", "lacks device.spmm_gflops"),
        ("16 = 200.0", "x = 200.0", "device.spmm_gflops keys must be widths"),
        ("gemm_gflops = { 16 = 1000.0, 256 = 4000.0 }", "gemm_gflops = -1", "device.gemm_gflops"),
        ("launch_us = 7", "launch_us = -7", "device.launch_us must be a number >= 0"),
        ('kind = "pcie"', 'kind = "usb"', "device.host_link.kind must be pcie or nvlink"),
        ("[device.host_link]", "[device.other]", "lacks the table [device.host_link]"),
        ("bandwidth_gbs = 10\n", "", "lacks device.host_link.bandwidth_gbs"),
        ('model = "test GPU"', "model = 3", "device.model must be a string"),
    ],
)
def test_device_table_errors_are_one_line_naming_the_key(old, new, words):
    text = DEVICE.replace(old, new, 1)
    assert text != DEVICE
    with pytest.raises(InputError, match=re.escape(words)) as e:
        parse_machine(GOOD + text, "dev.toml")
    assert "\n" not in str(e.value) and "dev.toml" in str(e.value)


def test_a_profile_without_a_device_is_refused_for_gpu():
    with pytest.raises(InputError, match=r"--device gpu: .*no \[device\] table"):
        on_device(parse_machine(GOOD, "old.toml"), "gpu")


def test_compute_is_the_device_rates_arithmetic():
    place = Placement(2, 2, _gpu())
    # (SpMM nonzeros, SpMM flops, dense flops, dense rows): width 64, k * n = 16
    work = np.array([[1000, 2 * 1000 * 64, 2 * 500 * 16, 500], [10, 2 * 10 * 16, 0, 0]])
    got = compute_seconds(work, np.array([3000.0, 0.0]), place, stream=np.array([8e6, 0.0]))
    np.testing.assert_allclose(got["spmm"], [2 * 1000 * 64 / 400e9, 2 * 10 * 16 / 200e9])
    np.testing.assert_allclose(got["gemm"], [2 * 500 * 16 / 1000e9, 0.0])
    np.testing.assert_allclose(got["quant"], [3000 / 50e9, 0.0])
    np.testing.assert_allclose(got["other"], [8e6 / 800e9, 0.0])
    # four ranks on a node of two GPUs: two ranks take turns on each
    four = compute_seconds(np.vstack([work, work]), np.zeros(4), Placement(4, 4, _gpu()))
    np.testing.assert_allclose(four["spmm"], 2 * np.concatenate([got["spmm"], got["spmm"]]))
    # the epoch's element-wise work at the device's rate, each call the host's one-thread
    # figure plus the device's launch cost
    fp = {"rows": np.array([100.0, 50.0]), "col_fraction": np.array([1.0, 1.0])}
    want = np.array([100.0, 50.0]) * (8 + 16) / 50e9 + 3 * (15e-6 + 7e-6)
    np.testing.assert_allclose(other_seconds(fp, [8, 16], 3, place), want)


def _plan(scheme: str, ranks: int):
    cfg = TrainConfig(hidden=[16], epochs=2, seed=0)
    return plan_training(PlanTarget(None, cfg, scheme, ranks))


def test_a_gpu_plan_computes_at_the_device_rates():
    sim = _plan("1d", 4)
    place = Placement(4, 2, _gpu())
    d = place.machine.device
    calls = epoch_calls(sim)[-1]
    want = {"spmm": np.zeros(4), "gemm": np.zeros(4)}
    for call in calls:
        w = np.asarray(sim.scheme.work(sim.ctx, call), np.float64)
        nnz, sfl, dfl, drows = w.T
        width = np.where(nnz > 0, sfl / np.maximum(2 * nnz, 1), 1.0)
        want["spmm"] += np.where(sfl > 0, sfl / d.spmm_rate(width), 0.0)
        kn = np.where(drows > 0, dfl / np.maximum(2 * drows, 1), np.inf)
        want["gemm"] += np.where(dfl > 0, dfl / d.gemm_rate(kn), 0.0)
    assert want["spmm"].max() > 0 and want["gemm"].max() > 0
    parts = TimeModel(sim, place, [sim.num_features, 16, sim.num_classes]).epoch(calls).parts
    np.testing.assert_allclose(parts["spmm"], want["spmm"], rtol=1e-12)
    np.testing.assert_allclose(parts["gemm"], want["gemm"], rtol=1e-12)


def test_every_message_of_a_gpu_rank_pays_two_host_link_copies():
    """A p2p plan on two nodes of two ranks: each rank's part of an exchange costs, on GPUs,
    what it costs on the CPU links plus two host-link copies of every message (per peer
    two latencies, per byte of its larger direction two host-link byte times)."""
    sim = _plan("p2p", 4)
    cpu = Placement(4, 2, parse_machine(GOOD + DEVICE, "dev.toml"))
    gpu = Placement(4, 2, _gpu())
    assert not cpu.gpu and gpu.gpu
    d = gpu.machine.device
    clock = np.zeros(4)
    seen = 0
    for call in epoch_calls(sim)[-1]:
        for st in sim.scheme.steps(sim.ctx, call):
            if not isinstance(st, Pairs):
                continue
            live = (st.src != st.dst) & (st.nbytes > 0)
            s, t, b = st.src[live], st.dst[live], st.nbytes[live].astype(np.float64)
            extra = np.zeros(4)
            for same in (True, False):
                m = (cpu.node[s] == cpu.node[t]) == same
                sent = np.bincount(s[m], weights=b[m], minlength=4)
                recv = np.bincount(t[m], weights=b[m], minlength=4)
                peers = np.array(
                    [len(set(t[m & (s == r)]) | set(s[m & (t == r)])) for r in range(4)]
                )
                extra += (
                    2 * peers * d.host_link.alpha + 2 * np.maximum(sent, recv) * d.host_link.beta
                )
            _, c_cpu, _ = step_timing(st, cpu, clock)
            _, c_gpu, _ = step_timing(st, gpu, clock)
            np.testing.assert_allclose(c_gpu - c_cpu, extra, rtol=1e-9, atol=1e-15)
            seen += int(live.any())
    assert seen > 0


def test_simulate_device_gpu_keeps_the_counters_and_refuses_without_a_device(tmp_path):
    from gcntrain import api

    prof = tmp_path / "dev.toml"
    prof.write_text(GOOD + DEVICE)
    kw = dict(scheme="1d", epochs=2, machine=str(prof))
    cpu = api.simulate(None, 4, **kw)
    gpu = api.simulate(None, 4, device="gpu", **kw)
    assert (cpu["device"], gpu["device"]) == ("cpu", "gpu")
    for key in ("bytes_sent_max", "bytes_recv_max", "messages_max", "spmm_flops_max"):
        assert gpu[key] == cpu[key]
    assert gpu["ranks_per_node"] == 2 and gpu["epoch_seconds"] != cpu["epoch_seconds"]
    old = tmp_path / "old.toml"
    old.write_text(GOOD)
    with pytest.raises(InputError, match=r"no \[device\] table"):
        api.simulate(None, 4, device="gpu", scheme="1d", machine=str(old))
    with pytest.raises(InputError, match="give --machine"):
        api.simulate(None, 4, device="gpu", scheme="1d")


def test_the_shipped_abci_gpu_profile_loads_with_its_sources():
    m = load_machine("abci-gpu")
    abci = load_machine("abci")
    assert m.name == "abci-gpu" and len(m.sources) >= 5 and all(s.strip() for s in m.sources)
    d = m.device
    assert d.count == 4 and d.link_kind == "pcie" and d.memory == 16 * 2**30
    # the CPU part is the abci profile's
    assert (m.cores, m.spmm_rates, m.inter, m.topology) == (
        abci.cores,
        abci.spmm_rates,
        abci.inter,
        abci.topology,
    )
    assert np.all(d.spmm_rate([16, 64, 256]) > 100 * m.spmm_rate([16, 64, 256]))


def test_a_measured_device_table_reads_back():
    dev = {
        "model": 'GPU "x"',
        "count": 8,
        "memory_gib": 80.0,
        "memory_bandwidth_gbs": 3000.0,
        "spmm": {16: 500.0, 64: 900.0},
        "spmm_row_ns": {16: 0.5, 64: 0.7},
        "gemm": {16: 2000.0, 4096: 40000.0},
        "other_gelems": 200.0,
        "launch_us": 6.0,
        "link_latency_us": 8.0,
        "link_gbs": 25.0,
    }
    d = parse_machine(GOOD + "\n" + device_text(dev), "bench").device
    assert (d.count, d.model, d.memory_bandwidth) == (8, "GPU 'x'", 3000e9)
    np.testing.assert_allclose(d.spmm_row_cost([16, 64]), [0.5e-9, 0.7e-9])
    np.testing.assert_allclose(d.gemm_rate(4096), 40000e9)
    assert d.host_link.beta == pytest.approx(1 / 25e9) and d.launch == pytest.approx(6e-6)
