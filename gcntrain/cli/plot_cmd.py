"""`gcntrain plot` (the plot extra: matplotlib): figures of measured runs and of the
simulator's predictions.

gcntrain plot RUN_DIR... -o runs.png            (the default subcommand `runs`)
gcntrain plot breakdown GRAPH -P 64 --machine fugaku -o breakdown.png
gcntrain plot scaling GRAPH --ranks 4,16,64,256 --machine fugaku -o scaling.png
gcntrain plot measured RUN_DIR... --machine local -o measured.png

The figures are drawn by `plot_runs` (runs) and `plot_sim` (from the data `--json` prints).
"""

from __future__ import annotations

import click

from gcntrain import status
from gcntrain.cli.display import count, emit
from gcntrain.cli.options import json_option, model_options, train_config, width_options
from gcntrain.cli.plot_style import save
from gcntrain.errors import InputError


def _draw(out: str, figure) -> None:
    """Make the figure (`figure()`: matplotlib loads here) and save it as `out`, as a named
    phase for the status line."""
    with status.phase(f"drawing {out}"):
        save(figure(), out)


def _out_format(ctx, param, value: str | None) -> str | None:
    """-o FIG: refuse an image format matplotlib cannot write before any work is done."""
    if value is None:
        return None
    from pathlib import Path

    from gcntrain.cli.plot_style import figure_class

    fmt = Path(value).suffix.lstrip(".").lower() or "png"
    if fmt not in figure_class()().canvas.get_supported_filetypes():
        raise InputError(f"--out: unknown image format {fmt!r} (png, pdf, svg, ...)", value)
    from gcntrain.data.atomic import check_output_file

    check_output_file(value, (), "--out")  # a device or a FIFO is refused before any work
    return value


def _out_option(f):
    return click.option(
        "--out",
        "-o",
        default=None,
        type=click.Path(dir_okay=False),
        callback=_out_format,
        help="Image file (.png, .pdf, .svg; written whole or not at all) [default: no "
        "figure, print the data only (no matplotlib needed)].",
    )(f)


def _schemes(names: tuple[str, ...], ranks: int) -> list[str]:
    from gcntrain.schemes import registry

    if names:
        return [registry.get(n, ranks).name for n in names]
    return [n for n, s in registry.SCHEMES.items() if s.uses_mpi or ranks == 1]


def _common(f):
    f = _out_option(f)
    f = click.option(
        "--machine",
        required=True,
        metavar="NAME|PROFILE.toml",
        help="Machine profile (fugaku, abci, local, or a file).",
    )(f)
    return json_option(f)


def _graph_options(f):
    f = width_options(f)
    f = click.option(
        "--scheme",
        "schemes",
        multiple=True,
        help="A scheme to draw (repeatable) [default: every distributed one].",
    )(f)
    return model_options(f)


class DefaultGroup(click.Group):
    """A group whose first argument, when it is not a subcommand (nor help), starts the
    default subcommand: `gcntrain plot runA runB` is `gcntrain plot runs runA runB`."""

    default_command = "runs"

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


@click.group("plot", cls=DefaultGroup)
def plot():
    """Figures of finished runs and of predicted epoch times (matplotlib: pip install
    'gcntrain[plot]').

    `gcntrain plot RUN_DIR... -o fig.png` draws `train -o` runs (the `runs` subcommand; a run
    directory named like a subcommand needs `plot runs DIR` or `./DIR`).
    """


@plot.command("breakdown")
@click.argument("graph", required=False, type=click.Path())
@click.option("--ranks", "-P", type=click.IntRange(min=1), required=True, help="Ranks.")
@_graph_options
@_common
def breakdown_cmd(graph, ranks, num_features, num_classes, schemes, machine, out, as_json, **kw):
    """Stacked bars of the predicted epoch of each scheme (default options): compute parts,
    each collective, waiting."""
    from gcntrain.simulate.figures import breakdown
    from gcntrain.simulate.local import load_machine

    config = train_config(kw)
    prof = load_machine(machine)
    rows = breakdown(
        graph,
        config,
        ranks,
        prof,
        _schemes(schemes, ranks),
        num_features=num_features,
        num_classes=num_classes,
    )
    data = {"out": out, "machine": prof.name, "ranks": ranks, "schemes": rows}
    if out:
        from gcntrain.cli.plot_sim import breakdown_figure

        _draw(out, lambda: breakdown_figure(data))
    emit(
        data,
        as_json,
        lambda s: _breakdown_text(rows, ranks, prof.name, out),
    )


def _breakdown_text(rows, ranks, machine, out) -> str:
    lines = [f"predicted epoch on {count(ranks, 'rank')} ({machine}), ms:"]
    for r in rows:
        if "error" in r:
            lines.append(f"  {r['scheme']:<10} refused: {r['error']}")
            continue
        comm = sum(r["comm_parts"].values())
        comp = sum(r["compute_parts"].values())
        lines.append(
            f"  {r['scheme']:<10} {1e3 * r['epoch_seconds']:9.3f}  (compute {1e3 * comp:.3f}, "
            f"communication {1e3 * comm:.3f}, wait {1e3 * r['wait']:.3f})"
        )
    if out:
        lines.append(f"wrote {out}")
    return "\n".join(lines)


@plot.command("scaling")
@click.argument("graph", required=False, type=click.Path())
@click.option(
    "--ranks",
    "ranks_list",
    required=True,
    metavar="P,P,...",
    help="Numbers of ranks, comma-separated.",
)
@_graph_options
@_common
def scaling_cmd(graph, ranks_list, num_features, num_classes, schemes, machine, out, as_json, **kw):
    """Predicted strong scaling: epoch time over P for each scheme (log-log)."""
    from gcntrain.simulate.figures import scaling
    from gcntrain.simulate.local import load_machine

    try:
        ps = sorted({int(x) for x in ranks_list.split(",") if x.strip()})
    except ValueError:
        raise InputError(f"--ranks must be comma-separated integers, got {ranks_list!r}") from None
    if not ps or ps[0] < 1:
        raise InputError("--ranks needs positive integers")
    config = train_config(kw)
    prof = load_machine(machine)
    points, confs = scaling(
        graph,
        config,
        ps,
        prof,
        _schemes(schemes, max(ps)),
        num_features=num_features,
        num_classes=num_classes,
    )
    data = {"out": out, "machine": prof.name, "points": points, "configurations": confs}
    if out:
        from gcntrain.cli.plot_sim import scaling_figure

        _draw(out, lambda: scaling_figure(data))
    emit(data, as_json, lambda s: _scaling_text(points, confs, ps, prof.name, out))


def _scaling_text(points, confs, ps, machine, out) -> str:
    from gcntrain.cli.plot_style import config_label

    lines = [f"predicted epoch time (ms) on {machine}; - where the scheme refuses P"]
    lines.append(f"  {'P':<10}" + "".join(f"{p:>11}" for p in ps))
    for name, pts in points.items():
        cells = "".join(f"{'-' if t is None else f'{1e3 * t:.3f}':>11}" for _, t in pts)
        lines.append(f"  {name:<10}{cells}")
    lines.append("configurations:")
    lines.extend(f"  {config_label(name, confs[name])}" for name in points)
    if out:
        lines.append(f"wrote {out}")
    return "\n".join(lines)


@plot.command("measured")
@click.argument("runs", nargs=-1, required=True, type=click.Path())
@click.option(
    "--nodes", type=click.IntRange(min=1), default=None, help="Nodes the runs used [default: one]."
)
@_common
def measured_cmd(runs, nodes, machine, out, as_json):
    """Predicted vs measured median epoch time of finished `train -o DIR` runs."""
    from gcntrain.simulate.figures import measured
    from gcntrain.simulate.local import load_machine

    prof = load_machine(machine)
    rows = [measured(r, prof, nodes=nodes) for r in runs]
    data = {"out": out, "machine": prof.name, "runs": rows}
    if out:
        from gcntrain.cli.plot_sim import measured_figure

        _draw(out, lambda: measured_figure(data))
    emit(
        data,
        as_json,
        lambda s: (
            "\n".join(
                f"{r['run']}: {r['scheme']} on {count(r['ranks'], 'rank')}: measured "
                f"{r['measured_epoch_seconds'] * 1e3:.2f} ms, predicted "
                f"{r['predicted_epoch_seconds'] * 1e3:.2f} ms ({r['error_percent']:+.1f}%)"
                for r in rows
            )
            + (f"\nwrote {out}" if out else "")
        ),
    )


@plot.command("runs")
@click.argument("runs", nargs=-1, required=True, type=click.Path())
@_out_option
@click.option(
    "--machine",
    default=None,
    metavar="NAME|PROFILE.toml",
    help="Add the simulator's prediction of each run beside its measured epoch "
    "(fugaku, abci, local, or a file).",
)
@click.option(
    "--nodes",
    type=click.IntRange(min=1),
    default=None,
    help="Nodes the runs used, for --machine [default: one].",
)
@json_option
def runs_cmd(runs, out, machine, nodes, as_json):
    """Finished `train -o DIR` runs: epoch time by phase (median steady epoch), loss and
    accuracy curves, strong scaling where one graph and scheme ran at several rank counts,
    and with --machine the simulator's prediction beside each measured epoch."""
    from gcntrain.cli.plot_runs import load_run, run_figure, scaling_groups, summary

    loaded = [load_run(r) for r in runs]
    predictions = None
    prof_name = None
    if machine is not None:
        from gcntrain.simulate.figures import measured
        from gcntrain.simulate.local import load_machine

        prof = load_machine(machine)
        prof_name = prof.name
        predictions = {r.path: measured(r.path, prof, nodes=nodes) for r in loaded}
    rows = [summary(r, predictions and predictions[r.path]) for r in loaded]
    groups = scaling_groups(loaded)
    if out:
        _draw(out, lambda: run_figure(loaded, predictions, prof_name))
    emit(
        {"out": out, "machine": prof_name, "runs": rows, "scaling": groups},
        as_json,
        lambda s: _runs_text(rows, groups, prof_name, out),
    )


def _runs_text(rows, groups, machine, out) -> str:
    lines = []
    for r in rows:
        b = r["breakdown"]
        parts = ", ".join(f"{k} {1e3 * b[k]:.2f}" for k in b)
        old = ""
        if r["breakdown_source"] != "epoch_breakdown":
            old = " (t_* fields: run predates epoch_breakdown)"
        lines.append(
            f"{r['run']}: {r['graph']}, {r['scheme']} on {count(r['ranks'], 'rank')}, "
            f"{count(r['epochs'], 'epoch')}"
        )
        ms = 1e3 * r["epoch_seconds"]
        crit = "" if r["critical_rank"] is None else f", critical rank {r['critical_rank']}"
        lines.append(f"  median steady epoch {r['median_epoch']}: {ms:.2f} ms{crit}")
        lines.append(f"  by phase, ms: {parts}{old}")
        fin = ", ".join(
            f"{k.replace('_', ' ')} {v:.4f}" for k, v in r["final"].items() if v is not None
        )
        lines.append(f"  last epoch: {fin}")
        if "predicted_epoch_seconds" in r:
            lines.append(
                f"  predicted on {machine}: {1e3 * r['predicted_epoch_seconds']:.2f} ms "
                f"({r['error_percent']:+.1f}%)"
            )
    for g in groups:
        pts = ", ".join(f"{count(p, 'rank')} {1e3 * t:.2f} ms" for p, t, _ in g["points"])
        lines.append(f"strong scaling, {g['graph']} {g['scheme']}: {pts}")
    if out:
        lines.append(f"wrote {out}")
    return "\n".join(lines)
