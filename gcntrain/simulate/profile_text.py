"""The TOML text of a profile measured by `gcntrain bench` (`gcntrain.simulate.calibrate`),
with the sources of every figure; `gcntrain.simulate.machine.parse_machine` reads it back."""

from __future__ import annotations

import json

from gcntrain.errors import InputError
from gcntrain.simulate.measure import SCALING_WIDTH, SPMM_EDGE_FACTORS

#: the longest profile name `bench --name` takes
NAME_MAX = 100


def toml_string(text: str) -> str:
    """`text` as a TOML basic string: quoted, with ``"``, ``\\`` and control characters
    escaped (JSON's escapes are TOML's), so that no value can end its string early."""
    return json.dumps(str(text), ensure_ascii=False)


def check_name(name: str) -> None:
    """Raise `InputError` for a profile name that is empty, too long or holds a control
    character (checked before anything is measured)."""
    if not name.strip() or len(name) > NAME_MAX or any(ord(c) < 32 or c == "\x7f" for c in name):
        raise InputError(f"--name must be 1-{NAME_MAX} printable characters, got {name!r}")


def measured_by(version: str) -> str:
    """The ``measured_by`` of a profile measured here: gcntrain's `version` and the
    directory it was imported from (a checkout, or an installation's site-packages), so
    that a profile cached for a whole host says which of its checkouts measured it."""
    from pathlib import Path

    import gcntrain

    return f"gcntrain {version} from {Path(gcntrain.__file__).resolve().parent.parent}"


def _table(d: dict, fmt: str = ".4g") -> str:
    return "{ " + ", ".join(f"{k} = {v:{fmt}}" for k, v in d.items()) + " }"


def profile_text(name: str, figs: dict) -> str:
    """A profile from the figures `calibrate` gathered (`figs`: see there)."""
    scales = figs.get("product_scales", (1.0, 1.0))
    mode = "--quick " if figs.get("quick") else ""
    threads = figs.get("threads")
    host = toml_string(figs["host"])[1:-1]  # escaped, for inside the strings and comment
    lines = [
        f"# Measured by `gcntrain bench{' --quick' if mode else ''}` on {host} at {figs['when']}.",
        f"name = {toml_string(name)}",
        f"measured = {toml_string(figs['when'])}",
        f"measured_by = {toml_string(measured_by(figs['version']))}",
        "description = "
        + toml_string(
            f"{figs['host']}: {figs['cores']} cores, measured by gcntrain bench"
            + (" --quick" if mode else "")
        ),
        "sources = [",
        f'  "gcntrain bench {figs["version"]} {mode}on {host}: spmm_csr_dense one '
        f"thread, cold caches, on R-MAT scale {figs.get('spmm_scale', 17)} adjacencies of edge "
        f"factors {list(figs.get('spmm_edge_factors', SPMM_EDGE_FACTORS))}"
        f"{' (cost per row and rate per entry solved apart)' if figs.get('spmm_row_ns') else ''}"
        ", scaled by the "
        f'products timed inside serial epochs (SpMM x{scales[0]:.3g}, GEMM x{scales[1]:.3g})",',
        '  "gcntrain.kernels.dense GEMM (tall-skinny, k x n of 16 to 4096), quantize_blocks + '
        'dequantize_blocks",',
        f'  "thread scaling: spmm_csr_dense (width {SCALING_WIDTH}), dense.matmul, relu_backward '
        "+ dropout_apply_dense at 1, half and all cores, cold caches, in one process "
        "(threads) and in as many one-thread processes at once (node)"
        + (
            "; spmm and gemm above one core as the epochs show them: serial R-MAT "
            f"{figs['scales'][-1]} on that many threads"
            + (
                ", 1d on that many one-thread ranks"
                if figs["epoch_scaling"] == "threads and processes"
                else ""
            )
            if figs.get("epoch_scaling")
            else ""
        )
        + '",',
        f'  "serial gcntrain train on R-MAT scales {figs["scales"]}: element-wise rate; on R-MAT '
        '8 (one thread, every core, and 1d on two one-thread ranks): cost per Ops call",',
        (
            "  \"no mpiexec found: network latency 2 us and a quarter of the node's bandwidth "
            "assumed (one node: inter = intra)"
            if figs.get("no_mpi")
            else '  "mpiexec -n 2 python -m gcntrain.comm.bench: latency per message fitted to '
            "Allreduce, Allgather, Bcast, Reduce-scatter and Alltoall of 8-16 bytes, bandwidth "
            "to those of 1-4 MiB, the eager limit and rendezvous cost to those between, cold "
            "caches, medians (one node: inter = intra); cost per MPI operation: 1d on two "
            "one-thread ranks on R-MAT 8"
        )
        + (
            "; oversubscribed synchronisation: its floor fitted to p2p at twice the cores on "
            "R-MAT 8"
            + (", its growth with compute on R-MAT 12 and 14" if figs.get("slice") else "")
            if figs.get("floor") or figs.get("sync")
            else ""
        )
        + '",',
        f'  "memory: numpy triad on one core {figs["core_gbs"]:.1f} GB/s, Numba triad on '
        f'all {figs["cores"]} cores {figs["node_gbs"]:.1f} GB/s",',
        *([device_source(figs["device"])] if figs.get("device") else []),
        "]",
        "",
        "[node]",
        f"cores = {figs['cores']}",
        f"ranks = {figs['cores']}",
        f"memory_bandwidth_gbs = {figs['node_gbs']:.4g}",
        f"core_bandwidth_gbs = {figs['core_gbs']:.4g}",
        f"oversubscribed_sync_us = {figs.get('sync', 0.0) * 1e6:.4g}",
        f"oversubscribed_slice_us = {figs.get('slice', 0.0) * 1e6:.4g}",
        f"oversubscribed_floor_us = {figs.get('floor', 0.0) * 1e6:.4g}",
        f"memory_gib = {figs.get('memory_gib', 0.0):.4g}",
        "",
        "[network.intra]",
        f"latency_us = {figs['alpha'] * 1e6:.4g}",
        f"bandwidth_gbs = {figs['bandwidth'] / 1e9:.4g}",
        f"eager_bytes = {figs.get('eager', 0.0):.0f}",
        f"rendezvous_us = {figs.get('rendezvous', 0.0) * 1e6:.4g}",
        "",
        "[network.inter]",
        f"latency_us = {figs['alpha'] * 1e6:.4g}",
        f"bandwidth_gbs = {figs['bandwidth'] / 1e9:.4g}",
        f"eager_bytes = {figs.get('eager', 0.0):.0f}",
        f"rendezvous_us = {figs.get('rendezvous', 0.0) * 1e6:.4g}",
        f"injection_gbs = {figs['bandwidth'] * figs['cores'] / 1e9:.4g}",
        "",
        "[compute]",
        "# per core",
        f"spmm_gflops = {_table(figs['spmm'])}",
        *([f"spmm_row_ns = {_table(figs['spmm_row_ns'])}"] if figs.get("spmm_row_ns") else []),
        f"gemm_gflops = {_table(figs['gemm'])}",
        f"quant_gelems = {figs['quant']:.4g}",
        f"other_gelems = {figs['other']:.4g}",
        f"call_overhead_us = {figs['overhead'] * 1e6:.4g}",
        f"call_overhead_all_us = {figs.get('overhead_all', figs['overhead']) * 1e6:.4g}",
        f"mpi_op_us = {figs.get('mpi_op', 0.0) * 1e6:.4g}",
        "",
    ]
    if threads:
        lines += [
            "[compute.threads]",
            "# one process's throughput with T threads over one thread's (T = 1, half, all)",
            *[f"{kind} = {_table(t, '.3f')}" for kind, t in threads.items()],
            "",
        ]
    if figs.get("node_scaling"):
        lines += [
            "[compute.node]",
            "# the node's throughput with T one-thread processes at once over one process's",
            *[f"{kind} = {_table(t, '.3f')}" for kind, t in figs["node_scaling"].items()],
            "",
        ]
    if figs.get("device"):
        lines.append(device_text(figs["device"]))
    return "\n".join(lines)


def device_source(dev: dict) -> str:
    """The ``sources`` line of a measured ``[device]`` table."""
    return (
        f'  "gcntrain bench --device gpu on GPU 0 ({dev["model"]}): cupyx.cusparse.spmm on a '
        f"resident int32 CSR, R-MAT scale {dev.get('spmm_scale', 20)} at edge factors "
        f"{list(SPMM_EDGE_FACTORS)}, cuBLAS GEMM, c = a + b, a one-element kernel and a "
        'synchronisation per call, pinned host <-> device copies of 8 B and 64 MiB",'
    )


def device_text(dev: dict) -> str:
    """The ``[device]`` table of the figures `gcntrain.simulate.measure_gpu.device_figures`
    measured (`gcntrain.simulate.machine.Device` reads it back)."""
    model = str(dev["model"]).replace('"', "'")
    lines = [
        "[device]",
        f'model = "{model}"',
        f"count = {int(dev['count'])}",
        f"memory_gib = {dev['memory_gib']:.4g}",
        f"memory_bandwidth_gbs = {dev['memory_bandwidth_gbs']:.4g}",
        "# per GPU",
        f"spmm_gflops = {_table(dev['spmm'])}",
        *([f"spmm_row_ns = {_table(dev['spmm_row_ns'])}"] if dev.get("spmm_row_ns") else []),
        f"gemm_gflops = {_table(dev['gemm'])}",
        f"other_gelems = {dev['other_gelems']:.4g}",
        f"launch_us = {dev['launch_us']:.4g}",
        "",
        "[device.host_link]",
        f'kind = "{dev.get("link_kind", "pcie")}"',
        f"latency_us = {dev['link_latency_us']:.4g}",
        f"bandwidth_gbs = {dev['link_gbs']:.4g}",
        "",
    ]
    return "\n".join(lines)
