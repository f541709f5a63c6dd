"""`gcntrain bench`: measure this machine and write its profile for `simulate --machine`
(to ``-o``, else stdout; never to the ``--machine local`` cache, `gcntrain.simulate.local`)."""

from __future__ import annotations

import click

from gcntrain.cli.display import info


@click.command("bench")
@click.option(
    "-o",
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Profile file to write (TOML; written to a temporary name, then renamed) "
    "[default: stdout]. Never this host's cached `--machine local` profile, which only "
    "`--machine local` writes.",
)
@click.option(
    "--name",
    default=None,
    help="The profile's name, as `simulate` and `plot` print it [default: the -o file's "
    "name without its suffix, else this host's name].",
)
@click.option(
    "--quick",
    is_flag=True,
    help="The short calibration behind `--machine local` (about 15 s on an idle machine, "
    "20-35 s on a busy one): smaller operands, fewer widths, shorter serial runs.",
)
@click.option(
    "--mpiexec",
    default=None,
    metavar="PATH",
    help="MPI launcher for the communication figures [default: the one beside this Python, "
    "else on PATH].",
)
@click.option(
    "--device",
    type=click.Choice(["cpu", "gpu"]),
    default="cpu",
    show_default=True,
    help="gpu: also measure GPU 0 with CuPy (cuSPARSE SpMM, cuBLAS GEMM, element-wise, "
    "launch, host <-> device copies) into the profile's [device] table, for `simulate "
    "--device gpu`; never run on a GPU yet (docs/gpu.md).",
)
def bench(out, name, quick, mpiexec, device):
    """Calibrate a machine profile on this machine (memory bandwidth, kernel rates and their
    thread scaling with the project's own kernels, MPI latency and bandwidth, element-wise
    and per-call costs of serial training) in at most a minute on an idle machine; use it
    with `gcntrain simulate --machine OUT`.  Writes OUT (or stdout) only: this host's
    cached `--machine local` profile is left as it is."""
    import platform
    import sys
    from pathlib import Path

    from gcntrain.data.atomic import check_output_file, write_text
    from gcntrain.simulate.calibrate import calibrate
    from gcntrain.simulate.profile_text import check_name, profile_text

    if name is not None:
        check_name(name)  # before the minute of measuring
    if device == "gpu":
        _check_gpu()
    if out is not None:
        check_output_file(out, (), "-o")
    if name is None:
        name = Path(out).stem if out is not None else (platform.node() or "local")
    text, figs = calibrate(name, mpiexec, log=info, quick=quick)
    if device == "gpu":  # pragma: no cover - needs a GPU (docs/gpu.md: never run)
        from gcntrain.simulate.measure_gpu import device_figures

        figs["device"] = device_figures(quick, log=info)
        text = profile_text(name, figs)
    if out is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
        return
    write_text(Path(out), text)
    info(f"wrote {out}")


def _check_gpu() -> None:
    """Refuse ``bench --device gpu`` in one line (exit 2) before measuring anything where
    CuPy or a usable GPU is missing."""
    from gcntrain.device.detect import probe
    from gcntrain.errors import InputError

    found = probe()
    if not found.usable:
        hint = "" if found.cupy_found else " (pip install 'gcntrain[gpu]')"
        raise InputError(f"bench --device gpu: {found.error}{hint}")
