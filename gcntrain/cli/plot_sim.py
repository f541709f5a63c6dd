"""The figures of `gcntrain plot breakdown / scaling / measured`, each drawn from the data
its command prints with ``--json`` (so a saved ``--json`` output draws the same figure).

Each axes is labelled (``Axes.get_label()``) ``breakdown``, ``scaling`` or ``measured``.
"""

from __future__ import annotations

from pathlib import Path

from gcntrain.cli import plot_style as style
from gcntrain.cli.display import count


def _config_lines(row: dict) -> str:
    """The scheme, its swept options and its partition, one per line (a bar's tick)."""
    lines = [row["scheme"]]
    if row.get("options"):
        lines.append(style.options_text(row["options"]))
    if row.get("partition"):
        lines.append(f"{row['partition']} partition")
    return "\n".join(lines)


def breakdown_figure(data: dict):
    """Stacked bars of each scheme's predicted epoch (`plot breakdown --json`: ``schemes``,
    ``ranks``, ``machine``); refused schemes are left out; a part that is zero for every
    scheme is neither drawn nor in the legend."""
    from gcntrain.cli.plot_runs import phase_color, phase_order

    ok = [r for r in data["schemes"] if "error" not in r]
    parts = phase_order(k for r in ok for k in (*r["compute_parts"], *r["comm_parts"]))
    fig = style.new_figure(1.3 * len(ok) + 4.0, 4.5)
    ax = fig.add_subplot(label="breakdown")
    x = list(range(len(ok)))
    bottom = [0.0] * len(ok)
    for part in [*parts, "wait"]:
        h = [
            1e3
            * (
                r["wait"]
                if part == "wait"
                else r["compute_parts"].get(part, r["comm_parts"].get(part, 0.0))
            )
            for r in ok
        ]
        if any(h):
            ax.bar(x, h, 0.6, bottom=bottom, label=part, color=phase_color(part))
            bottom = [b + v for b, v in zip(bottom, h)]
    ax.set_xticks(x, [_config_lines(r) for r in ok], fontsize=7)
    ax.set_ylabel("predicted epoch time (ms)")
    ax.set_title(f"predicted epoch, {count(data['ranks'], 'rank')} on {data['machine']}")
    handles, labels = ax.get_legend_handles_labels()
    style.legend_beside(
        ax, handles[::-1], labels[::-1], title="top of the stack first", title_fontsize=7
    )
    return fig


def scaling_figure(data: dict):
    """Predicted epoch time over P per scheme, log-log (`plot scaling --json`: ``points``,
    ``configurations``, ``machine``).  Each label names the scheme's options and partition;
    schemes with equal points are drawn nested (`plot_style.nested`) and labelled "(equal to
    X)"."""
    fig = style.new_figure(10.0, 4.8)
    ax = fig.add_subplot(label="scaling")
    confs = data.get("configurations") or {}
    series, names = [], []
    for name, pts in data["points"].items():
        got = [(p, 1e3 * t) for p, t in pts if t is not None]
        if got:
            series.append(got)
            names.append(name)
    first, exact = style.coinciding(series, log=True)
    sizes = style.nested(first)
    for i, (name, got) in enumerate(zip(names, series)):
        width, msize = sizes[i]
        label = style.config_label(name, confs.get(name, []))
        ax.plot(
            [p for p, _ in got],
            [t for _, t in got],
            color=f"C{i % 10}",
            marker=style.marker(i),
            linewidth=width,
            markersize=msize,
            label=style.equal_label(label, first[i], exact[i], names),
        )
    style.rank_axis(ax, [p for pts in data["points"].values() for p, _ in pts])
    style.plain_log_y(ax)
    ax.set_ylabel("predicted epoch time (ms)")
    ax.set_title(f"predicted strong scaling on {data['machine']}")
    style.legend_beside(ax)
    return fig


def measured_figure(data: dict):
    """Measured beside predicted epoch time of finished runs (`plot measured --json`:
    ``runs``, ``machine``)."""
    rows = data["runs"]
    fig = style.new_figure(1.4 * len(rows) + 4.0, 4.5)
    ax = fig.add_subplot(label="measured")
    x = list(range(len(rows)))
    ax.bar(
        [i - 0.2 for i in x],
        [1e3 * r["measured_epoch_seconds"] for r in rows],
        0.4,
        color="#4d4d4d",
        label="measured",
    )
    pred = [1e3 * r["predicted_epoch_seconds"] for r in rows]
    ax.bar(
        [i + 0.2 for i in x],
        pred,
        0.4,
        color="white",
        edgecolor="#4d4d4d",
        hatch="//",
        label=f"predicted ({data['machine']})",
    )
    for i, (r, p) in enumerate(zip(rows, pred)):
        ax.annotate(
            f"{r['error_percent']:+.0f}%", (i + 0.2, p), ha="center", va="bottom", fontsize=8
        )
    names = [
        f"{Path(r['run']).name or r['run']}\n{_config_lines(r)}, np {r['ranks']}" for r in rows
    ]
    ax.set_xticks(x, names, fontsize=7)
    ax.margins(y=0.12)  # room for the percentages
    ax.set_ylabel("median epoch time (ms)")
    ax.set_title("predicted vs measured epoch")
    style.legend_beside(ax)
    return fig
